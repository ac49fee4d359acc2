#!/usr/bin/env python
"""Render BENCHMARKS.md from benchmarks/results/*.json: the current state, one table, a row per result file.

Each file names the script that wrote it in its `command`; a small summary per script picks the file's
headline figures. Every figure is read from the file or derived from it (a median, a range); a field the file
lacks is shown as not recorded. `--check` exits 1 if BENCHMARKS.md differs from what would be written.

    python tools/render_benchmarks.py
"""
import json, re, statistics, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS, OUT = ROOT / 'benchmarks' / 'results', ROOT / 'BENCHMARKS.md'


def median(xs) -> float: return statistics.median(list(xs))
def span(xs, fmt: str = '.2f') -> str: return f"{min(xs):{fmt}}–{max(xs):{fmt}}"
def plural(n, word: str) -> str: return f"{n} {word}{'s' * (n != 1)}"


def script_name(record: dict) -> str | None:
    "The script a result file came from, read from its command: 'blocks_ops' for benchmarks/blocks_ops.py"
    m = re.search(r'benchmarks/(\w+)\.py', record.get('command', ''))
    return m and m.group(1)


def engine_cpu(r: dict) -> dict:
    "Throughput against transformers, or (with --breakdown) where the engine's time goes"
    if 'total_s' in r: return engine_breakdown(r)
    one = {row['system']: row for row in r['rows']}.get('transformers generate, one at a time')
    padded = ' / '.join(f"{b}: {median(ts):,.0f}" for b, ts in r['padded_tok_per_s'].items())
    ratios, mp = r['ratio_vs_best_padded_per_round'], r['minipaged_tok_per_s']
    alone = f"one request at a time: {one['tok_per_s']:,.0f} tok/s (minipaged {one['minipaged_is']}); " \
        if one else ''
    return dict(what="Engine throughput on CPU: minipaged `LLM.generate` against `transformers` `generate`, "
                     f"{r['requests']} requests, tiny Llama, {plural(r.get('threads', '?'), 'torch thread')}",
                result=f"**{r['ratio_vs_best_padded']:.2f}×** the best padded batch (median of {len(ratios)} "
                       f"per-round ratios, {span(ratios)}{normal_state(r)}); {median(mp):,.0f} tok/s "
                       f"({span(mp, ',.0f')}); {r['identical']}/{r['requests']} greedy outputs identical",
                against=f"transformers padded static batches, median tok/s ({padded}), the best of each "
                        f"round; {alone}issue 7's targets: ≥ 2× the best padded batch, ≥ 4× one at a time")


def normal_state(r: dict, gain: float = 1.45) -> str:
    "The ratios of the rounds in the VM's normal state: a second-core gain of `gain` or more before and after"
    gains = r.get('second_core_gain_before_after') or []
    if not any(gains): return ''
    normal = [x for x, g in zip(r['ratio_vs_best_padded_per_round'], gains) if g and min(g) >= gain]
    return (f"; in the {plural(len(normal), 'round')} with a second-core gain ≥ {gain} on both sides: "
            + (span(normal) if normal else 'none'))


def top_ops(ops: list[dict], n: int) -> str:
    "The first `n` operators of a profile with their shares"
    return ', '.join(f"{o['op'].removeprefix('aten::')} {o['share']}" for o in ops[:n])


def engine_breakdown(r: dict) -> dict:
    "Model time by kind of step and the top operators of decode and of the first prefill step"
    kinds = '; '.join(f"{k['steps']}: {k['share_of_run']}" for k in r['step_kinds'])
    return dict(what=f"Where the engine's time goes: one run of the {r['requests']}-request workload, then "
                     "torch.profiler",
                result=f"{r['total_s']:.2f} s; {kinds}. Decode steps of {r['decode_running']} sequences: "
                       f"{top_ops(r['decode_steps_ops'], 4)}; the first prefill step: "
                       f"{top_ops(r['prefill_step_ops'], 3)}",
                against="— (a profile: shares of one run)")


def blocks_ops(r: dict) -> dict:
    "Microseconds per block-manager operation on the declared workload"
    a, runs, us = r['args'], r['all_runs_us_per_operation'], r['us_per_operation']
    return dict(what=f"Block manager operations: {a['seqs']:,} sequences, prompts 1..{a['max_prompt']}, "
                     f"{a['decode']} decode tokens, half sharing a {a['prefix_len']}-token prefix, every "
                     f"{a['fork_every']}th forked, {a['num_blocks']:,} blocks ({a['manager']})",
                result=f"**{us:.3f} µs** per operation ({r['operations_per_second']:,.0f}/s; fastest of "
                       f"{len(runs)} runs, all {span(runs, '.3f')}); append {r['us_per_append']:.3f} µs; "
                       f"a decode step of {r['full_batch_size']} sequences "
                       f"{r['us_per_full_decode_step']:.0f} µs",
                against=f"issue 5's target ≤ 1.2 µs per operation: {'met' if us <= 1.2 else 'missed'}")


def scheduler_overhead(r: dict) -> dict:
    "Microseconds per scheduled sequence per step, per configuration"
    rows = r['rows']
    per = '; '.join(f"{x['running_seqs']:,} running, pool {x['pool']}: **{x['us_per_seq_step']:.3f}** "
                    f"({x['us_min']:.3f}–{x['us_max']:.3f}, {x['preemptions']} preemptions)" for x in rows)
    met = sum(bool(x['target_met']) for x in rows)
    return dict(what="Scheduler overhead: `schedule` + `update` with block bookkeeping, no model, "
                     f"{rows[0]['steps']} decode steps",
                result=f"µs per sequence-step, median of {rows[0]['repeats']} runs (range): {per}",
                against=f"issue 6's target ≤ 1 µs: met in {met} of {len(rows)}")


def attention_cpu(r: dict) -> dict:
    "The price of paging on the CPU: the paged paths' time over contiguous SDPA's"
    s, rows = r['setup'], r['rows']
    pages, ref = [x['pages_slowdown'] for x in rows], [x['slowdown'] for x in rows]
    cases = f"batch {sorted({x['batch'] for x in rows})} × context {sorted({x['context'] for x in rows})}"
    return dict(what=f"Decode attention on CPU, one step: Hq={s['num_q_heads']}, Hkv={s['num_kv_heads']}, "
                     f"d={s['head_dim']}, {s['dtype']}, B={s['block_size']}, {cases}",
                result=f"whole-page SDPA path **{span(pages)}×** the contiguous call's time; the reference "
                       f"{span(ref)}× (medians of {s['reps']} interleaved rounds)",
                against="torch SDPA on the same K/V laid out contiguously (no paging)")


def soak(r: dict) -> dict:
    "Whether the pool comes back and resident memory stays flat"
    e, cps = r['engine'], r['checkpoints']
    rss = f"{cps[0]['rss_mib']} → {cps[-1]['rss_mib']} MiB"
    growth, live = r['rss_growth_first_to_last_checkpoint_mib'], span([c['live'] for c in cps], 'd')
    return dict(what=f"Soak: {r['requests']:,} requests through the step API, arrival rate "
                     f"{e['arrival_rate']}, cancel rate {e['cancel_rate']}, B={e['block_size']}, "
                     f"a {e['num_blocks']}-block pool",
                result=f"pool back to {r['end_available']} of {r['pool_blocks']} blocks free or cached, "
                       f"{r['end_used']} used, {r['end_in_flight']} copies in flight; RSS "
                       f"**{growth:+.1f} MiB** from the first checkpoint to the last ({rss}; {live} live "
                       "requests at the checkpoints); "
                       f"{r['preemptions']:,} preemptions; {r['seconds']:.0f} s",
                against=f"the pool's baseline ({r['baseline_available']} blocks available) and the RSS "
                        "at the first checkpoint")


def attention_gpu(r: dict) -> dict:
    "The Triton kernels' goals on a GPU"
    verdict = lambda met: 'n/a' if met is None else 'met' if met else 'missed'
    goals = '; '.join(f"{g['goal']}: {g['measured']:.3f} ({verdict(g['met'])})" for g in r['goals'])
    return dict(what=f"Triton paged attention ({r['mode']}, kernels {r['kernel_mode']}) on {r['device']}",
                result=goals,
                against="a device-to-device copy; the same kernel on a contiguous cache; torch SDPA")


def gpu_sweep(r: dict) -> dict:
    "A tile sweep run on a GPU beside attention_gpu.py, recorded with its provenance: the best configuration"
    b = r['best']
    cfg = ', '.join(f"{k} {v}" for k, v in b['cfg'].items())
    vs = f"{b['speed_vs_sdpa']:.2f}× SDPA" if 'speed_vs_sdpa' in b else f"{b['frac_copy']:.1%} of copy bandwidth"
    return dict(what=f"Triton tile sweep on a GPU: {r['sweep']}", result=f"best: {cfg}: {b['us']:.0f} µs, {vs}; "
                f"{len(r['rows'])} configurations, each checked first",
                against='torch SDPA on contiguous K/V (prefill); a device-to-device copy (decode)')


def side_by_side(r: dict) -> dict:
    "Two commits' figures from one alternating run"
    per = '; '.join(f"`{f['field']}` {f['against_median']:.4g} → {f['this_median']:.4g} "
                    f"({f['ratio_median']:.3f}×)" for f in r['fields'])
    return dict(what=f"`{r['script']}` at two commits, side by side, {r['rounds']} alternating rounds",
                result=f"median, against → this: {per}", against=f"commit {r['against']}")


def chapter_times(r: dict) -> dict:
    "How long each chapter's plain run takes: the total and the longest three"
    rows = sorted(r['chapters'], key=lambda c: -c['seconds'])
    top = ', '.join(f"{c['chapter'][:3].rstrip('_')} {c['seconds']:.0f} s" for c in rows[:3])
    return dict(what=f"Each chapter run as \"Run All\" runs it (slow cells not opted in), {len(rows)} chapters",
                result=f"**{sum(c['seconds'] for c in rows) / 60:.1f} min** in all; longest: {top}",
                against='nothing: a learner\'s guide (the course map quotes it)')


def trained_model(r: dict) -> dict:
    "The shipped model's held-out bits per byte against gzip and a bigram, and its valid-Python share"
    b, t = r['bits_per_byte'], r.get('training', {})
    trained = (f"; trained {t['train_seconds'] / 60:.1f} min on a loaded 2-core VM, {t['train_tokens_seen']:,} "
               f"tokens, {t['params']:,} parameters (the checkpoint's record)") if t.get('train_seconds') else ''
    return dict(what=f"The shipped model `{r['model']}` (chapter 07d): held-out bits per byte and valid Python",
                result=f"**{b['model']:.3f}** bits/byte on {r['heldout_bytes']:,} held-out bytes; "
                       f"{r['valid_python']:.0%} of {r['num_completions']} sampled completions valid Python, "
                       f"{r['ended_by_eos']:.0%} ended by EOS{trained}",
                against=f"`gzip -9` {b['gzip']:.3f}, token bigram (λ {r['bigram_lambda']}) {b['bigram']:.3f} on the "
                        f"same files; equal to the checkpoint's metrics.json: {r['same_as_checkpoint_record']}")


def speculative(r: dict) -> dict:
    "Speculative decoding: output tok/s against no guessing, per batch size and method, and whether tokens matched"
    rows = {(x['batch'], x['method']): x for x in r['rows']}
    cell = lambda b, m: f"{rows[(b, m)]['speedup']:.2f}×" if (b, m) in rows else '–'
    parts = [f"batch {b}: ngram {cell(b, 'ngram always')}, draft {cell(b, 'draft always')}, with the rule "
             f"ngram {cell(b, 'ngram rule')}" for b in sorted({x['batch'] for x in r['rows']})]
    same = all(x['identical'] for x in r['rows'])
    g = r.get('ngram', {})
    return dict(what="Speculative decoding on `pylm` (chapter 11), greedy, held-out code prompts: output tok/s "
                     f"against no guessing (ngram k {g.get('num_speculative_tokens')}, n-grams "
                     f"{g.get('prompt_lookup_min')}..{g.get('prompt_lookup_max')} chosen by the sweep on other "
                     "prompts; draft `pylm-draft` k 3)",
                result='; '.join(parts) + f"; tokens identical to no guessing in every run: {same}",
                against=f"the same engine without guessing, same prompts, same run, best of {r.get('repeats', 1)} "
                        f"interleaved rounds; the rule guesses nothing from {r['disable_by_batch_size']} running "
                        "requests, so its rows there differ from off by run-to-run noise only")


def http_overhead(r: dict) -> dict:
    "HTTP against in-process: throughput ratio and the latency HTTP adds, medians of interleaved rounds"
    m, d, w = r['medians'], r['difference'], r['workload']
    return dict(what=f"`minipaged serve` over HTTP (chapter 12) against chapter 09's in-process runner: "
                     f"{w['num_requests']} requests, Poisson at {w['rate']:g}/s, `pylm`'s code prompts, "
                     f"{r['threads']} torch thread, the server in its own process",
                result=f"output tok/s {m['HTTP']['output_throughput']:.1f} vs {m['in-process']['output_throughput']:.1f}"
                       f" (×{d['throughput_ratio']:.3f}); TTFT p50 {m['HTTP']['ttft_median_ms']:.1f} vs "
                       f"{m['in-process']['ttft_median_ms']:.1f} ms (+{d['ttft_p50_added_ms']:.1f} ms); ITL p50 "
                       f"+{d['itl_p50_added_ms']:.1f} ms; one request on an idle engine: TTFT "
                       f"{r['idle_ttft']['http_ms']:.1f} vs {r['idle_ttft']['in_process_ms']:.1f} ms; CPU s per run: "
                       f"server {m['HTTP']['cpu_s']:.1f} + client {m['HTTP']['client_cpu_s']:.1f} vs "
                       f"{m['in-process']['cpu_s']:.1f}; same texts: {r['identical']}; blocks left in use: "
                       f"{r['leaked_blocks']:g}",
                against=f"the same engine settings in-process, same workload, {r['repeats']} interleaved rounds, "
                        "medians; the cause of the added latency is in the notes")


def http_load(r: dict) -> dict:
    "The bounded load test: nothing lost, duplicated, leaked or mixed up; memory; latency"
    lat, rss = r['latency_ms'], r['rss_mib']
    growth = r['rss_growth_after_first_quarter']
    return dict(what=f"Load test of `minipaged serve` (chapter 12): {r['requests']} requests, at most "
                     f"{r['concurrency']} in flight, Poisson at {r['rate']:g}/s, 10% of clients disconnecting early",
                result=f"{r['distinct']} distinct records, server counted {r['server_finished_total']} finished "
                       f"(with the client's warm-up request) "
                       f"({', '.join(f'{k} {v}' for k, v in r['server_finished'].items())}); "
                       f"{len(r['wrong_texts'])} of {r['compared']} completed texts differ from `LLM.generate`; "
                       f"left after: {r['leaked']['kv_blocks_used']:g} blocks used, {r['leaked']['running']:g} "
                       f"running; RSS {rss['after_first_quarter']:.0f} → {rss['end']:.0f} MiB "
                       f"({growth:+.1%}) after the first quarter; TTFT p50/p99 {lat['ttft_median_ms']:.0f}/"
                       f"{lat['ttft_p99_ms']:.0f} ms, ITL p50/p99 {lat['itl_median_ms']:.1f}/{lat['itl_p99_ms']:.1f} ms; "
                       f"{r['output_throughput']:.0f} output tok/s; "
                       + ('every check passed' if r.get('all_checks_pass') else 'FAILED: ' + ', '.join(
                           k for k, ok in r.get('checks', {}).items() if not ok)),
                against="its own invariants: one answer per request, the greedy text of its own prompt, no block "
                        "referenced afterwards")


def tensor_parallel(r: dict) -> dict:
    "Tensor parallelism: a rank's KV capacity and weights, and the step times, per tensor_parallel_size"
    caps = '; '.join(f"tp {c['tp']}: {c['kv_heads_per_rank']} KV heads, {c['kv_bytes_per_token_per_rank']:,} B/token, "
                     f"{c['kv_tokens_per_rank']:,} KV tokens, weights {c['weights_per_rank_mib']:.1f} MiB"
                     for c in r['capacity'])
    steps = '; '.join(f"tp {t['tp']}: prefill {t['prefill_step_ms']:.1f} ms, decode {t['decode_step_ms']:.2f} ms "
                      f"(×{t['decode_vs_first']:.2f}), tokens identical to tp 1: {t['identical_to_tp1']}"
                      for t in r['timing'])
    return dict(what=f"Tensor parallelism (chapter 13) on `{r['model']}`, {r['device']}: per-rank KV capacity from "
                     f"{r['memory_bytes'] / 2**20:.0f} MiB per device, then one prefill step of {r['batch']} prompts of "
                     f"{r['prompt_len']} tokens and the median decode step",
                result=f"{caps}. {steps}",
                against=f"tp 1, same prompts, same run, {r['repeats']} interleaved rounds, medians; each rank "
                        f"{r['timing'][-1].get('threads_per_rank')} of the {r['threads']} torch threads at the largest tp")


def smollm2_cpu(r: dict) -> dict:
    "The real model (chapter 07c) on this CPU: the engine against transformers, memory, what bfloat16 changes"
    rows, m, same = {x['system']: x['tok_per_s'] for x in r['rows']}, r['memory'], r['bfloat16_first_difference']
    ours, padded = r['minipaged_tok_per_s'], r['padded_tok_per_s']
    return dict(what=f"SmolLM2-135M-Instruct (chapter 07c) on CPU, float32, {plural(r['threads'], 'torch thread')}: "
                     f"{r['requests']} chat prompts × {r['new_tokens']} greedy tokens at once, and one request alone "
                     f"({r['alone_tokens']} tokens)",
                result=f"**{median(ours):.0f} tok/s** 32 at once ({span(ours, '.0f')} over {r['rounds']} rounds), "
                       f"{rows['minipaged, one request alone']:.1f} tok/s alone; greedy tokens identical to "
                       f"transformers one at a time: {r['identical']}/{r['requests']}, alone: {r['alone_identical']}; "
                       f"RSS {m['rss_before_load_mib']:.0f} → {m['rss_after_load_mib']:.0f} MiB loaded, high-water "
                       f"{m['rss_high_water_mib']:.0f} MiB by the end (weights {m['weights_bytes'] / 2**20:.0f} MiB, KV "
                       f"pool {m['kv_pool_bytes'] / 2**20:.0f} MiB); in bfloat16, {sum(x == r['new_tokens'] for x in same)}"
                       f"/{len(same)} continuations identical to float32, the first difference at token "
                       f"{median(same):.0f} (median)",
                against=f"transformers generate on the same GGUF file, same run: one padded batch of 32 "
                        f"{median(padded):.0f} tok/s ({span(padded, '.0f')}; {r['padded_identical']}/{r['requests']} "
                        f"identical), one at a time {rows['transformers generate, one at a time']:.1f} tok/s, alone "
                        f"{rows['transformers, one request alone']:.1f} tok/s")


def kv_quality(r: dict) -> dict:
    "An 8-bit KV cache's price: greedy agreement, next-token KL and held-out bits per byte, per model and format"
    parts = []
    for name, m in r['models'].items():
        cells = []
        for row in m['rows']:
            if row['format'] == 'auto': continue
            bpb = f", {row['bits_per_byte']:.4f} bits/byte" if 'bits_per_byte' in row else ''
            cells.append(f"{row['format']} {row['identical']:.0%} identical (first difference at token "
                         f"{row['median_first']:.0f} median, {row['min_first']} earliest), KL {row['kl_mean']:.2g} "
                         f"nats{bpb}")
        parts.append(f"{name} ({m['prompts']} prompts): " + '; '.join(cells))
    pylm = r['models'].get('pylm', {})
    auto = next((x for x in pylm.get('rows', []) if x['format'] == 'auto'), {})
    return dict(what=f"What an 8-bit KV cache costs (chapter 16): fp8 and int8 pages (a float32 scale per token and "
                     f"head) against the model's own dtype, {r['new_tokens']} greedy tokens per prompt",
                result='; '.join(parts),
                against=f"the same engine with `kv_cache_dtype='auto'`; pylm's auto {auto.get('bits_per_byte', 0):.4f} "
                        f"bits/byte on {pylm.get('heldout_bytes', 0):,} held-out bytes against its metrics.json "
                        f"{pylm.get('checkpoint_bits_per_byte', 0):.4f}")


SUMMARIES = dict(tensor_parallel=tensor_parallel, http_overhead=http_overhead, http_load=http_load, speculative=speculative, engine_cpu=engine_cpu, trained_model=trained_model, chapter_times=chapter_times, blocks_ops=blocks_ops, scheduler_overhead=scheduler_overhead,
                 soak=soak, attention_cpu=attention_cpu, attention_gpu=attention_gpu,
                 side_by_side=side_by_side, smollm2_cpu=smollm2_cpu, kv_quality=kv_quality)


def machine_cell(h: dict) -> str:
    "CPU, cores, GPU and torch of a header, each said to be unknown when the file does not record it"
    cpu = h.get('cpu') or 'CPU not recorded'
    cores = f", {h['cores']} cores" if h.get('cores') else ', cores not recorded'
    gpu = f", GPU {h['gpu']}" if h.get('gpu') else ''
    threads = f", {plural(h['torch_threads'], 'thread')}" if h.get('torch_threads') else ''
    torch = f"; torch {h['torch']}{threads}" if h.get('torch') else ''
    return f"{cpu}{cores}{gpu}{torch}"


def date_cell(h: dict) -> str:
    "The day and the commit; † when the header was filled in after the run"
    date = (h.get('date') or 'date not recorded')[:10]
    commit = f"`{h['commit']}`" if h.get('commit') else 'commit not recorded'
    return f"{date}, {commit}" + (' †' if h.get('filled_in') else '')


def table_row(path: Path) -> str:
    "One Markdown table row for one result file"
    r = json.loads(path.read_text())
    name, h = script_name(r), r.get('header', {})
    unknown = dict(what=path.stem, result='no summary of this script here: read the file', against='unknown')
    s = SUMMARIES[name](r) if name in SUMMARIES else gpu_sweep(r) if 'sweep' in r else unknown
    command = f"`{r['command']}`" if r.get('command') else 'command not recorded'
    what = f"{s['what']} ([{path.name}](benchmarks/results/{path.name}))"
    cells = [what, command, s['result'], s['against'], machine_cell(h), date_cell(h)]
    return '| ' + ' | '.join(c.replace('|', '\\|') for c in cells) + ' |'


def unmeasured(records: list[dict]) -> list[str]:
    "Benchmark scripts that no result file came from"
    measured = {script_name(r) for r in records} | {'harness', 'side_by_side', 'http_common'}
    return sorted(p.stem for p in (ROOT / 'benchmarks').glob('*.py') if p.stem not in measured)


INTRO = """\
# Benchmarks

<!-- Generated from benchmarks/results/*.json by tools/render_benchmarks.py (`make sync`):
     rerun a benchmark, do not edit this file. -->

The current state of every figure minipaged quotes: one row per result file in `benchmarks/results/`, with the
command that produced it, the machine it ran on and the day. Each script prints a table and writes that JSON;
nothing here is a timed assert in a test. Earlier figures and the before/after of past issues are in git
(`git log -p BENCHMARKS.md benchmarks/results/`).
"""

NOTES = """\
† The run predates `benchmarks/harness.py`: its machine and date were filled in afterwards from the file's own
fields and the BENCHMARKS.md of that day; what was not recorded (the commit, for some the CPU) is said to be.

- The CPU machines are shared 2-core VMs: repeated runs move by about ±10%, more under load (other processes
  on the two cores slow every figure several-fold). Only figures measured side by side in one run compare.
- The engine rows: the VM has a slow state, coming and going within minutes, in which its second core barely
  speeds up small parallel operations; it costs minipaged (many small operations per decode step) much more
  than transformers (few large batched ones). `engine_cpu.py` times a 64-row linear layer on all threads and
  on one around every minipaged run (`second_core_gain_before_after` in the JSON), so each round says which
  state it ran in; `--threads 1` takes the state out of the comparison.
- The block manager row: an operation is one call of allocate, append (one token), fork or free;
  `mark_computed`'s time is included in the average, which therefore over-counts the time per operation.
- The soak rows: RSS is the resident set (`/proc/self/statm`) after `gc.collect()`. The steady run is the leak
  test; in the overload run the queue grows, and the RSS with it (each waiting request holds its prompt).
- The HTTP rows (chapter 12): `minipaged serve` runs in a process of its own, the client in the benchmark's, on
  the same two cores as the engine. Most of the TTFT HTTP adds is a fixed cost per request, measured on an idle
  engine (`idle_ttft` in http_overhead.json): the request's trip through uvicorn and FastAPI, JSON both ways,
  and the event loop's Python taking turns with the worker thread at the interpreter lock. The rest is
  contention under load: the server's and the client's CPU seconds are in the file. Running the engine in a
  process of its own, as vLLM does, would take the lock out of it.
- The tensor-parallel row (chapter 13): on these two cores tp = 2 has no more compute than tp = 1, and each
  decode step of `pylm` (4 layers) adds 9 all-reduces, a logits gather and the broadcast of the step's work,
  each a round trip through gloo over loopback; so a step is slower, and what tp buys here is memory (half the
  KV bytes per token and half the weights per rank, so more than twice the tokens in a rank's pool). On GPUs the same
  script runs with `--device cuda` over NCCL; it has not been run on a multi-GPU machine.
- The H200 row: the devices are lent to some sessions only; this one ran `benchmarks/attention_gpu.py` unchanged
  at commit `391012d` (`provenance` in the JSON: its header first named another repository's commit, corrected
  here). The decode and prefill tile sweeps run beside it came from no committed script (`command not
  recorded`); their rows carry the same provenance. Chapter 04's prefill tiles are the sweep's best since; the
  prefill goal the row missed is issue 34's, which `benchmarks/gpu_check.py` (`make gpu-check`) measures again.
- The SmolLM2 row (chapter 07c): the engine's memory is measured before transformers is imported. The
  high-water mark is already reached by the end of loading (1,411 MiB in a separate check that read it right
  after `LLM(...)`): the loader holds the checkpoint's tensors and the model's own at once. After loading, RSS
  exceeds the weights plus the KV pool by about 170 MiB, which `malloc_trim` does not return; not traced yet.
- The serving benchmark (`minipaged bench --out bench_results`) writes `bench_results/summary.json`, which is
  not kept here, so it has no row. Its last recorded run (2026-11-29, the default workload: 200 requests,
  Poisson at 4/s, tiny model, 1 thread): 200 completed, 3.99 requests/s, 169.1 output tok/s, goodput 100%,
  TTFT p50 / p99 13.0 / 54.4 ms, TPOT p50 / p99 4.06 / 11.35 ms; arrival-bound. Chapter 09 holds its
  ablations and capacity sweep with their data (`nbs/figures/fig9_*`).
"""

REPRODUCE = """\
## How to reproduce, and how to compare two commits

Run a row's command from the repository root in the project's environment (`.venv/bin/python`, or `make setup`
first); it rewrites its JSON, with the machine, the versions, the commit and the date in its `header`. Then
`make sync` (or `python tools/render_benchmarks.py`) regenerates this file, and `make check` fails until both
are committed. Keep smoke runs out of `benchmarks/results/` (`--json /tmp/x.json`).

Figures from different runs do not compare on these machines; two versions of the code do, when they
alternate in one run. `benchmarks/side_by_side.py` exports another commit with `git archive` and runs its copy
of a script and this checkout's in turn, round after round, each against its own `minipaged`:

    python benchmarks/side_by_side.py --against HEAD~1 --rounds 5 --field us_per_operation -- blocks_ops.py

`--field` is a path into the script's JSON (`rows.0.us_per_seq_step` for the scheduler's first row); the table
gives each round and the median ratio, and `--json` keeps it (a result file there becomes a row above).
"""


def render(results_dir: Path = RESULTS) -> str:
    "BENCHMARKS.md as it should read for the result files in `results_dir`"
    paths = sorted(results_dir.glob('*.json'))
    head = '| what | command | result | against what | machine | date |\n|---|---|---|---|---|---|'
    rows = '\n'.join(table_row(p) for p in paths)
    missing = unmeasured([json.loads(p.read_text()) for p in paths])
    gap = ''.join(f"\nNot yet measured: `benchmarks/{s}.py` has no result file.\n" for s in missing)
    return f"{INTRO}\n{head}\n{rows}\n{gap}\n{NOTES}\n{REPRODUCE}"


if __name__ == '__main__':
    text = render()
    if '--check' in sys.argv:
        if not OUT.exists() or OUT.read_text() != text:
            sys.exit('BENCHMARKS.md is out of sync with benchmarks/results/: run `make sync` '
                     '(tools/render_benchmarks.py) and commit it')
    else: OUT.write_text(text)
