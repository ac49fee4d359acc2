"Worked solutions to the exercises of chapter 09a (serving in real time)."


def ttft_attainment(records, ttft_ms: float) -> float:
    "The share of all submitted `records` that completed with a TTFT of at most `ttft_ms`"
    # The denominator is every submitted request: one that was rejected or cancelled is one the service
    # failed, so it counts against attainment, exactly as SLO attainment does in `summarize`.
    good = 0
    for r in records:
        if r.status != 'completed' or not r.token_times: continue      # a cancelled request is never good
        ttft_s = r.token_times[0] - r.arrival                          # from when the client sent it: queueing counts
        good += ttft_s * 1e3 <= ttft_ms
    return good / len(records)


def kv_time_shares(run) -> dict:
    "{term: time-weighted share of the KV pool} for the five terms of `kv_breakdown`"
    terms = ('useful', 'wasted', 'cached', 'free', 'stranded')
    pool = run.config['num_blocks'] * run.config['block_size']
    # A snapshot is taken at the end of a step and stays true until the next step changes the pool, so it
    # holds from its own `t` to the next one's; the last one holds until the run ends.
    times = [x['t'] for x in run.steps] + [run.duration]
    held = [b - a for a, b in zip(times, times[1:])]
    total = sum(held)
    # Weight each snapshot by how long it held, not one vote per step: a long prefill step counts more.
    return {k: sum(w * x[k] for w, x in zip(held, run.steps)) / (pool * total) for k in terms}
