"Worked solutions of chapter 16's exercises"
from minipaged.attention.kv_format import SCALE_BYTES
from minipaged.engine.allocator import blocks_held_at_most


def fp8_saving(head_dim: int, model_bytes: int = 2) -> float:
    "The share of a token's KV bytes that 8-bit pages (codes plus a float32 scale per head) save"
    return max(0.0, 1 - (head_dim + SCALE_BYTES) / (head_dim * model_bytes))


def concurrent(pool_blocks: int, context: int, B: int, W: int | None) -> int:
    "Requests of `context` tokens that fit at once in `pool_blocks` blocks of `B` slots under window `W`"
    return pool_blocks // blocks_held_at_most(1, context, B, W)
