"""Chapter 00's first engine against chapter 08's: the plain loop over a contiguous cache (`minipaged.first.loop`)
writes the engine's greedy tokens, on random tiny models of several shapes and on the shipped `pylm`; and a
request that does not fit is refused by name. Fast: no fetched model needed."""
import pytest, torch
from minipaged import LLM, SamplingParams
from minipaged.first.loop import contiguous_cache, generate, stream
from minipaged.model.causal_lm import random_model
from minipaged.model.config import tiny_config
from minipaged.model.fetch import shipped_model
from minipaged.model.checkpoint import load_model

def engine_greedy(model, prompts, n):
    llm = LLM(model)
    outs = llm.generate(prompts, SamplingParams(max_tokens=n, temperature=0.0, ignore_eos=True), use_tqdm=False)
    return [o.outputs[0].token_ids for o in outs]

@pytest.mark.parametrize('kw', [{}, dict(tie_word_embeddings=True)])
def test_loop_writes_the_engines_tokens_on_a_random_model(kw):
    model = random_model(tiny_config(**kw), seed=3, std=0.05)
    prompts = [[5, 9, 2, 200, 7], [1], list(range(30, 60))]
    assert [generate(model, p, 12) for p in prompts] == engine_greedy(model, prompts, 12)

def test_loop_writes_the_engines_tokens_on_pylm():
    model = load_model(shipped_model('pylm'))
    prompts = [[10, 20, 30, 40], [99, 98, 97]]
    assert [generate(model, p, 16) for p in prompts] == engine_greedy(model, prompts, 16)

def test_stream_stops_at_eos_and_refuses_what_does_not_fit():
    model = random_model(tiny_config(), seed=0, std=0.05)
    first = generate(model, [1, 2, 3], 6)
    assert generate(model, [1, 2, 3], 6, eos_token_ids={first[2]})[-1] == first[2]   # ends with the EOS it met
    assert len(generate(model, [1, 2, 3], 6, eos_token_ids={first[2]})) == first.index(first[2]) + 1
    with pytest.raises(ValueError, match='max_len 4 holds no prompt of 3 and 2 new tokens'):
        list(stream(model, [1, 2, 3], 2, max_len=4))
    with pytest.raises(ValueError, match='max_len must be a positive integer'):
        contiguous_cache(model, 0)
