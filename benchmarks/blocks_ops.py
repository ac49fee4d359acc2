"""Operations per second of the block manager (chapter 05) on a declared workload.

Workload (the defaults): 2,000 sequences; prompt lengths uniform on 1..512; 64 decode tokens each;
half of the requests share a 256-token prefix (their prompt is the first min(length, 256) tokens of
it, then tokens of their own); every `--fork-every`-th request is sampled twice (`fork` after its
prompt, so the two samples diverge by copy-on-write); every request carries a cache salt (the
sharing half one common salt, the others one of 8 tenants); blocks of 16 slots; at most
`--max-running` sequences live at once (continuous batching: a finished sequence's place is
refilled at the next step); a pool of `--num-blocks` blocks, so cached blocks are evicted.

The driver runs the engine's protocol without a model:
  admit     allocate(prompt) + mark_computed(len(prompt)) [+ fork for a two-sample request]
  decode    per step: append(one token) for every live sequence, then mark_computed for every one
  finish    free after 64 decode tokens

An *operation* is one call of allocate, append (of one token), fork or free: each counts as one.
mark_computed is the engine telling the manager that K/V exists; it is timed and reported on its
own row, and its time is *included* in the all-operations average, which therefore over-counts
the time per operation. `--check` runs check() after every step (slow; for validation, not timing).

Timing: each kind of call is timed as a batch (perf_counter around the loop over the live sequences),
so the clock is not read per call; the cyclic garbage collector is off during a run; the workload is
built before the clock starts; the fastest of `--repeat` whole runs is reported. The same sections are
also measured in thread CPU time, which a busy shared machine disturbs less than the wall clock.

    python benchmarks/blocks_ops.py                 # the declared workload
    python benchmarks/blocks_ops.py --json out.json
"""
from __future__ import annotations
import argparse, gc, random, statistics, time
from collections import deque
import harness                                  # first: it puts this checkout's minipaged on the path
from minipaged.engine.blocks import BlockManager, NoFreeBlocksError
from minipaged.engine.reservation import ReservationManager


def build_workload(a) -> list[tuple]:
    "The declared requests: (prompt tuple, salt, number of samples)"
    rng = random.Random(a.seed)
    prefix = [rng.randrange(32000) for _ in range(a.prefix_len)]
    reqs = []
    for i in range(a.seqs):
        n = rng.randint(1, a.max_prompt)
        if i % 2 == 0:
            k = min(n, a.prefix_len)
            prompt, salt = prefix[:k] + [rng.randrange(32000) for _ in range(n - k)], 'shared-tenant'
        else: prompt, salt = [rng.randrange(32000) for _ in range(n)], f'tenant-{i % 8}'
        reqs.append((tuple(prompt), salt, 2 if a.fork_every and i % a.fork_every == 0 else 1))
    return reqs


def run_once(a, reqs, make_manager) -> dict:
    "Drive one manager through the workload; return counts and the time of each kind of call"
    bm = make_manager()
    reserve = isinstance(bm, ReservationManager)
    allocate, append, mark, fork, free, copies_done = bm.allocate, bm.append, bm.mark_computed, bm.fork, bm.free, bm.copies_done
    token = [(t % 32000,) for t in range(a.decode)]         # the sampled token of each decode step, a ready tuple
    queue, live, sid = deque(reqs), [], 0                   # live: [seq_id, tokens held, decode tokens left]
    t_admit = t_append = t_mark = t_free = 0.0
    cpu_total = 0.0                                         # CPU time of this thread in the timed sections
    n_alloc = n_fork = n_append = n_mark = n_free = steps = 0
    step_times = []
    perf, cpu = time.perf_counter, time.thread_time
    while queue or live:
        c0 = cpu()
        t0 = perf()
        while queue and len(live) < a.max_running:
            prompt, salt, samples = queue[0]
            if samples > 1 and reserve and bm.num_free_blocks < samples * bm.reservation: break   # its fork needs a region too
            try: allocate(sid, prompt, salt)
            except NoFreeBlocksError: break
            queue.popleft(); n_alloc += 1
            mark(sid, len(prompt)); n_mark += 1
            live.append([sid, len(prompt), a.decode])
            for j in range(1, samples):
                fork(sid, sid + j); n_fork += 1
                live.append([sid + j, len(prompt), a.decode])
            sid += samples
        t1 = perf()
        step_token = token[steps % a.decode]
        for s in live:
            append(s[0], step_token)
        copies_done()                                       # the engine has run the step's copies (none here are timed)
        t2 = perf()
        for s in live:
            n = s[1] = s[1] + 1
            mark(s[0], n)
        t3 = perf()
        cpu_total += cpu() - c0
        n_append += len(live); n_mark += len(live)
        done = [s for s in live if s[2] == 1]
        for s in live: s[2] -= 1
        if done:
            live = [s for s in live if s[2] > 0]
            c4 = cpu(); t4 = perf()
            for s in done: free(s[0])
            t_free += perf() - t4; cpu_total += cpu() - c4; n_free += len(done)
        t_admit += t1 - t0; t_append += t2 - t1; t_mark += t3 - t2
        step_times.append((t3 - t1, len(live) + len(done)))
        steps += 1
        if a.check: bm.check()
    bm.check()
    assert bm.num_used_blocks == 0 and n_free == n_alloc + n_fork
    return dict(metrics=bm.metrics(), n_alloc=n_alloc, n_fork=n_fork, n_append=n_append, n_mark=n_mark, n_free=n_free,
                t_admit=t_admit, t_append=t_append, t_mark=t_mark, t_free=t_free, cpu_total=cpu_total, steps=steps, step_times=step_times)


def summarize(r: dict) -> tuple[list[dict], dict]:
    "Table rows and the headline numbers of one run"
    ops = r['n_alloc'] + r['n_fork'] + r['n_append'] + r['n_free']
    total = r['t_admit'] + r['t_append'] + r['t_mark'] + r['t_free']
    us = lambda t, n: t / n * 1e6 if n else 0.0
    rows = [dict(call='admit: allocate + mark_computed + fork', calls=r['n_alloc'] + r['n_fork'], total_ms=r['t_admit'] * 1e3,
                 us_per_call=us(r['t_admit'], r['n_alloc'] + r['n_fork'])),
            dict(call='append (1 token)', calls=r['n_append'], total_ms=r['t_append'] * 1e3, us_per_call=us(r['t_append'], r['n_append'])),
            dict(call='mark_computed (decode)', calls=r['n_append'], total_ms=r['t_mark'] * 1e3, us_per_call=us(r['t_mark'], r['n_append'])),
            dict(call='free', calls=r['n_free'], total_ms=r['t_free'] * 1e3, us_per_call=us(r['t_free'], r['n_free'])),
            dict(call='all operations (allocate, append, fork, free)', calls=ops, total_ms=total * 1e3, us_per_call=us(total, ops))]
    widest = max(n for _, n in r['step_times'])
    full = [t for t, n in r['step_times'] if n == widest]
    head = dict(operations=ops, seconds=total, us_per_operation=us(total, ops), operations_per_second=ops / total,
                cpu_seconds=r['cpu_total'], cpu_us_per_operation=us(r['cpu_total'], ops),
                us_per_append=us(r['t_append'], r['n_append']), us_per_decode_token=us(r['t_append'] + r['t_mark'], r['n_append']),
                full_batch_size=widest, us_per_full_decode_step=statistics.median(full) * 1e6)
    return rows, head


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--seqs', type=int, default=2000, help='requests in the workload')
    p.add_argument('--max-prompt', type=int, default=512, help='prompt lengths are uniform on 1..MAX_PROMPT')
    p.add_argument('--decode', type=int, default=64, help='decode tokens per sequence')
    p.add_argument('--prefix-len', type=int, default=256, help='length of the prefix half of the requests share')
    p.add_argument('--fork-every', type=int, default=8, help='every Nth request is sampled twice through fork (0: never)')
    p.add_argument('--block-size', type=int, default=16)
    p.add_argument('--num-blocks', type=int, default=6144, help='blocks in the pool')
    p.add_argument('--max-running', type=int, default=256, help='most sequences live at once')
    p.add_argument('--manager', choices=['paged', 'reserve'], default='paged', help='BlockManager, or the fixed-reservation baseline')
    p.add_argument('--no-prefix-caching', action='store_true', help='switch the prefix cache off')
    p.add_argument('--repeat', type=int, default=5, help='runs; the fastest is reported (each run is the whole workload)')
    p.add_argument('--check', action='store_true', help='call check() after every step (validation; slow)')
    p.add_argument('--seed', type=int, default=0)
    p.add_argument('--json', metavar='PATH', help='also write the results as JSON to PATH')
    a = p.parse_args(argv)
    for k in ('seqs', 'max_prompt', 'decode', 'prefix_len', 'block_size', 'num_blocks', 'max_running', 'repeat'):
        if getattr(a, k) < 1: p.error(f"--{k.replace('_', '-')} must be a positive integer, got {getattr(a, k)}")
    reqs = build_workload(a)
    if a.manager == 'paged':
        make = lambda: BlockManager(a.num_blocks, a.block_size, enable_prefix_caching=not a.no_prefix_caching)
    else: make = lambda: ReservationManager(a.num_blocks, a.block_size, max_model_len=a.max_prompt + a.decode)
    def run_without_collector():
        gc.collect(); gc.disable()          # a collection pause mid-run measures the collector, not the manager
        try: return run_once(a, reqs, make)
        finally: gc.enable()
    runs = harness.repeat(run_without_collector, a.repeat)
    best = min(runs, key=lambda r: r['t_admit'] + r['t_append'] + r['t_mark'] + r['t_free'])
    rows, head = summarize(best)
    m = best['metrics']
    print(harness.header_line())
    print(f"workload: {a.seqs} sequences, prompts uniform on 1..{a.max_prompt}, {a.decode} decode tokens each, half sharing a "
          f"{a.prefix_len}-token prefix, every {a.fork_every}th sampled twice, B = {a.block_size}, {a.num_blocks} blocks, "
          f"<= {a.max_running} live; {a.manager}, prefix caching {'off' if a.no_prefix_caching else 'on'}, salts on, check() "
          f"{'on' if a.check else 'off'}; fastest of {a.repeat} runs")
    harness.print_table([{k: f"{v:,.3f}" if isinstance(v, float) else v for k, v in r.items()} for r in rows])
    print(f"\n{head['operations']:,} operations in {head['seconds'] * 1e3:.1f} ms: {head['us_per_operation']:.3f} us per operation, "
          f"{head['operations_per_second']:,.0f} operations/s (wall clock); {head['cpu_us_per_operation']:.3f} us per operation "
          f"in thread CPU time")
    print(f"decode: {head['us_per_append']:.3f} us per append, {head['us_per_decode_token']:.3f} us per token with mark_computed; "
          f"a full decode step of {head['full_batch_size']} sequences takes {head['us_per_full_decode_step']:.0f} us (median)")
    print(f"pool: high water {m['high_water']} blocks; prefix hits {m['prefix_hit_tokens']:,} of {m['prefix_query_tokens']:,} prompt "
          f"tokens ({m['prefix_hit_blocks']:,} blocks); {m['cow_copies']} copy-on-write copies; {m['evictions']:,} evictions")
    res = dict(args=vars(a), rows=rows, **head, metrics=m,
               all_runs_us_per_operation=[summarize(r)[1]['us_per_operation'] for r in runs])
    if a.json: harness.write_json(a.json, res, argv)
    return res


if __name__ == '__main__':
    main()
