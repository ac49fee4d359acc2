"Worked solutions to the exercises of chapter 07e (how good the trained model is)."
import math
import numpy as np


def uniform_bits_per_byte(num_tokens: int, vocab_size: int, num_bytes: int) -> float:
    "Bits per byte of a uniform model over `vocab_size` tokens"
    # every token costs log2(V) bits whatever it is; the text's bytes share them
    return num_tokens * math.log2(vocab_size) / num_bytes


def unigram_nll(train, heldout, vocab_size: int) -> float:
    "Summed nats of heldout[1:] under an add-one unigram counted on train"
    # Add-one (Laplace) smoothing: every token of the vocabulary gets one imaginary count, so the N + V counts
    # normalise and a token never seen in training still has probability 1 / (N + V), not zero.
    train, heldout = np.asarray(train, np.int64), np.asarray(heldout, np.int64)
    counts = np.bincount(train, minlength=vocab_size)
    p = (counts[heldout[1:]] + 1) / (len(train) + vocab_size)
    return float(-np.log(p).sum())
