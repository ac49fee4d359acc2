#!/usr/bin/env python
"""Speculative decoding on the course's model (chapter 11): acceptance rate, mean tokens per verifying step and
output tokens/s with and without guessing, at batch 1, 8 and 64, for prompt lookup (`ngram`) and the shipped
draft model (`models/pylm-draft`, chapter 07b's recipe at half the width and depth, the target's tokenizer), on
held-out code prompts of `models/pylm/prompts.jsonl`, greedy. Every speculative run's tokens are compared with
the run without guessing (`identical`). "always" runs guess at every batch size; "rule" runs apply the engine's
default `disable_by_batch_size`.

    python benchmarks/speculative.py --json benchmarks/results/speculative.json
"""
import argparse, json, time
import harness
import torch
from minipaged import LLM, SamplingParams
from minipaged.engine.speculative import DISABLE_BY_BATCH_SIZE
from minipaged.training.recipe import shipped_model
from minipaged.utils import format_rows

METHODS = {
    'off': None,
    'ngram always': dict(method='ngram', num_speculative_tokens=4, prompt_lookup_min=2, prompt_lookup_max=4,
                         disable_by_batch_size=10_000),
    'ngram rule': dict(method='ngram', num_speculative_tokens=4, prompt_lookup_min=2, prompt_lookup_max=4),
    'draft always': dict(method='draft_model', num_speculative_tokens=3, model='pylm-draft',
                         disable_by_batch_size=10_000),
    'draft rule': dict(method='draft_model', num_speculative_tokens=3, model='pylm-draft'),
}


def prompts(n: int) -> list[str]:
    lines = (shipped_model() / 'prompts.jsonl').read_text().splitlines()
    return [json.loads(l)['prompt'] for l in lines[:n]]


def run(method: str, batch: int, texts: list[str], max_tokens: int) -> dict:
    "Generate for `texts`, `batch` at a time, with `method`: output tokens, seconds, guesses, the tokens"
    llm = LLM('pylm', max_num_seqs=max(batch, 1), speculative_config=METHODS[method])
    p = SamplingParams(temperature=0, max_tokens=max_tokens)
    llm.generate(texts[:1], SamplingParams(temperature=0, max_tokens=4))          # warm up
    t0, outs = time.perf_counter(), []
    for i in range(0, len(texts), batch): outs += llm.generate(texts[i:i + batch], p, use_tqdm=False)
    sec = time.perf_counter() - t0
    m = [o.metrics for o in outs]
    prop, acc, steps = (sum(x[k] for x in m) for k in ('num_spec_proposed', 'num_spec_accepted', 'num_spec_steps'))
    toks = [o.outputs[0].token_ids for o in outs]
    return dict(method=method, batch=batch, requests=len(texts), output_tokens=sum(map(len, toks)),
                seconds=round(sec, 3), output_tok_s=round(sum(map(len, toks)) / sec, 1), proposed=prop,
                accepted=acc, acceptance_rate=round(acc / prop, 3) if prop else None,
                mean_tokens_per_verify_step=round((acc + steps) / steps, 3) if steps else None,
                steps_off=llm.speculator.stats['steps_off'] if llm.speculator else 0, tokens=toks)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--max-tokens', type=int, default=96)
    p.add_argument('--requests', type=int, default=None, help='requests per batch size (default: 8, 16, 64)')
    p.add_argument('--json', help='write the results here')
    a = p.parse_args(argv)
    rows = []
    for batch in (1, 8, 64):
        texts = prompts(a.requests or {1: 8, 8: 16, 64: 64}[batch])
        base = None
        for method in METHODS:
            r = run(method, batch, texts, a.max_tokens)
            base = base or r
            r['identical'] = r['tokens'] == base['tokens']
            r['speedup'] = round(r['output_tok_s'] / base['output_tok_s'], 2)
            rows.append(r)
            print({k: v for k, v in r.items() if k != 'tokens'}, flush=True)
    print(harness.header_line())
    cols = ('batch', 'method', 'output_tok_s', 'speedup', 'acceptance_rate', 'mean_tokens_per_verify_step',
            'steps_off', 'identical')
    print(format_rows([{k: r[k] for k in cols} for r in rows]))
    if a.json:
        harness.write_json(a.json, dict(disable_by_batch_size=DISABLE_BY_BATCH_SIZE, max_tokens=a.max_tokens,
                                        rows=[{k: v for k, v in r.items() if k != 'tokens'} for r in rows]))


if __name__ == '__main__':
    main()
