"""Scheduler overhead: schedule + update (block bookkeeping included, no model), in microseconds per
scheduled sequence per decode step (building the sampler's token dict is the engine's work and is
reported in its own column), at 512 and 2,048 running sequences, with a pool that holds them all
and with a quarter of it (preemptions counted). Each configuration runs --repeats times from scratch; the
table gives the median and the range (this machine is a shared VM: single runs move by about ±10%).
Prints a table; --json writes the numbers.

    python benchmarks/scheduler_overhead.py --json benchmarks/results/scheduler_overhead.json
"""
import argparse, random, statistics, time
import harness                                  # first: it puts this checkout's minipaged on the path
from minipaged.engine.blocks import BlockManager
from minipaged.engine.config import EngineConfig
from minipaged.engine.request import Request
from minipaged.engine.scheduler import Scheduler

def run(num_seqs: int, pool_frac: float, steps: int, block_size: int = 16, seed: int = 0) -> dict:
    rng = random.Random(seed)
    prompts = [[rng.randrange(32000) for _ in range(rng.randint(16, 256))] for _ in range(num_seqs)]
    max_tokens = 10_000
    need = sum(-(-(len(p) + steps + 8) // block_size) for p in prompts)
    bm = BlockManager(max(8, int(need * pool_frac)), block_size)
    s = Scheduler(bm, EngineConfig(max_num_seqs=num_seqs, max_num_batched_tokens=1 << 20, max_model_len=1 << 20))
    for i, p in enumerate(prompts): s.add_request(Request(i, p, max_tokens))
    while any(r.num_uncomputed > 1 for r in s.running.values()) or s.waiting:   # warm-up: prefill everything that fits
        b = s.schedule(); s.update(b, {r.request_id: 1 for r in b.requests})
        if all(n == 1 for n in b.num_new_tokens): break
    pre0, seq_steps, dt, dict_dt = s.counters['preemptions'], 0, 0.0, 0.0
    for _ in range(steps):
        t0 = time.perf_counter()
        b = s.schedule()
        t1 = time.perf_counter()
        sampled = {r.request_id: 1 for r in b.requests}      # the engine's sampler output: not scheduler work, timed apart
        t2 = time.perf_counter()
        s.update(b, sampled)
        dt += time.perf_counter() - t2 + (t1 - t0); dict_dt += t2 - t1
        seq_steps += len(b.requests)
    return dict(running_seqs=num_seqs, pool=f'{pool_frac:.0%}', num_blocks=bm.num_blocks, steps=steps,
                us_per_seq_step=dt / seq_steps * 1e6, us_per_step=dt / steps * 1e6, sampler_dict_us_per_seq=dict_dt / seq_steps * 1e6, preemptions=s.counters['preemptions'] - pre0)

def summarize(runs: list[dict]) -> dict:
    "One table row from repeated runs of a configuration: medians, and the range of the per-sequence figure"
    us = harness.spread(r['us_per_seq_step'] for r in runs)
    med = lambda k: statistics.median(r[k] for r in runs)
    return dict(running_seqs=runs[0]['running_seqs'], pool=runs[0]['pool'], num_blocks=runs[0]['num_blocks'],
                steps=runs[0]['steps'], repeats=us['n'], us_per_seq_step=us['median'], us_min=us['min'],
                us_max=us['max'], us_per_step=med('us_per_step'),
                sampler_dict_us_per_seq=med('sampler_dict_us_per_seq'), preemptions=runs[0]['preemptions'], target_met=med('us_per_seq_step') <= 1.0)

if __name__ == '__main__':
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--steps', type=int, default=64)
    ap.add_argument('--repeats', type=int, default=5)
    ap.add_argument('--json', help='write results to this path')
    a = ap.parse_args()
    runs = {(n, f): harness.repeat(lambda: run(n, f, a.steps), a.repeats)
            for n in (512, 2048) for f in (1.0, 0.25)}
    rows = [summarize(rs) for rs in runs.values()]
    print(harness.header_line())
    harness.print_table([{k: round(v, 3) if isinstance(v, float) else v for k, v in r.items()} for r in rows])
    if a.json: harness.write_json(a.json, dict(rows=rows, runs=[r for rs in runs.values() for r in rs]))
