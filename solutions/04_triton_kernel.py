"Worked solutions to the exercises of chapter 04 (Triton kernels)."
import torch
# Exercise 1 (build it): the worked solution is the kernels' own inner loop, one tile of online softmax.
from minipaged.attention.triton_kernels import _attend_tile


def merge_splits(acc, m, l):
    "Merge split states `acc [S, Hq, splits, d]`, `m, l [S, Hq, splits]` (m in log2 units) into `[S, Hq, d]`"
    # The largest maximum over the splits; where every split is empty it is -inf, and we subtract 0 instead,
    # so that no -inf - (-inf) = NaN appears (chapter 02's rule, as in the merge kernel).
    m_max = m.amax(dim=-1, keepdim=True)
    shift = torch.where(m_max == float('-inf'), torch.zeros_like(m_max), m_max)
    # Each split's weight, in log2 units like m: an empty split (m = -inf) weighs 2^-inf = 0. Subtracting
    # the maximum keeps every weight <= 1, so m + 200 cannot overflow.
    w = torch.exp2(m - shift)
    l_total = (w * l).sum(-1)
    out = (w[..., None] * acc).sum(-2)
    # l_total = 0 only where every split is empty: the output is 0 there (acc is 0 too).
    return out / torch.where(l_total == 0, torch.ones_like(l_total), l_total)[..., None]
