"Worked solutions to chapter 11's exercises"
import numpy as np


def mean_tokens(alpha: float, k: int) -> float:
    "Expected tokens of one verifying step: a accepted guesses (probability alpha^a (1 - alpha), or alpha^k), then one"
    return sum((1 + a) * alpha ** a * (1 - alpha) for a in range(k)) + (k + 1) * alpha ** k


def ngram_earliest(token_ids, k: int, n_min: int, n_max: int) -> list[int]:
    "As ngram_propose, continuing the earliest earlier occurrence of the longest matching suffix"
    t = np.asarray(token_ids, dtype=np.int64)
    for n in range(min(n_max, len(t) - 1), n_min - 1, -1):
        windows = np.lib.stride_tricks.sliding_window_view(t[:-1], n)
        hits = np.flatnonzero((windows == t[-n:]).all(axis=1))
        if len(hits): return t[hits[0] + n:hits[0] + n + k].tolist()
    return []


def differing_case() -> tuple:
    "(token_ids, k, n_min, n_max) on which the earliest and the latest match guess differently"
    # The suffix (1 2) must occur at least twice before the end, followed by different tokens: then the
    # earliest occurrence continues with 3, the latest with 4.
    return [1, 2, 3, 1, 2, 4, 1, 2], 1, 2, 2
