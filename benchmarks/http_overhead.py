#!/usr/bin/env python
"""HTTP against in-process (chapter 12): the default `minipaged bench` workload on `pylm` (its code prompts,
Poisson arrivals, 5% cancelled), served by chapter 09's in-process runner and by `minipaged serve` in a
subprocess measured by `minipaged bench --url`'s client, with the same engine settings and torch threads. The two
take turns, `--repeats` rounds; the table shows each round and the medians, and the last row the difference:
throughput ratio and TTFT p50 added by HTTP. Greedy: every request completed by both must have the same text.
To find the cause of the difference it also reports the CPU seconds each way costs (the in-process run; over
HTTP, the client's process and the server's, which share this machine's cores with the engine), and the TTFT of
one request at a time on an idle engine both ways (`--idle` requests: the fixed cost of the HTTP path).

    python benchmarks/http_overhead.py --json benchmarks/results/http_overhead.json
"""
import argparse, statistics, time
from dataclasses import asdict, replace
import harness
from http_common import Server
import torch
from minipaged import LLM, SamplingParams
from minipaged.bench.options import BENCH_ENGINE, DEFAULT_WORKLOAD, default_workload
from minipaged.bench.metrics import summarize
from minipaged.bench.runner import serve
from minipaged.bench.http import run_async, serve_http
from minipaged.model.fetch import shipped_model

COLUMNS = ('completed', 'cancelled', 'output_throughput', 'ttft_median_ms', 'ttft_p99_ms', 'itl_median_ms',
           'itl_p99_ms', 'tpot_median_ms', 'e2e_median_ms')


def row(mode: str, rnd: int, run) -> dict:
    s = summarize(run.records, run.duration)
    return dict(mode=mode, round=rnd, **{k: round(s[k], 2) if isinstance(s[k], float) else s[k] for k in COLUMNS})


def idle_ttft(llm: LLM, url: str, n: int) -> dict:
    "Median ms to the first token of one one-token request at a time: in-process (`generate`) and over HTTP"
    import httpx
    prompt = 'def read_config(path):'
    params = SamplingParams(max_tokens=1, temperature=0)
    body = dict(prompt=prompt, max_tokens=1, temperature=0, stream=True)
    local, remote = [], []
    with httpx.Client() as c:
        for i in range(n + 3):
            t = time.perf_counter(); llm.generate([prompt], params, use_tqdm=False); local.append(time.perf_counter() - t)
            t = time.perf_counter()
            with c.stream('POST', url + '/v1/completions', json=body) as r:
                next(line for line in r.iter_lines() if line.startswith('data: {'))
            remote.append(time.perf_counter() - t)
    return dict(in_process_ms=statistics.median(local[3:]) * 1e3, http_ms=statistics.median(remote[3:]) * 1e3)


def same_texts(a, b) -> bool:
    "Whether every request completed in both runs has the same text in both"
    done = {r.index: r.text for r in a.records if r.status == 'completed'}
    both = [r for r in b.records if r.status == 'completed' and r.index in done]
    return bool(both) and all(done[r.index] == r.text for r in both)


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--num-requests', type=int, default=DEFAULT_WORKLOAD.num_requests)
    p.add_argument('--rate', type=float, default=DEFAULT_WORKLOAD.rate)
    p.add_argument('--repeats', type=int, default=3)
    p.add_argument('--threads', type=int, default=1, help='torch threads of the engine, both ways (default 1)')
    p.add_argument('--idle', type=int, default=30, help='one-at-a-time requests for the idle TTFT (default 30)')
    p.add_argument('--json')
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    model = shipped_model('pylm')
    w = replace(default_workload(str(model)), num_requests=a.num_requests, rate=a.rate)
    llm = LLM(model, BENCH_ENGINE)
    vocab, encode = llm.config.shape.vocab_size, llm.tokenizer.encode
    rows, same = [], []
    print(harness.header_line())
    with Server('--threads', str(a.threads)) as server:
        idle = idle_ttft(llm, server.url, a.idle)
        for rnd in range(a.repeats):
            c0 = time.process_time()
            local = serve(LLM(llm.model, BENCH_ENGINE, tokenizer=llm.tokenizer), w)
            c1, s1 = time.process_time(), server.cpu_seconds()
            remote = run_async(serve_http(server.url, w, vocab, encode))
            c2, s2 = time.process_time(), server.cpu_seconds()
            rows += [row('in-process', rnd, local) | dict(cpu_s=round(c1 - c0, 2)),
                     row('HTTP', rnd, remote) | dict(cpu_s=round(s2 - s1, 2), client_cpu_s=round(c2 - c1, 2))]
            same.append(same_texts(local, remote))
        leaked = server.settled()['minipaged_kv_blocks_used']
    cols = COLUMNS + ('cpu_s',)
    med = {m: {k: statistics.median(r[k] for r in rows if r['mode'] == m) for k in cols} for m in ('in-process', 'HTTP')}
    med['HTTP']['client_cpu_s'] = statistics.median(r['client_cpu_s'] for r in rows if r['mode'] == 'HTTP')
    diff = dict(throughput_ratio=med['HTTP']['output_throughput'] / med['in-process']['output_throughput'],
                ttft_p50_added_ms=med['HTTP']['ttft_median_ms'] - med['in-process']['ttft_median_ms'],
                itl_p50_added_ms=med['HTTP']['itl_median_ms'] - med['in-process']['itl_median_ms'])
    harness.print_table(rows + [dict(mode=f'median {m}', round='', **{k: round(v, 2) for k, v in med[m].items()})
                                for m in med])
    print(f"HTTP/in-process output throughput {diff['throughput_ratio']:.3f}; TTFT p50 +{diff['ttft_p50_added_ms']:.1f} "
          f"ms; ITL p50 +{diff['itl_p50_added_ms']:.1f} ms; same texts in every round: {all(same)}; blocks left "
          f"in use after: {leaked:g}")
    print(f"CPU seconds per run: in-process {med['in-process']['cpu_s']:.1f}; HTTP server {med['HTTP']['cpu_s']:.1f} + "
          f"client {med['HTTP']['client_cpu_s']:.1f}. One request on an idle engine, ms to the first token: "
          f"in-process {idle['in_process_ms']:.1f}, HTTP {idle['http_ms']:.1f}")
    if a.json:
        harness.write_json(a.json, dict(workload=asdict(w), engine=asdict(BENCH_ENGINE), threads=a.threads,
                                        repeats=a.repeats, rows=rows, medians=med, difference=diff,
                                        identical=all(same), leaked_blocks=leaked, idle_ttft=idle))


if __name__ == '__main__':
    main()
