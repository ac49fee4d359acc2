"Worked solutions to the exercises of chapter 07b (a real model: reading GGUF)."
import numpy as np


def dequantize_q4_0(block: bytes) -> np.ndarray:
    "The 32 float32 weights of one 18-byte Q4_0 block"
    # the block's first two bytes are its scale, a float16
    d = np.frombuffer(block[:2], dtype=np.float16).astype(np.float32)[0]
    codes = np.frombuffer(block[2:18], dtype=np.uint8)
    # byte j: weight j in its low four bits, weight j + 16 in its high four
    q = np.concatenate([codes & 0x0F, codes >> 4]).astype(np.float32)
    # the codes 0..15 stand for -8..7 steps of d
    return d * (q - 8)


def interleave_rows(w: np.ndarray, num_heads: int) -> np.ndarray:
    "The rows of `w` in llama.cpp's rotary order"
    rows_per_head = w.shape[0] // num_heads
    half = rows_per_head // 2
    order = []
    for h in range(num_heads):
        start = h * rows_per_head
        for i in range(half):
            # row i of the first half, then row i of the second half, side by side
            order += [start + i, start + half + i]
    return w[order]
