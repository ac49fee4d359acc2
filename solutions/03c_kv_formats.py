"Worked solutions to the exercises of chapter 03c (fewer bytes per token)."
import torch
from minipaged.attention.kv_format import window_start

def e4m3_value(bits: int) -> float:
    "The number the float8 e4m3fn byte `bits` (0..255) encodes"
    sign = -1.0 if bits & 0x80 else 1.0
    exponent, significand = (bits >> 3) & 0xF, bits & 0x7
    # e4m3fn keeps no infinities: of the top exponent only the all-ones significand is taken, as NaN
    if exponent == 0xF and significand == 0x7: return float('nan')
    # exponent field 0: subnormal, no implicit leading one, the smallest normal's exponent (1 - bias = -6)
    if exponent == 0: return sign * 2.0**-6 * significand / 8
    return sign * 2.0**(exponent - 7) * (1 + significand / 8)

def first_page(n: int, W: int, B: int) -> int:
    "The first page a decode at context length `n` reads, with a window `W` and pages of `B` slots"
    # one new token (q_len 1) at position n - 1: its first key is window_start, on page window_start // B
    return int(window_start(torch.tensor([n]), torch.tensor([1]), W)) // B
