"Worked solutions to the exercises of chapter 07d (training a model worth serving)."
import numpy as np


def bytes_per_token(tok, text: str) -> float:
    "UTF-8 bytes of `text` per token of its encoding"
    # Bytes, not characters: bits per byte divides by the UTF-8 length, so this is the factor that converts a
    # loss per token into bits per byte. No EOS is added: we measure the tokenizer on the text alone.
    return len(text.encode('utf-8')) / len(tok.encode(text, add_special_tokens=False).ids)


def warmup_cosine(step: int, steps: int, peak: float, warmup: int) -> float:
    "Linear warm-up to `peak`, then a cosine down to `peak / 10` at the last step"
    import math
    # step 0 already trains: the warm-up reaches peak at step warmup - 1, not at step warmup
    if step < warmup: return peak * (step + 1) / warmup
    # t runs from 0 at the first step after the warm-up to 1 at the last step
    t = (step - warmup) / max(1, steps - 1 - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, t))))
