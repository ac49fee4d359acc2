"Worked solutions to the exercises of chapter 09 (workloads and metrics)."
import numpy as np


def my_tpot(r) -> float | None:
    "(last token time - first token time) / (output_len - 1); None for fewer than two tokens"
    # TPOT leaves out the first token: its wait is TTFT's. Over HTTP a chunk may carry several tokens, so
    # the gaps are spread over the tokens, not counted between timestamps.
    if r.output_len < 2 or len(r.token_times) < 1: return None
    return (r.token_times[-1] - r.token_times[0]) / (r.output_len - 1)


def on_off_arrivals(n: int, rate: float, on_s: float, off_s: float, rng: np.random.Generator) -> list[float]:
    "`n` sorted arrival offsets of a Poisson stream at `rate` that is on for `on_s` s, then off for `off_s` s"
    # Draw the stream on an "on clock" that only runs while the client sends: exponential gaps of mean
    # 1/rate, the first arrival at 0, as `arrival_times(..., 'poisson')` does.
    on_clock = np.concatenate([[0.0], np.cumsum(rng.exponential(1.0 / rate, size=n - 1))])
    # An arrival at on-clock time c falls in on period k = floor(c / on_s); each of the k periods before it
    # was followed by an off period, which the wall clock adds. Order is kept, so the result stays sorted.
    periods = np.floor(on_clock / on_s)
    return (on_clock + periods * off_s).tolist()
