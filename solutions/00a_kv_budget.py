"Worked solutions to the exercises of chapter 00a (the KV budget)."
from minipaged.accounting.budget import ModelShape, memory_budget
from minipaged.utils import check_positive

def tokens_that_fit(shape: ModelShape, kv_bytes_available: int) -> int:
    "The most tokens whose keys and values fit in `kv_bytes_available` bytes"
    # A token costs `shape.kv_bytes_per_token`, which is computed in the shape's *KV* dtype (`kv_dtype`), not
    # the weights' `dtype`: an fp8 cache next to bf16 weights holds nearly twice the tokens (its scales
    # take 4 bytes per head beside the codes). Whole tokens only, so
    # integer division rounds down.
    return kv_bytes_available // shape.kv_bytes_per_token

def max_batch(shape: ModelShape, memory_bytes: int, context: int, **budget_kw) -> int:
    "The most requests of `context` tokens whose `memory_budget` fits in `memory_bytes`"
    # The total only grows with the number of requests k (every term is non-decreasing in k), so the answer is
    # the last k for which `fits(k)` holds: find an upper bound by doubling, then bisect. About 2·log2(k)
    # budgets instead of k of them.
    #
    # Against `capacity(shape, memory_bytes, [context])`: at the limit, where the total is the device's memory,
    # "headroom a share of the total" (here) and "a share of the device" (there) are the same bytes, and the KV
    # and block-table terms are the same, so for long requests the two agree. They part for many short ones:
    # `capacity` sizes one step's activations with the logits of a single sequence, while the budget counts
    # float32 logits for every sequence in the step (up to the token budget's 2,048 of them, 0.5 MiB each for
    # Llama 3 8B's vocabulary), so the budget fits fewer requests.
    def fits(k): return memory_budget(shape, [context] * k, **budget_kw).total <= memory_bytes
    if not fits(1): return 0
    lo, hi = 1, 2                      # invariant: fits(lo), and hi is the next candidate
    while fits(hi): lo, hi = hi, 2 * hi
    while hi - lo > 1:                 # now fits(lo) and not fits(hi)
        mid = (lo + hi) // 2
        if fits(mid): lo = mid
        else: hi = mid
    return lo

def kv_bytes_windowed(shape: ModelShape, lengths, window: int, block_size: int = 1) -> int:
    "KV bytes of `lengths` when each request keeps only the pages its last `window` tokens touch"
    check_positive('window', window); check_positive('block_size', block_size)
    pages = 0
    for n in lengths:
        n = check_positive('length', n)
        first = max(0, n - window)     # position (from 0) of the oldest token the window still reads
        last = n - 1                   # position of the newest token
        # pages first // B .. last // B are all touched; one more than their difference. When the window does
        # not start on a page boundary this is one page more than ceil(window / B).
        pages += last // block_size - first // block_size + 1
    return pages * block_size * shape.kv_bytes_per_token
