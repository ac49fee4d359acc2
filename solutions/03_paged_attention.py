"Worked solutions to the exercises of chapter 03 (paged attention)."
import math
import torch


def new_token_slots(block_table_row: list, start: int, stop: int, block_size: int) -> list:
    "The slots of positions `start .. stop-1` of a sequence whose pages are `block_table_row`"
    # Position p lives in logical page p // B at offset p % B; the table turns the logical page into a
    # physical block, and a block's first slot is block * B. That is all a slot is.
    return [block_table_row[p // block_size] * block_size + p % block_size for p in range(start, stop)]


def decode_one(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, block_table_row: torch.Tensor,
               context_len: int, scale: float | None = None) -> torch.Tensor:
    "Decode attention of one sequence's query `q [num_q_heads, head_dim]` over its `context_len` cached tokens"
    B, num_kv_heads, head_dim = k_cache.shape[1], k_cache.shape[2], k_cache.shape[3]
    g = q.shape[0] // num_kv_heads                        # query heads per KV head
    scale = 1 / math.sqrt(head_dim) if scale is None else scale
    # Walk the pages in logical order; the last one is cut at the length, so its unwritten tail
    # (NaN in the tests) is never read.
    keys, values = [], []
    for page in range(-(-context_len // B)):
        block, n = int(block_table_row[page]), min(B, context_len - page * B)
        keys.append(k_cache[block, :n]); values.append(v_cache[block, :n])
    k, v = torch.cat(keys).float(), torch.cat(values).float()          # [L, Hkv, d], in float32 like the reference
    # GQA: query head i reads KV head i // g, which is what repeat_interleave along the head axis gives.
    k, v = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)   # [L, Hq, d]
    scores = torch.einsum('hd,lhd->hl', q.float(), k) * scale           # [Hq, L]
    probs = torch.softmax(scores, dim=-1)
    return torch.einsum('hl,lhd->hd', probs, v).to(q.dtype)


def step_slot_mapping(block_tables: torch.Tensor, context_lens: torch.Tensor, q_lens: torch.Tensor, block_size: int,
                      pad_to: int | None = None) -> torch.Tensor:
    "The int64 slot mapping of the packed new tokens (the last `q_lens[i]` of each sequence), then -1 to `pad_to`"
    lens = context_lens.long()
    q_lens = torch.as_tensor(q_lens, device=lens.device).long()
    # Which sequence each packed token belongs to, and its index among that sequence's new tokens:
    seq = torch.repeat_interleave(torch.arange(lens.numel(), device=lens.device), q_lens)
    first = torch.cumsum(q_lens, 0) - q_lens                            # each sequence's first packed row
    j = torch.arange(seq.numel(), device=lens.device) - first[seq]
    # The new tokens are the last q_len positions: position = context_len - q_len + j.
    pos = (lens - q_lens)[seq] + j
    # The slot formula, block_table[p // B] * B + p % B, for every token at once.
    slots = block_tables.long()[seq, pos // block_size] * block_size + pos % block_size
    if pad_to is not None and pad_to > slots.numel():
        slots = torch.cat([slots, slots.new_full((pad_to - slots.numel(),), -1)])
    return slots
