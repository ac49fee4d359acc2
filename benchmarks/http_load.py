#!/usr/bin/env python
"""A bounded load test of `minipaged serve` (chapter 12): `--num-requests` requests (default 1,000) with Poisson
arrivals, at most `--concurrency` in flight (default 128), 10% of the clients closing their connection early,
against `pylm` in a subprocess on loopback. It checks what must hold under load and reports what it measured:

- nothing lost or duplicated: one record per declared request, and the server counted exactly as many finished
  requests as were sent (by finish reason; plus the client's one warm-up request);
- no other request's state: every completed response is the text `LLM.generate` gives its own prompt (greedy);
- nothing leaked: no block referenced, nothing running or waiting once the clients are done;
- every cancellation reached the server: it counts as many cancelled requests as the clients cancelled (less
  the few whose last chunk was already on its way);
- memory flat: the server's resident memory, sampled every half second, grows less than 5% from the end of the
  first quarter of the run to its end;
- p50/p99 TTFT and ITL as the client saw them (chapter 09's definitions).

    python benchmarks/http_load.py --json benchmarks/results/http_load.json
"""
import argparse, asyncio, json, time
from dataclasses import asdict
import harness
from http_common import Server
import httpx
from minipaged import LLM
from minipaged.bench.metrics import summarize
from minipaged.bench.runner import declared_requests, request_params
from minipaged.bench.workload import LengthDist, Workload
from minipaged.bench.http import read_metrics, serve_http
from minipaged.model.fetch import shipped_model


def workload(n: int, rate: float) -> Workload:
    model = shipped_model('pylm')
    return Workload(num_requests=n, arrival='poisson', rate=rate, prompt_file=str(model / 'prompts.jsonl'),
                    output_len=LengthDist('uniform', low=8, high=32), cancel_frac=0.1, cancel_after=0.2,
                    ignore_eos=False, seed=1)


async def sample_rss(url: str, every: float, out: list, stop: asyncio.Event) -> None:
    "Append (time, the server's resident bytes) every `every` seconds until `stop`"
    async with httpx.AsyncClient() as c:
        while not stop.is_set():
            m = read_metrics((await c.get(url + '/metrics')).text)
            out.append((time.perf_counter(), m.get('process_resident_memory_bytes')))
            try: await asyncio.wait_for(stop.wait(), every)
            except asyncio.TimeoutError: pass


async def load(url: str, w: Workload, vocab: int, encode, concurrency: int):
    rss, stop = [], asyncio.Event()
    sampler = asyncio.ensure_future(sample_rss(url, 0.5, rss, stop))
    t0 = time.perf_counter()
    run = await serve_http(url, w, vocab, encode, max_concurrency=concurrency)
    stop.set(); await sampler
    return run, [(t - t0, b) for t, b in rss]


def finished(m: dict) -> dict:
    "The server's finished requests by reason"
    key = 'minipaged_requests_finished_total{finished_reason="'
    return {k[len(key):-2]: int(v) for k, v in m.items() if k.startswith(key)}


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--num-requests', type=int, default=1000)
    p.add_argument('--concurrency', type=int, default=128)
    p.add_argument('--rate', type=float, default=40.0, help='Poisson arrivals per second (default 40)')
    p.add_argument('--json')
    a = p.parse_args()
    w = workload(a.num_requests, a.rate)
    llm = LLM('pylm')
    vocab, encode = llm.config.shape.vocab_size, llm.tokenizer.encode
    specs, _, _ = declared_requests(w, vocab, encode)
    print(harness.header_line())
    with Server('--max-waiting', str(2 * a.num_requests)) as server:
        before = finished(server.metrics())
        run, rss = asyncio.run(load(server.url, w, vocab, encode, a.concurrency))
        after_m = server.settled()
    counted = {k: v - before.get(k, 0) for k, v in finished(after_m).items()}
    counted = {k: v for k, v in counted.items() if v}
    done = [r for r in run.records if r.status == 'completed']
    want = llm.generate([specs[r.index].prompt for r in done], [request_params(w, specs[r.index]) for r in done],
                        use_tqdm=False)
    wrong = [r.index for r, o in zip(done, want) if r.text != o.outputs[0].text]
    s = summarize(run.records, run.duration)
    quarter = [b for t, b in rss if t >= run.duration / 4 and b]
    growth = (quarter[-1] - quarter[0]) / quarter[0] if len(quarter) > 1 else None
    result = dict(
        requests=a.num_requests, concurrency=a.concurrency, rate=a.rate, duration_s=run.duration,
        records=len(run.records), distinct=len({r.index for r in run.records}),
        by_status={k: sum(r.status == k for r in run.records) for k in ('completed', 'cancelled', 'rejected', 'failed')},
        server_finished=counted, server_finished_total=sum(counted.values()),
        wrong_texts=wrong, compared=len(done),
        leaked=dict(kv_blocks_used=after_m['minipaged_kv_blocks_used'],
                    running=after_m['minipaged_num_requests_running'],
                    waiting=after_m['minipaged_num_requests_waiting']),
        rss_mib=dict(first=rss[0][1] / 2**20 if rss and rss[0][1] else None,
                     after_first_quarter=quarter[0] / 2**20 if quarter else None,
                     end=quarter[-1] / 2**20 if quarter else None,
                     max=max(b for _, b in rss if b) / 2**20 if rss else None),
        rss_growth_after_first_quarter=growth,
        latency_ms={k: s[k] for k in ('ttft_median_ms', 'ttft_p99_ms', 'itl_median_ms', 'itl_p99_ms',
                                      'tpot_median_ms', 'e2e_median_ms')},
        output_throughput=s['output_throughput'], workload=asdict(w))
    # the server also finished serve_http's one warm-up request. A request the client cancelled may have
    # finished on the server first (its last chunk in flight), so the server's cancellations can be fewer, never more
    client_cancelled, server_cancelled = result['by_status']['cancelled'], counted.get('cancelled', 0)
    result['checks'] = dict(
        one_record_per_request=result['distinct'] == result['records'] == a.num_requests,
        server_finished_each_once=result['server_finished_total'] == a.num_requests + 1,
        none_failed_or_rejected=result['by_status']['failed'] == result['by_status']['rejected'] == 0,
        cancels_reached_the_server=server_cancelled <= client_cancelled <= server_cancelled + max(2, a.num_requests // 100),
        own_texts=not wrong, nothing_leaked=not any(result['leaked'].values()),
        rss_flat=growth is not None and abs(growth) < 0.05)
    ok = all(result['checks'].values())
    result['all_checks_pass'] = ok
    for k, v in result.items():
        if k != 'workload': print(f"{k:>32}  {json.dumps(v) if isinstance(v, (dict, list)) else v}")
    if a.json: harness.write_json(a.json, result)
    raise SystemExit(0 if ok else 1)


if __name__ == '__main__':
    main()
