#!/usr/bin/env python
"""Speculative decoding on the course's model (chapter 11): acceptance rate, mean tokens per verifying step and
output tokens/s with and without guessing, at batch 1, 8 and 64, for prompt lookup (`ngram`) and the shipped
draft model (`models/pylm-draft`: chapter 07d's recipe at half the width and depth, the target's tokenizer), on
held-out code prompts of `models/pylm/prompts.jsonl`, greedy. Every engine is built once; the methods run in
turns, `--repeats` rounds, and each reports its best round (these machines are noisy). Every speculative run's
tokens are compared with the run without guessing (`identical`). "always" runs guess at every batch size;
"rule" runs apply the engine's default `disable_by_batch_size`. `--sweep` first measures prompt-lookup settings
at batch 1 on other prompts (the last ones of the file) and uses the fastest.

    python benchmarks/speculative.py --sweep --json benchmarks/results/speculative.json
"""
import argparse, json, time
import harness
from minipaged import LLM, SamplingParams
from minipaged.speculative.speculators import DISABLE_BY_BATCH_SIZE
from minipaged.model.fetch import shipped_model
from minipaged.utils import format_rows

NGRAM = dict(method='ngram', num_speculative_tokens=6, prompt_lookup_min=1, prompt_lookup_max=3)
DRAFT = dict(method='draft_model', num_speculative_tokens=3, model='pylm-draft')
SWEEP = [(1, 2, 3), (1, 3, 4), (1, 3, 6), (1, 4, 4), (2, 4, 4), (2, 5, 6), (1, 5, 8), (5, 5, 4)]


def methods(ngram: dict) -> dict:
    always = dict(disable_by_batch_size=10_000)
    return {'off': None, 'ngram always': ngram | always, 'ngram rule': ngram, 'draft always': DRAFT | always,
            'draft rule': DRAFT}


def prompts(n: int, last: bool = False) -> list[str]:
    lines = (shipped_model() / 'prompts.jsonl').read_text().splitlines()
    return [json.loads(l)['prompt'] for l in (lines[-n:] if last else lines[:n])]


def timed(llm: LLM, batch: int, texts: list[str], params: SamplingParams) -> tuple[float, list]:
    "Seconds to serve `texts`, `batch` at a time, and the outputs"
    t0, outs = time.perf_counter(), []
    for i in range(0, len(texts), batch): outs += llm.generate(texts[i:i + batch], params, use_tqdm=False)
    return time.perf_counter() - t0, outs


def measure(configs: dict, batch: int, texts: list[str], max_tokens: int, repeats: int) -> list[dict]:
    "Each config's best round of serving `texts` at `batch`, the configs taking turns"
    params = SamplingParams(temperature=0, max_tokens=max_tokens)
    llms = {m: LLM('pylm', max_num_seqs=batch, speculative_config=c) for m, c in configs.items()}
    for llm in llms.values(): llm.generate(texts[:1], SamplingParams(temperature=0, max_tokens=4))  # warm up
    best = {}
    for _ in range(repeats):
        for m, llm in llms.items():
            sec, outs = timed(llm, batch, texts, params)
            if m not in best or sec < best[m][0]: best[m] = (sec, outs)
    rows = []
    for m, (sec, outs) in best.items():
        x = [o.metrics for o in outs]
        prop, acc, steps = (sum(y[k] for y in x) for k in ('num_spec_proposed', 'num_spec_accepted', 'num_spec_steps'))
        toks = [o.outputs[0].token_ids for o in outs]
        rows.append(dict(method=m, batch=batch, requests=len(texts), output_tokens=sum(map(len, toks)),
                         seconds=round(sec, 3), output_tok_s=round(sum(map(len, toks)) / sec, 1), proposed=prop,
                         accepted=acc, acceptance_rate=round(acc / prop, 3) if prop else None,
                         mean_tokens_per_verify_step=round((acc + steps) / steps, 3) if steps else None,
                         tokens=toks, config=configs[m]))
    base = rows[0]
    for r in rows:
        r['identical'], r['speedup'] = r['tokens'] == base['tokens'], round(r['output_tok_s'] / base['output_tok_s'], 2)
    return rows


def sweep(max_tokens: int, repeats: int) -> tuple[dict, list[dict]]:
    "Prompt-lookup settings at batch 1 on the file's last 8 prompts: the fastest one, and every row"
    configs = {'off': None} | {f"ngram min {lo} max {hi} k {k}": dict(method='ngram', num_speculative_tokens=k,
                                                                   prompt_lookup_min=lo, prompt_lookup_max=hi)
                               for lo, hi, k in SWEEP}
    rows = measure(configs, 1, prompts(8, last=True), max_tokens, repeats)
    fastest = max(rows[1:], key=lambda r: r['output_tok_s'])
    return fastest['config'], rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--max-tokens', type=int, default=96)
    p.add_argument('--repeats', type=int, default=2)
    p.add_argument('--sweep', action='store_true', help='choose the prompt-lookup setting on other prompts first')
    p.add_argument('--json', help='write the results here')
    a = p.parse_args(argv)
    cols = ('batch', 'method', 'output_tok_s', 'speedup', 'acceptance_rate', 'mean_tokens_per_verify_step',
            'identical')
    ngram, swept = (sweep(a.max_tokens, a.repeats) if a.sweep else (NGRAM, []))
    if swept: print(format_rows([{k: r[k] for k in cols} for r in swept]), flush=True)
    rows = []
    for batch in (1, 8, 64):
        rows += measure(methods(ngram), batch, prompts({1: 8, 8: 16, 64: 64}[batch]), a.max_tokens, a.repeats)
    print(harness.header_line())
    print(format_rows([{k: r[k] for k in cols} for r in rows]))
    strip = lambda rs: [{k: v for k, v in r.items() if k != 'tokens'} for r in rs]
    if a.json:
        harness.write_json(a.json, dict(disable_by_batch_size=DISABLE_BY_BATCH_SIZE, max_tokens=a.max_tokens,
                                        repeats=a.repeats, ngram=ngram, sweep=strip(swept), rows=strip(rows)))


if __name__ == '__main__':
    main()
