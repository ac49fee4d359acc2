"Worked solutions to the exercises of chapter 08 (the engine)."
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


def stream(llm, prompts: list[list[int]], params):
    "Yield (prompt index, token) as each step produces it"
    # every prompt is queued first, so that they run together (iteration-level batching)
    index = {llm.add_request(p, params): i for i, p in enumerate(prompts)}
    seen = dict.fromkeys(index, 0)               # tokens already yielded, per request
    while llm.has_unfinished_requests():
        for out in llm.step():                   # outputs so far of every request that gained a token
            if out.request_id not in index: continue
            tokens = out.outputs[0].token_ids
            for t in tokens[seen[out.request_id]:]: yield index[out.request_id], t
            seen[out.request_id] = len(tokens)


def stop_at_regex(llm, prompt, pattern: str, params):
    "The text generated for `prompt` up to the first match of `pattern` (all of it if none matches)"
    import re
    rx, rid, text = re.compile(pattern), llm.add_request(prompt, params), ''
    while llm.has_unfinished_requests():
        for out in llm.step():
            if out.request_id != rid: continue
            text = out.outputs[0].text                # streamed text: never half a character
            m = rx.search(text)
            if m:
                if not out.finished: llm.abort(rid)      # its blocks go back at once
                while llm.has_unfinished_requests(): llm.step()   # collect the aborted output
                return text[:m.start()]
    return text
