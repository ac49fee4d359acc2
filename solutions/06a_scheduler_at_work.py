"Worked solutions to the exercises of chapter 06a (the scheduler at work)."
from minipaged.engine.request import FinishReason


def tpot_ms(requests) -> float:
    "The mean time per output token (ms) of the finished requests with at least two tokens"
    # A request's TPOT is its own mean gap: (last token - first token) / (tokens - 1). The mean over requests
    # weighs every request alike; the mean ITL weighs every gap alike, so long outputs count more there. With
    # equal lengths the two agree; with different lengths they differ whenever long and short requests stream
    # at different paces.
    done = [r for r in requests
            if r.finish_reason in (FinishReason.STOP, FinishReason.LENGTH) and len(r.token_times) >= 2]
    if not done: return float('nan')
    return sum((r.token_times[-1] - r.token_times[0]) / (len(r.token_times) - 1) for r in done) / len(done) * 1e3


def shortest_first_key(s, req) -> tuple:
    "The waiting-queue key of `req`: its prompt's length, then arrival, then submission order"
    # The key must not change while a request waits (the queue is kept sorted with `bisect.insort`), so it
    # uses the prompt's length, not the tokens left to compute (those change as a request runs, and a
    # preempted request's grow). Short prompts overtake long documents: the median TTFT drops, and the long
    # documents' TTFT (the p99) pays for it: they wait while shorter prompts keep arriving.
    return (len(req.prompt_token_ids), req.arrival_time, req._seq)
