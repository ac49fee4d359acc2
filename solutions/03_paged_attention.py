"Worked solutions to the exercises of chapter 03 (paged attention)."
import math
import torch
# Exercise 1 (build it): the worked solution is the library's own paged decode, chapter 03's reference.
from minipaged.attention.reference import paged_decode_attention


def new_token_slots(block_table_row: list, start: int, stop: int, block_size: int) -> list:
    "The slots of positions `start .. stop-1` of a sequence whose pages are `block_table_row`"
    # Position p lives in logical page p // B at offset p % B; the table turns the logical page into a
    # physical block, and a block's first slot is block * B. That is all a slot is.
    return [block_table_row[p // block_size] * block_size + p % block_size for p in range(start, stop)]


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
