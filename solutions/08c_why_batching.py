"Worked solutions to the exercises of chapter 08c (why batching helps decode)."
from minipaged.accounting.floor import decode_step_bytes, decode_step_flops
from minipaged.accounting.shape import weight_bytes
from minipaged.utils import check_positive

def kv_outweighs_weights(shape, context: int) -> int:
    "The smallest batch whose decode step reads more KV bytes than weight bytes"
    # B sequences read B · context · k bytes of KV; the smallest B with B · ck > W is W // ck + 1 (an exact
    # multiple of ck only ties with the weights, it does not outweigh them).
    check_positive('context', context)
    return weight_bytes(shape) // (context * shape.kv_bytes_per_token) + 1

def compute_bound_batch(shape, context: int, bytes_per_s: float, flops_per_s: float) -> int | None:
    "The smallest batch whose decode step takes at least as long computing as reading, or None"
    # Computing minus reading is linear in the batch: flops(B)/F - bytes(B)/bw = B·a - W/bw, with `a` each
    # sequence's compute time less its KV's read time. If a <= 0 no batch gets there (the KV grows as fast as
    # the arithmetic); else the answer is ceil((W/bw) / a). We search instead of dividing, so that floating
    # point cannot put the answer one off: bisect over [1, 2**20] on the very comparison the test makes.
    bound = lambda b: decode_step_flops(shape, b, context) / flops_per_s >= decode_step_bytes(shape, b, context) / bytes_per_s
    if not bound(2 ** 20): return None
    lo, hi = 0, 2 ** 20                     # not bound(lo) (or lo = 0), bound(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if bound(mid): hi = mid
        else: lo = mid
    return hi
