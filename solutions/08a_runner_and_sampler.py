"Worked solutions to the exercises of chapter 08a (the runner and the sampler)."
import torch


def ban_tokens(banned: list[int]):
    "A logits processor that gives the `banned` token ids -inf"
    idx = torch.tensor(list(banned), dtype=torch.long)
    def process(token_ids, logits):
        # index_fill (not index_fill_) returns a new tensor: the logits handed in stay as they were
        return logits.index_fill(0, idx.to(logits.device), float('-inf'))
    return process


def min_p_processor(min_p: float):
    "A logits processor that keeps the tokens at least `min_p` times as likely as the top one"
    def process(token_ids, logits):
        # softmax is shift-invariant, so the rule does not depend on the logits' offset
        p = torch.softmax(logits, -1)
        # the top token has p == p.max() >= min_p * p.max() for any min_p <= 1: it always stays
        return logits.masked_fill(p < min_p * p.max(), float('-inf'))
    return process
