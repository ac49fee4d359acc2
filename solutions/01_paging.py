"Worked solutions to the exercises of chapter 01 (paging)."
from fractions import Fraction
# Exercise 1 (build it): the library's own `utilization` is the worked solution, and passes the same test
from minipaged.accounting.paging import utilization
from minipaged.utils import check_positive

def largest_page_size(lengths, min_utilization, page_sizes=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512)) -> int:
    "The largest of `page_sizes` whose slot utilization on `lengths` is at least `min_utilization`"
    # `utilization` is an exact Fraction, so the comparison is exact too (a float threshold compares with the
    # Fraction exactly as well). Utilization need not fall monotonically with the page size (lengths that are
    # multiples of a large page waste nothing there), so test every size rather than stop at the first miss.
    good = [B for B in page_sizes if utilization(lengths, block_size=B) >= min_utilization]
    return max(good)

def doubling_slots(n: int, first: int = 16) -> int:
    "Slots of a region that starts at `first` slots and doubles when full, after `n` tokens"
    n, slots = check_positive('length', n), check_positive('first', first)
    # Grow until the n-th token has a slot. Each doubling is a move of the whole cache (a copy of every token's
    # K and V in every layer): the cost that pages avoid. The region ends in [n, 2n) once it has doubled.
    while slots < n: slots *= 2
    return slots

def expected_tail_waste_range(block_size: int, lo: int, hi: int) -> Fraction:
    "Exact mean tail waste for lengths uniform on `lo`..`hi` in pages of `block_size`"
    B, lo, hi = check_positive('block_size', block_size), check_positive('lo', lo), check_positive('hi', hi)
    if lo > hi: raise ValueError(f"lo must be at most hi ({hi}), got {lo}")

    def total_up_to(m: int) -> int:
        # Total tail waste of the lengths 1..m, the numerator of the chapter's closed form: q full runs of B
        # lengths waste B(B-1)/2 each, the r lengths after them B-1, ..., B-r. m = 0 gives 0.
        q, r = divmod(m, B)
        return q * B * (B - 1) // 2 + r * B - r * (r + 1) // 2

    # The lengths lo..hi are 1..hi without 1..lo-1: a difference of two closed forms, O(1) whatever the range.
    return Fraction(total_up_to(hi) - total_up_to(lo - 1), hi - lo + 1)
