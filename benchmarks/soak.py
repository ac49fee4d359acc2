"""Soak: thousands of random requests with random arrivals and cancellations through the engine's step API (chapter 10).

The pool must come back to its baseline (no block used, none in flight, every block free or cached) and the
process's resident memory must stay flat: a reference, a request record or a tensor leaked once per few hundred
requests shows as RSS that keeps growing from one checkpoint to the next. A benchmark, not a test: it prints a
table and writes JSON, and asserts only the pool's baseline.

    python benchmarks/soak.py --requests 5000 --json benchmarks/results/soak.json
"""
import argparse, sys, time
import harness                                  # first: it puts this checkout's minipaged on the path
import torch
from minipaged import LLM
from minipaged.testing.engine import soak


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--requests', type=int, default=5000, help='requests to serve (default 5000)')
    ap.add_argument('--checkpoints', type=int, default=10, help='pool and RSS readings along the way (default 10)')
    ap.add_argument('--arrival-rate', type=float, default=0.25,
                    help='chance of an arrival per step, repeated (default 0.25: below what the pool serves, so the queue stays bounded)')
    ap.add_argument('--cancel-rate', type=float, default=0.05, help='chance per step of cancelling a random live request (default 0.05)')
    ap.add_argument('--seed', type=int, default=0)
    ap.add_argument('--block-size', type=int, default=8)
    ap.add_argument('--num-blocks', type=int, default=96, help='a small pool, so that preemption is common (default 96)')
    ap.add_argument('--max-num-batched-tokens', type=int, default=64)
    ap.add_argument('--threads', type=int, default=1, help='torch threads (default 1)')
    ap.add_argument('--json', help='write the results here')
    a = ap.parse_args(argv)
    for k in ('requests', 'checkpoints', 'block_size', 'num_blocks', 'max_num_batched_tokens', 'threads'):
        if getattr(a, k) < 1: ap.error(f"--{k.replace('_', '-')} must be a positive integer, got {getattr(a, k)}")
    for k in ('arrival_rate', 'cancel_rate'):
        if not 0 <= getattr(a, k) < 1: ap.error(f"--{k.replace('_', '-')} must be in [0, 1), got {getattr(a, k)}")
    torch.set_num_threads(a.threads)
    llm = LLM(block_size=a.block_size, num_blocks=a.num_blocks, max_num_batched_tokens=a.max_num_batched_tokens)
    t0 = time.perf_counter()
    r = soak(llm, a.requests, seed=a.seed, arrival_rate=a.arrival_rate, cancel_rate=a.cancel_rate, checkpoints=a.checkpoints)
    r['seconds'] = time.perf_counter() - t0
    rows = r['checkpoints']
    first, last = rows[0]['rss_mib'], rows[-1]['rss_mib']
    r['rss_growth_first_to_last_checkpoint_mib'] = round(last - first, 1)
    r['engine'] = dict(model='tiny random Llama (minipaged.model.config.tiny_config(), seed 0)', block_size=a.block_size, num_blocks=a.num_blocks,
                       max_num_batched_tokens=a.max_num_batched_tokens, threads=a.threads,
                       arrival_rate=a.arrival_rate, cancel_rate=a.cancel_rate)
    print(harness.header_line())
    harness.print_table(rows)
    print(f"\n{a.requests} requests in {r['steps']} steps, {r['seconds']:.1f} s; finish reasons {r['finish_reasons']}; "
          f"preemptions {llm.scheduler.counters['preemptions']}")
    print(f"pool: {r['end_available']} of {r['pool_blocks']} blocks free or cached at the end (baseline {r['baseline_available']}), "
          f"{r['end_used']} used, {r['end_in_flight']} copies in flight")
    print(f"RSS: {r['rss_start_mib']:.1f} MiB at the start, {first:.1f} at the first checkpoint, {last:.1f} at the last, "
          f"{r['rss_end_mib']:.1f} at the end ({r['rss_growth_first_to_last_checkpoint_mib']:+.1f} MiB from the first checkpoint to the last)")
    r['preemptions'] = llm.scheduler.counters['preemptions']
    if a.json:
        harness.write_json(a.json, r, argv)
        print(f"wrote {a.json}")
    ok = r['end_used'] == 0 and r['end_in_flight'] == 0 and r['end_available'] == r['baseline_available']
    if not ok: print('error: the pool did not return to its baseline', file=sys.stderr)
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
