"Worked solutions to the exercises of chapter 02 (online softmax)."
from functools import reduce
import numpy as np
# Exercise 1 (build it): the library's own `merge_states` is the worked solution, and passes the same test
from minipaged.attention.softmax import SoftmaxState, merge_states, online_state, finalize

def merge_outputs(o_a, lse_a, o_b, lse_b):
    "`(o, lse)` of the union of two disjoint key sets, from their normalised outputs and log-sum-exps"
    # The same move as `merge_states`: rescale both sides to the larger of the two log-sum-exps. A
    # normalised output o = acc / l carries the weight l e^m = e^lse, so the weights are e^(lse - M).
    M = np.maximum(lse_a, lse_b)
    # Where both sides are empty M is -inf; subtract 0 there, so exp sees -inf (giving 0), never -inf - -inf.
    shift = np.where(np.isneginf(M), 0, M)
    wa, wb = np.exp(lse_a - shift), np.exp(lse_b - shift)
    total = wa + wb                                  # 0 only where neither side saw a live key
    live = total > 0
    o = np.divide(wa[..., None] * o_a + wb[..., None] * o_b, total[..., None],
                  out=np.zeros_like(o_a, dtype=np.result_type(o_a, o_b)), where=live[..., None])
    # lse of the union: log(e^lse_a + e^lse_b) = shift + log(total); -inf where there was nothing to add.
    lse = np.where(live, shift + np.log(np.where(live, total, 1)), -np.inf)
    return o, lse

def split_k_attention(q, k, v, num_splits: int, block_size: int, mask=None):
    "Attention as `num_splits` key ranges, each an online state, merged left to right"
    n_k = np.shape(k)[-2]
    per = -(-n_k // num_splits)                      # ceil(n_k / num_splits) keys per range
    # One state per range, as one program of a split-K kernel would compute it. A range past the end
    # is empty; its state (m = -inf, l = 0, acc = 0) is an exact identity of the merge, so keeping it
    # changes no bit.
    parts = [online_state(q, k[..., i * per:(i + 1) * per, :], v[..., i * per:(i + 1) * per, :], block_size,
                          mask=None if mask is None else mask[..., i * per:(i + 1) * per])
             for i in range(num_splits)]
    return finalize(reduce(merge_states, parts))      # ((s0 + s1) + s2) + ...: left to right

def chunked_prefill_state(q, k, v, chunk: int) -> SoftmaxState:
    "Causal attention over `n` tokens, `chunk` queries at a time: a cached-prefix state merged with a causal one"
    n = q.shape[-2]
    states = []
    for a in range(0, n, chunk):
        b = min(a + chunk, n)
        qc = q[..., a:b, :]
        # Every query of the chunk sees every cached key before a: no mask. For the first chunk this is
        # the empty state, the merge's identity.
        prefix = online_state(qc, k[..., :a, :], v[..., :a, :], block_size=16)
        # Its own keys causally: query a + i sees keys a .. a + i, a lower-triangular mask.
        own = online_state(qc, k[..., a:b, :], v[..., a:b, :], block_size=16,
                           mask=np.tril(np.ones((b - a, b - a), bool)))
        states.append(merge_states(prefix, own))
    # Join the chunks along the query axis: m and l are [..., rows], acc is [..., rows, d_v].
    return SoftmaxState(np.concatenate([s.m for s in states], axis=-1),
                        np.concatenate([s.l for s in states], axis=-1),
                        np.concatenate([s.acc for s in states], axis=-2))
