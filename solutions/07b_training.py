"Worked solutions to the exercises of chapter 07b (training a model worth serving)."
import numpy as np


def bytes_per_token(tok, text: str) -> float:
    "UTF-8 bytes of `text` per token of its encoding"
    # Bytes, not characters: bits per byte divides by the UTF-8 length, so this is the factor that converts a
    # loss per token into bits per byte. No EOS is added: we measure the tokenizer on the text alone.
    return len(text.encode('utf-8')) / len(tok.encode(text, add_special_tokens=False).ids)


def unigram_nll(train, heldout, vocab_size: int) -> float:
    "Summed nats of heldout[1:] under an add-one unigram counted on train"
    # Add-one (Laplace) smoothing: every token of the vocabulary gets one imaginary count, so the N + V counts
    # normalise and a token never seen in training still has probability 1 / (N + V), not zero.
    train, heldout = np.asarray(train, np.int64), np.asarray(heldout, np.int64)
    counts = np.bincount(train, minlength=vocab_size)
    p = (counts[heldout[1:]] + 1) / (len(train) + vocab_size)
    return float(-np.log(p).sum())
