"Worked solutions to the exercises of chapter 02b (where the rounding error comes from)."
import math
import numpy as np
from minipaged.attention.error_bound import attention_error_bound
from minipaged.attention.softmax import attention_test_inputs

def ulp_distance(a, b):
    "The number of float32 steps between finite float32 `a` and `b`, elementwise (+0 and -0 are one point)"
    def ordered(x):
        # Read the bits as a signed integer. For x >= 0 the pattern grows with x, one per float. For x < 0 the
        # sign bit makes the int32 negative; its low 31 bits are |x|'s pattern, so -(bits & 0x7FFFFFFF) puts
        # the negative floats on the same integer line, mirrored, with -0 landing on 0 like +0.
        bits = np.asarray(x, np.float32).view(np.int32).astype(np.int64)
        return np.where(bits < 0, -(bits & 0x7FFFFFFF), bits)
    return np.abs(ordered(a) - ordered(b))

def largest_safe_scale(dtype, accum_dtype='float32', target: float = 0.1, block_size: int = 16) -> float:
    "The largest factor on the random family's queries for which the bound stays within `target * max|v|`"
    q, k, v, _ = attention_test_inputs('random', seed=0)
    limit = target * np.abs(v).max()
    def safe(c):
        return attention_error_bound(c * q, k, v, block_size, dtype=dtype, accum_dtype=accum_dtype) <= limit
    lo, hi = 1e-3, 1e3
    assert safe(lo) and not safe(hi), 'the answer is not between 1e-3 and 1e3'
    # Bisection on a log scale: safe(lo) holds and safe(hi) does not, all the way down; stop at 0.1%.
    while hi / lo > 1.001:
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if safe(mid) else (lo, mid)
    # The bound's main term is e^(2 (2u) A) with A proportional to c, so the safe c scales like 1/u:
    # float16 (u = 2^-11) allows about 2^3 = 8 times bfloat16's (u = 2^-8).
    return lo

def round_to_bits(x, p: int) -> np.ndarray:
    "float64 `x` rounded to `p` significand bits, to nearest, ties to even"
    # x = m * 2^e with 0.5 <= |m| < 1 (and m = 0 for x = 0). m * 2^p lies in [2^(p-1), 2^p): its integer
    # part has exactly p bits. np.rint rounds it to the nearest integer, halves to even; scaling back by
    # 2^(e - p) is exact. A carry to 2^p is fine: that is the next power of two, still p bits.
    m, e = np.frexp(np.asarray(x, np.float64))
    return np.ldexp(np.rint(np.ldexp(m, p)), e - p)
