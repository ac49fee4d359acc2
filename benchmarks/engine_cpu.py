"""Engine throughput on CPU against `transformers` on the same tiny model, in one run.

Declared workload: 64 requests, prompts uniform on 8..256 tokens, outputs uniform on 16..128 tokens
(ignore_eos, greedy), seed 0. Model: a random Llama with hidden 256, 4 layers, 8 query / 4 KV heads,
head dim 32, MLP 512, vocabulary 256, float32 (`minipaged.model.config.tiny_config()`), saved as a Hugging
Face checkpoint and loaded by both sides. Reports output tokens per second for:
  - minipaged `LLM.generate` (continuous batching over the paged cache),
  - transformers `generate`, one request at a time,
  - transformers `generate` in padded static batches (left padding) of each size in --hf-batch
    (16, 32 and 64 by default: the target is against the best of them).
minipaged and the padded batches run --rounds times, alternating (this machine is a shared VM whose speed
drifts by ±15% over minutes): the table gives each system's median and range, and the ratio to the best
padded batch as the median over rounds of (minipaged / the round's best padded batch); one request at a
time runs once (it takes ~10 s and is far from its target).

    python benchmarks/engine_cpu.py --json benchmarks/results/engine_cpu.json

It also prints how much more work the padded batches do than continuous batching on this workload: token positions
through the model (the linear layers' rows) and attended (query, key) pairs (`work`).

The VM has a slow state in which its second core stops speeding up small parallel operations. Before and after
each minipaged run the script times a 64-row linear layer (the shape of a decode step's projections) on all threads
and on one: the ratio, the "second-core gain", is printed per round, so each round says which state it ran in.
`--threads N` runs everything on N torch threads (N = 1 takes the second core out of the comparison).

`--breakdown` says where minipaged's time goes instead: model time by kind of step over one run of the workload
(steps that carry prompt tokens, decode-only steps, the rest of the engine), and the top operators (torch.profiler,
self CPU time) of the first step, a full chunk of prompts, and of five decode-only steps of 64 sequences.

    python benchmarks/engine_cpu.py --breakdown --json benchmarks/results/engine_cpu_breakdown.json
"""
import argparse, random, statistics, tempfile, time, warnings
import harness                                  # first: it puts this checkout's minipaged on the path
import torch

def workload(n=64, seed=0):
    rng = random.Random(seed)
    return [([rng.randrange(3, 256) for _ in range(rng.randint(8, 256))], rng.randint(16, 128)) for _ in range(n)]

def work(reqs, batch=None):
    """Token positions run through the model (rows of every linear layer) and (query, key) pairs attended, for continuous
    batching (batch None: each prompt token and each output token but the last, each over its causal context) or for
    padded static batches of `batch` (every row padded to the batch's longest prompt and longest output; the prompt
    attends as a full masked square, as transformers' SDPA path computes it)"""
    if batch is None:
        return (sum(len(p) + m - 1 for p, m in reqs),
                sum(len(p) * (len(p) + 1) // 2 + sum(len(p) + j for j in range(1, m)) for p, m in reqs))
    rows = pairs = 0
    for i in range(0, len(reqs), batch):
        chunk = reqs[i:i + batch]
        L, M = max(len(p) for p, _ in chunk), max(m for _, m in chunk)
        rows += len(chunk) * (L + M - 1); pairs += len(chunk) * (L * L + sum(L + j for j in range(1, M)))
    return rows, pairs

ENGINE = dict(block_size=16, max_num_seqs=64, max_num_batched_tokens=2048)      # minipaged's settings in every mode

def warm_engine(path, reqs, **kw):
    "A fresh engine that has run one short warm-up request, and the workload's sampling parameters"
    from minipaged.llm import LLM
    from minipaged.engine.sampler import SamplingParams
    llm = LLM(path, **kw)
    llm.generate([reqs[0][0]], SamplingParams(max_tokens=4, temperature=0.0))
    return llm, [SamplingParams(max_tokens=m, temperature=0.0, ignore_eos=True) for _, m in reqs]

def run_minipaged(path, reqs, **kw):
    llm, params = warm_engine(path, reqs, **kw)
    t = time.perf_counter()
    outs = llm.generate([p for p, _ in reqs], params, use_tqdm=False)
    dt = time.perf_counter() - t
    return sum(len(o.outputs[0].token_ids) for o in outs) / dt, dt, [o.outputs[0].token_ids for o in outs]

def second_core_gain(reps=1000):
    "How much faster a 64 x 256 -> 512 linear layer runs on all torch threads than on one: (gain, microseconds on all)"
    import torch.nn.functional as F
    x, w, threads = torch.randn(64, 256), torch.randn(512, 256), torch.get_num_threads()
    def us(n):
        torch.set_num_threads(n)
        for _ in range(reps // 20): F.linear(x, w)
        t = time.perf_counter()
        for _ in range(reps): F.linear(x, w)
        return (time.perf_counter() - t) / reps * 1e6
    try: t_all, t_one = us(threads), us(1)
    finally: torch.set_num_threads(threads)
    return t_one / t_all, t_all

def top_ops(prof, n=8):
    "The `n` operators with the most self CPU time in a torch.profiler run, with their share"
    ev = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    total = sum(e.self_cpu_time_total for e in ev)
    return [dict(op=e.key, calls=e.count, self_ms=round(e.self_cpu_time_total / 1e3, 2), share=f"{e.self_cpu_time_total / total:.0%}") for e in ev[:n]]

def breakdown(path, reqs, **kw):
    "Where minipaged's time goes: model time by kind of step over the whole workload, then the top operators of a full prefill step and of five 64-sequence decode steps"
    from torch.profiler import profile, ProfilerActivity
    def fresh():
        llm, params = warm_engine(path, reqs, **kw)
        for (p, _), sp in zip(reqs, params): llm.add_request(p, sp)
        return llm
    llm, kinds = fresh(), {}
    forward = llm.model.forward
    def timed(ids, meta, *args, **kwargs):                      # every model call, by kind: does the step carry prompt tokens?
        t = time.perf_counter(); out = forward(ids, meta, *args, **kwargs)
        k = kinds.setdefault('decode only' if meta.is_decode else 'with prompt tokens', dict(steps=0, tokens=0, model_s=0.0))
        k['steps'] += 1; k['tokens'] += ids.numel(); k['model_s'] += time.perf_counter() - t
        return out
    llm.model.forward = timed
    t = time.perf_counter()
    while llm.has_unfinished_requests(): llm.step(partial=False)
    total = time.perf_counter() - t
    rest = total - sum(k['model_s'] for k in kinds.values())
    rows = [dict(steps=kind, count=k['steps'], tokens=k['tokens'], model_s=round(k['model_s'], 3), share_of_run=f"{k['model_s'] / total:.0%}") for kind, k in kinds.items()]
    rows.append(dict(steps='everything else (scheduler, inputs, sampling)', count='-', tokens='-', model_s=round(rest, 3), share_of_run=f"{rest / total:.0%}"))
    llm = fresh()
    with profile(activities=[ProfilerActivity.CPU]) as prefill: llm.step(partial=False)        # the first step: a full chunk of prompts
    while any(r.num_computed_tokens < len(r.prompt_token_ids) for r in llm.scheduler.running.values()) or llm.scheduler.waiting: llm.step(partial=False)
    running = len(llm.scheduler.running)
    with profile(activities=[ProfilerActivity.CPU]) as decode:
        for _ in range(5): llm.step(partial=False)
    return dict(total_s=total, step_kinds=rows, prefill_step_ops=top_ops(prefill), decode_steps_ops=top_ops(decode), decode_running=running)

@torch.inference_mode()
def run_hf(hf, reqs, batch):
    t, produced, outs = time.perf_counter(), 0, []
    for i in range(0, len(reqs), batch):
        chunk = reqs[i:i + batch]
        L = max(len(p) for p, _ in chunk); m = max(x for _, x in chunk)
        ids = torch.tensor([[0] * (L - len(p)) + p for p, _ in chunk])
        mask = torch.tensor([[0] * (L - len(p)) + [1] * len(p) for p, _ in chunk])
        out = hf.generate(ids, attention_mask=mask, max_new_tokens=m, min_new_tokens=m, do_sample=False, pad_token_id=0)
        produced += sum(x for _, x in chunk)                    # count only the tokens each request asked for
        outs += [out[j, L:L + x].tolist() for j, (_, x) in enumerate(chunk)]
    dt = time.perf_counter() - t
    return produced / dt, dt, outs

if __name__ == '__main__':
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--requests', type=int, default=64)
    ap.add_argument('--hf-batch', type=int, nargs='+', default=[16, 32, 64], help='padded static batch sizes to try')
    ap.add_argument('--rounds', type=int, default=3, help='alternating rounds of minipaged and the padded batches')
    ap.add_argument('--with-reference', action='store_true', help="also run minipaged on chapter 03's reference attention backend ('torch') each round")
    ap.add_argument('--threads', type=int, help="torch threads for everything (default: torch's default, %d here)" % torch.get_num_threads())
    ap.add_argument('--json', help='write results to this path')
    ap.add_argument('--profile', action='store_true', help='profile minipaged alone (cProfile: top functions by own and by cumulative time) and stop')
    ap.add_argument('--breakdown', action='store_true', help="where minipaged's time goes (model time by kind of step; top operators of a prefill step and of decode steps), then stop")
    a = ap.parse_args()
    if a.threads is not None:
        if a.threads < 1: ap.error(f"--threads must be >= 1, got {a.threads}")
        torch.set_num_threads(a.threads)
    from transformers import LlamaForCausalLM
    from minipaged.model.causal_lm import random_model
    from minipaged.model.checkpoint import save_model
    from minipaged.model.config import tiny_config
    import transformers; transformers.utils.logging.disable_progress_bar()
    torch.manual_seed(0)
    reqs = workload(a.requests)
    with tempfile.TemporaryDirectory() as d:
        save_model(random_model(tiny_config(), seed=0, std=0.05), d)
        if a.profile:
            import cProfile, pstats
            prof = cProfile.Profile(); prof.enable()
            run_minipaged(d, reqs, **ENGINE)
            prof.disable(); pstats.Stats(prof).sort_stats('tottime').print_stats(15); pstats.Stats(prof).sort_stats("cumulative").print_stats(25)
            raise SystemExit(0)
        if a.breakdown:
            b = breakdown(d, reqs, **ENGINE)
            print(harness.header_line())
            harness.print_table(b['step_kinds'], f"one run of the workload: {b['total_s']:.3f} s")
            harness.print_table(b['prefill_step_ops'],
                                "\nthe first step (a full chunk of prompt tokens), top operators by self CPU time:")
            harness.print_table(b['decode_steps_ops'], f"\nfive decode-only steps of {b['decode_running']} sequences, "
                                                       "top operators by self CPU time:")
            if a.json: harness.write_json(a.json, dict(requests=a.requests, threads=torch.get_num_threads(), **b))
            raise SystemExit(0)
        with warnings.catch_warnings():
            warnings.simplefilter('ignore'); hf = LlamaForCausalLM.from_pretrained(d, dtype=torch.float32).eval()
        hf.generation_config.eos_token_id = None
        mp_runs, ref_runs, hfb_runs, gains = [], [], {b: [] for b in a.hf_batch}, []
        probe = torch.get_num_threads() > 1
        for _ in range(a.rounds):
            before = second_core_gain()[0] if probe else None
            mp_runs.append(run_minipaged(d, reqs, **ENGINE))
            gains.append((before, second_core_gain()[0]) if probe else None)
            if a.with_reference:
                ref_runs.append(run_minipaged(d, reqs, **ENGINE, attention_backend='torch'))
            for b in a.hf_batch: hfb_runs[b].append(run_hf(hf, reqs, b))
        hf1, hf1_dt, hf1_out = run_hf(hf, reqs, 1)
    same = sum(x == y for x, y in zip(mp_runs[0][2], hf1_out))
    med = lambda runs: harness.spread(r[0] for r in runs)['median']
    span = lambda runs: "{min:,.0f}..{max:,.0f}".format(**harness.spread(r[0] for r in runs))
    best = [max(hfb_runs[b][i][0] for b in a.hf_batch) for i in range(a.rounds)]     # each round's best padded batch
    ratios = [m[0] / h for m, h in zip(mp_runs, best)]
    mp = med(mp_runs)
    rows = [dict(system='minipaged LLM.generate (continuous, paged)', tok_per_s=mp, range=span(mp_runs), runs=len(mp_runs), minipaged_is="-")]
    if ref_runs:
        assert all(r[2] == mp_runs[0][2] for r in ref_runs), 'the reference backend produced different tokens'
        rows.append(dict(system="minipaged on the reference attention backend ('torch')", tok_per_s=med(ref_runs), range=span(ref_runs),
                         runs=len(ref_runs), minipaged_is=f"{statistics.median(m[0] / r[0] for m, r in zip(mp_runs, ref_runs)):.2f}x faster"))
    rows.append(dict(system='transformers generate, one at a time', tok_per_s=hf1, range='-', runs=1, minipaged_is=f"{mp / hf1:.2f}x faster"))
    rows += [dict(system=f'transformers generate, padded batches of {b}', tok_per_s=med(hfb_runs[b]), range=span(hfb_runs[b]), runs=a.rounds,
                  minipaged_is=f"{mp / med(hfb_runs[b]):.2f}x faster") for b in a.hf_batch]
    print(harness.header_line())
    harness.print_table([{k: round(v, 1) if isinstance(v, float) else v for k, v in r.items()} for r in rows])
    mp_work = work(reqs)
    work_ratio = {b: [x / y for x, y in zip(work(reqs, b), mp_work)] for b in a.hf_batch}
    print("work of the padded batches per unit of minipaged's: token positions through the model "
          + ' / '.join(f"{w[0]:.2f}x" for w in work_ratio.values()) + ", attended pairs " + ' / '.join(f"{w[1]:.2f}x" for w in work_ratio.values())
          + f" (batches of {' / '.join(map(str, a.hf_batch))})")
    print(f"against each round's best padded batch: {statistics.median(ratios):.2f}x (median; rounds: {', '.join(f'{r:.2f}' for r in ratios)})")
    if probe:
        harness.print_table([dict(round=i + 1, minipaged=round(m[0]), ratio=round(r, 2), gain_before=round(g[0], 2),
                                  gain_after=round(g[1], 2)) for i, (m, r, g) in enumerate(zip(mp_runs, ratios, gains))],
                            "per round: minipaged tok/s, ratio, second-core gain before/after its run")
    print(f"greedy outputs identical to transformers one-at-a-time: {same}/{len(reqs)} requests; torch threads {torch.get_num_threads()}")
    print("targets: >= 2x the best padded static batch, >= 4x one at a time")
    if a.json:
        harness.write_json(a.json, dict(
            requests=a.requests, threads=torch.get_num_threads(), identical=same, rows=rows,
            ratio_vs_best_padded_per_round=ratios, ratio_vs_best_padded=statistics.median(ratios),
            minipaged_tok_per_s=[r[0] for r in mp_runs], reference_backend_tok_per_s=[r[0] for r in ref_runs],
            padded_tok_per_s={b: [r[0] for r in runs] for b, runs in hfb_runs.items()},
            second_core_gain_before_after=gains, work_per_unit_of_minipaged=work_ratio))
