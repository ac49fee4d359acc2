"Worked solutions to the exercises of chapter 07a (the model over pages)."
import torch
from minipaged.attention.backend import AttentionMetadata
from minipaged.model.causal_lm import allocate_model_cache, single_sequence_metadata


def layer_parameters(cfg) -> int:
    "The parameters of one decoder layer of `cfg`, counted from the shape"
    s = cfg.shape
    h, q, kv = s.hidden_size, s.num_q_heads * s.head_dim, s.num_kv_heads * s.head_dim
    # attention: q, k, v project hidden -> heads; o projects the query heads back (no bias on o)
    attention = h * q + 2 * h * kv + q * h
    if s.attention_bias: attention += q + 2 * kv          # Qwen2: biases on q, k and v
    # SwiGLU: gate and up widen to intermediate_size, down narrows back
    mlp = 3 * h * s.intermediate_size
    # two RMSNorm weights of one value per hidden dimension
    return attention + mlp + 2 * h


@torch.no_grad()
def paged_greedy(model, prompt: list[int], max_tokens: int, block_table: list[int], block_size: int) -> list[int]:
    "`max_tokens` greedy tokens after `prompt`, computed through the paged cache"
    # a cache big enough for every block the table names
    cache = allocate_model_cache(model.config, max(block_table) + 1, block_size)
    # the prefill: every prompt token's K/V lands in its slot; only the last row's logits matter
    meta = single_sequence_metadata(block_table, 0, len(prompt), block_size)
    hidden = model(torch.tensor(prompt), meta, cache)
    token = int(model.compute_logits(hidden[-1:])[0].argmax())
    out = [token]
    # each decode step computes one position: the token chosen last, reading all earlier K/V from the pages
    while len(out) < max_tokens:
        pos = len(prompt) + len(out) - 1
        meta = single_sequence_metadata(block_table, pos, 1, block_size)
        hidden = model(torch.tensor([token]), meta, cache)
        token = int(model.compute_logits(hidden)[0].argmax())
        out.append(token)
    return out


def batch_metadata(block_tables: list[list[int]], starts: list[int], num_new: list[int],
                   block_size: int) -> AttentionMetadata:
    "The `AttentionMetadata` of several sequences packed in this order"
    pos, slots, cu = [], [], [0]
    for table, start, n in zip(block_tables, starts, num_new):
        p = list(range(start, start + n))
        pos += p
        # a position's slot: its block (through the table) times the block size, plus its offset
        slots += [table[i // block_size] * block_size + i % block_size for i in p]
        cu.append(cu[-1] + n)
    width = max(map(len, block_tables))
    tables = [t + [0] * (width - len(t)) for t in block_tables]      # the padding is never read
    # the leading one-token sequences are the decodes
    num_decodes = next((i for i, n in enumerate(num_new) if n != 1), len(num_new))
    i32, i64 = torch.int32, torch.int64
    return AttentionMetadata(positions=torch.tensor(pos, dtype=i64), slot_mapping=torch.tensor(slots, dtype=i64),
                             block_tables=torch.tensor(tables, dtype=i32),
                             context_lens=torch.tensor([s + n for s, n in zip(starts, num_new)], dtype=i32),
                             cu_seqlens_q=torch.tensor(cu, dtype=i32), max_q_len=max(num_new),
                             num_decodes=num_decodes)
