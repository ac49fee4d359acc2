"""Speculative decoding (chapter 11) under everything else the engine does: greedy outputs identical to the
engine without guessing for both methods, k = 1..8, block sizes 1/4/16, prefix sharing, n > 1, preemption in a
starved pool, chunked prefill, cancellation mid-verification; stop strings and logprobs; no block leaked in
either pool, and no rejected guess ever a prefix-cache hit."""
from dataclasses import replace
import pytest
from minipaged import LLM, SamplingParams
from minipaged.model.causal_lm import random_model
from minipaged.model.config import tiny_config
from minipaged.testing.engine import check_engine

TARGET = random_model(tiny_config(), seed=0)
DRAFT = random_model(tiny_config(), seed=3)          # disagrees with the target: most guesses are rejected
PREFIX = [11, 12, 13, 14, 15, 16, 17, 18, 19, 20]
PROMPTS = [[5, 6, 7, 8, 5, 6, 7], PREFIX + [1, 2, 3], PREFIX + [4, 4], [9] * 12, list(range(30, 60))]


def spec(method, k, **kw):
    "Guessing at every batch size (the default rule would turn it off for the larger test batches)"
    kw.setdefault('disable_by_batch_size', 10_000)
    if method == 'ngram': return dict(method='ngram', num_speculative_tokens=k, prompt_lookup_min=1,
                                      prompt_lookup_max=3, **kw)
    return dict(method='draft_model', num_speculative_tokens=k, model=kw.pop('model', DRAFT), **kw)


def run(llm, params, prompts=PROMPTS):
    "Step the engine to the end, checking every invariant after every step; the tokens of every sample"
    ids = [llm.add_request(p, params) for p in prompts]
    outs = {}
    while llm.has_unfinished_requests():
        outs |= {o.request_id: o for o in llm.step() if o.finished}
        check_engine(llm)
        if llm.speculator is not None and hasattr(llm.speculator, 'bm'): llm.speculator.bm.check()
    return [[c.token_ids for c in outs[i].outputs] for i in ids], [outs[i] for i in ids]


def assert_drained(llm):
    for bm in [llm.block_manager] + ([llm.speculator.bm] if hasattr(llm.speculator, 'bm') else []):
        bm.check()
        assert bm.num_used_blocks == 0, 'a block is still referenced after every request ended'


def same_as_plain(llm, params, prompts=PROMPTS) -> list:
    "Serve `prompts` with `llm` and with the same engine without guessing: equal tokens, both pools drained"
    want, _ = run(LLM(llm.model, config=replace(llm.engine_config, speculative_config=None)), params, prompts)
    got, outs = run(llm, params, prompts)
    assert got == want
    assert_drained(llm)
    return outs


@pytest.mark.parametrize('method', ['ngram', 'draft_model'])
@pytest.mark.parametrize('k', [1, 3, 8])
@pytest.mark.parametrize('block_size', [1, 4, 16])
def test_greedy_identical(method, k, block_size):
    params = SamplingParams(temperature=0, max_tokens=24, n=2 if k == 3 else 1)
    kw = dict(block_size=block_size, num_blocks=2048 // block_size)
    # a draft that rejects nearly everything, or (block size 4) the target itself, which accepts everything
    extra = dict(model=TARGET) if method == 'draft_model' and block_size == 4 else {}
    outs = same_as_plain(LLM(TARGET, speculative_config=spec(method, k, **extra), **kw), params)
    assert sum(o.metrics['num_spec_proposed'] for o in outs) > 0


@pytest.mark.parametrize('method', ['ngram', 'draft_model'])
def test_starved_pool_chunked_prefill(method):
    "A pool that preempts and a 7-token budget that chunks every prompt: still the same tokens"
    kw = dict(block_size=4, num_blocks=18, max_num_batched_tokens=7, max_model_len=64)
    llm = LLM(TARGET, speculative_config=spec(method, 4), **kw)
    same_as_plain(llm, SamplingParams(temperature=0, max_tokens=30))
    assert llm.scheduler.counters['preemptions'] > 0


def test_trained_model_greedy_identical():
    "The course's model and its shipped draft, on held-out code prompts"
    import json
    from minipaged.model.fetch import shipped_model
    texts = [json.loads(l)['prompt'] for l in (shipped_model() / 'prompts.jsonl').read_text().splitlines()[:6]]
    params = SamplingParams(temperature=0, max_tokens=40)
    want = [o.outputs[0].token_ids for o in LLM('pylm').generate(texts, params)]
    for cfg in (spec('ngram', 4), spec('draft_model', 3, model='pylm-draft')):
        llm = LLM('pylm', speculative_config=cfg)
        outs = llm.generate(texts, params)
        assert [o.outputs[0].token_ids for o in outs] == want, cfg['method']
        assert sum(o.metrics['num_spec_accepted'] for o in outs) > 0
        assert_drained(llm)


@pytest.mark.parametrize('method', ['ngram', 'draft_model'])
def test_cancel_mid_verification(method):
    "A request aborted while its verifying step runs: it ends cancelled, the others are unchanged, nothing leaks"
    params = SamplingParams(temperature=0, max_tokens=30)
    want, _ = run(LLM(TARGET, block_size=4, num_blocks=256), params)
    llm = LLM(TARGET, block_size=4, num_blocks=256, speculative_config=spec(method, 4, model=TARGET)
              if method == 'draft_model' else spec(method, 4))
    ids = [llm.add_request(p, params) for p in PROMPTS]
    execute, hit = llm.runner.execute, []
    def cancelling(work):          # after the verifying forward ran, before its guesses are judged
        logits, batch = execute(work), llm.last_batch
        if batch.num_verify_rows and not hit:
            victim = batch.requests[batch.num_decode_rows]
            hit.append(victim.request_id[0]); llm.abort(victim.request_id[0])
        return logits
    llm.runner.execute = cancelling
    outs = {}
    while llm.has_unfinished_requests():
        outs |= {o.request_id: o for o in llm.step() if o.finished}; check_engine(llm)
    assert hit and outs[hit[0]].outputs[0].finish_reason == 'cancelled'
    for i, rid in enumerate(ids):
        if rid != hit[0]: assert outs[rid].outputs[0].token_ids == want[i][0]
    assert_drained(llm)


def test_rejected_guess_never_cached():
    "After every verifying step, each registered block's tokens are tokens the request kept"
    llm = LLM(TARGET, block_size=2, num_blocks=512, speculative_config=spec('draft_model', 4))
    bm, seen = llm.block_manager, []
    update = llm.scheduler._update_verified
    def watched(batch, sampled, now):
        update(batch, sampled, now)
        for rid, seq in bm._seqs.items():
            req = llm.scheduler.requests.get(rid)
            if req is None: continue
            for i, b in enumerate(seq.blocks):
                if bm.cache.key[b] is not None:
                    assert list(bm.cache.content[b][2]) == req.all_token_ids[i * 2:(i + 1) * 2], 'a guess was cached'
                    seen.append(b)
    llm.scheduler._update_verified = watched
    outs = llm.generate(PROMPTS, SamplingParams(temperature=0, max_tokens=24))
    assert seen and sum(o.metrics['num_spec_proposed'] - o.metrics['num_spec_accepted'] for o in outs) > 0
    assert_drained(llm)


def test_stop_strings_and_logprobs(tmp_path):
    "A stop string inside the accepted guesses ends the text there, as without guessing; logprobs per token"
    from minipaged.testing.text import tiny_text_checkpoint
    path = tiny_text_checkpoint(tmp_path)
    base = LLM(path)
    text = base.generate(['hello world'], SamplingParams(temperature=0, max_tokens=30))[0].outputs[0].text
    stop = text[len(text) // 2:len(text) // 2 + 2] if len(text) > 4 else 'zz'
    params = SamplingParams(temperature=0, max_tokens=30, stop=[stop], logprobs=2)
    want = base.generate(['hello world'], params)[0].outputs[0]
    llm = LLM(path, speculative_config=spec('ngram', 4))
    got = llm.generate(['hello world'], params)[0].outputs[0]
    assert (got.text, got.token_ids, got.finish_reason, got.stop_reason) == \
           (want.text, want.token_ids, want.finish_reason, want.stop_reason)
    assert len(got.logprobs) == len(got.token_ids)
    for a, b in zip(got.logprobs, want.logprobs):
        assert list(a) == list(b) and all(abs(a[t].logprob - b[t].logprob) < 1e-4 for t in a)
    assert abs(got.cumulative_logprob - want.cumulative_logprob) < 1e-3
    assert_drained(llm)


def test_bad_config():
    for cfg, msg in [(dict(method='ngram', num_speculative_tokens=0), 'speculative_config.num_speculative_tokens'),
                     (dict(method='eagle', num_speculative_tokens=2), 'speculative_config.method'),
                     (dict(method='ngram', num_speculative_tokens=2, typo=1), "unknown key 'typo'"),
                     (dict(method='draft_model', num_speculative_tokens=2), 'speculative_config.model')]:
        with pytest.raises(ValueError, match=msg.replace('(', r'\(')): LLM(TARGET, num_blocks=8, speculative_config=cfg)


def test_decodes_left_out_of_a_step():
    "More decoding samples than the token budget: some are not scheduled, and their draft has nothing new"
    llm = LLM(TARGET, block_size=4, num_blocks=128, max_num_seqs=4, max_num_batched_tokens=2,
              speculative_config=spec('draft_model', 3, model=TARGET))
    same_as_plain(llm, SamplingParams(temperature=0, max_tokens=16, n=4), [[5, 6, 7, 8, 5, 6, 7]])


def test_draft_failure_costs_only_guesses():
    "The draft model raising once: that step guesses nothing, the engine goes on, the tokens are unchanged"
    draft = random_model(tiny_config(), seed=0)
    llm = LLM(TARGET, block_size=4, num_blocks=128, speculative_config=spec('draft_model', 3, model=draft))
    forward, calls = draft.forward, []
    def flaky(*a, **kw):
        calls.append(1)
        if len(calls) == 2: raise RuntimeError('injected: draft failed')
        return forward(*a, **kw)
    draft.forward = flaky
    outs = same_as_plain(llm, SamplingParams(temperature=0, max_tokens=20))
    assert llm.speculator.stats['failures'] == 1
    assert sum(o.metrics['num_spec_accepted'] for o in outs) > 0      # it guessed again after the failure
