"""Models with a sliding window against the outside reference: tiny random checkpoints built by `transformers`
in Mistral's layout (every layer slides), Qwen2's (`use_sliding_window`, `max_window_layers=0`) and a Qwen2
that mixes a full and a windowed layer, saved with `save_pretrained` and served by `LLM(path)`. Greedy tokens
must equal `transformers`' `generate` for prompts and generations that cross the window several times, under
tiny pages, chunked prefill, a starved pool that preempts, prefix sharing and `n > 1`; and a long generation
holds at most a window's worth of blocks (plus one page) when every layer slides."""
import pytest
import torch

transformers = pytest.importorskip('transformers')
from transformers import MistralConfig, MistralForCausalLM, Qwen2Config, Qwen2ForCausalLM
from minipaged.llm import LLM
from minipaged.engine.sampler import SamplingParams
from minipaged.utils import cdiv
from tiny_hf import hf_greedy, save_tiny

transformers.utils.logging.disable_progress_bar()
BASE = dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=8,
            num_key_value_heads=2, max_position_embeddings=512, initializer_range=0.1, rope_theta=10000.0,
            bos_token_id=None, eos_token_id=None)      # no EOS: both sides generate exactly max_new_tokens
# name: (config class, model class, the window's keys, the window)
WINDOWED = {
    'mistral': (MistralConfig, MistralForCausalLM, dict(sliding_window=16), 16),
    'qwen2': (Qwen2Config, Qwen2ForCausalLM, dict(use_sliding_window=True, sliding_window=24, max_window_layers=0), 24),
    'qwen2-mixed': (Qwen2Config, Qwen2ForCausalLM, dict(use_sliding_window=True, sliding_window=16, max_window_layers=1), 16),
}
PROMPT_LENS, NEW = [5, 40, 70, 100], [60, 40, 30, 24]      # prompt + generation: 65 to 124 tokens, windows of 16-24

def build(name, tmp_path_factory, attn='sdpa'):
    C, M, kw, _ = WINDOWED[name]
    path = tmp_path_factory.mktemp(name)
    return save_tiny(C, M, dict(BASE, **kw, attn_implementation=attn), path), path

def prompts():
    g = torch.Generator().manual_seed(3)
    ps = [torch.randint(0, 256, (n,), generator=g).tolist() for n in PROMPT_LENS]
    shared = torch.randint(0, 256, (48,), generator=g).tolist()
    return ps + [shared + [1, 2, 3], shared + list(range(40, 60))]      # a common prefix of 48 tokens: shared

NEWS = NEW + [30, 20]
# a pool that preempts: eight short prompts admitted at 2-3 blocks each, each growing to a window's blocks (or, in
# the mixed model, which keeps every block, to 18 blocks)
STARVED = {'mistral': 16, 'qwen2': 16, 'qwen2-mixed': 24}

@pytest.fixture(scope='module', params=list(WINDOWED))
def windowed(request, tmp_path_factory):
    hf, path = build(request.param, tmp_path_factory)
    return request.param, hf, path, [hf_greedy(hf, p, n) for p, n in zip(prompts(), NEWS)]

def greedy(llm, ps=None, news=NEWS, n=1):
    sp = [SamplingParams(max_tokens=k, temperature=0.0, ignore_eos=True, n=n) for k in news]
    outs = llm.generate(ps or prompts(), sp, use_tqdm=False)
    llm.block_manager.check()
    assert llm.block_manager.num_used_blocks == 0
    return [[s.token_ids for s in o.outputs] for o in outs]

def test_the_window_is_read_as_written(windowed):
    name, _, path, _ = windowed
    cfg, window = LLM(path).config, WINDOWED[name][3]
    if name == 'qwen2-mixed': assert cfg.layer_windows == (None, window) and cfg.kv_window is None
    else: assert cfg.layer_windows == (window, window) and cfg.kv_window == window

@pytest.mark.parametrize('kw', [dict(block_size=4), dict(block_size=8, max_num_batched_tokens=7),
                                dict(block_size=8, attention_backend='torch')], ids=['b4', 'chunked-7', 'reference-backend'])
def test_greedy_equals_transformers(windowed, kw):
    name, _, path, want = windowed
    llm = LLM(path, **kw)
    assert [o[0] for o in greedy(llm)] == want
    m = llm.block_manager.metrics()
    if 'max_num_batched_tokens' in kw: assert m['prefix_hit_tokens'] >= 48      # the shared prefix hits

def test_a_starved_pool_preempts_and_changes_nothing(windowed):
    name, hf, path, _ = windowed
    g = torch.Generator().manual_seed(7)
    ps = [torch.randint(0, 256, (4 + i,), generator=g).tolist() for i in range(8)]     # 64 to 71 tokens each
    want = [hf_greedy(hf, p, 60) for p in ps]
    llm = LLM(path, block_size=4, num_blocks=STARVED[name])
    assert [o[0] for o in greedy(llm, ps, [60] * 8)] == want
    assert llm.scheduler.counters['preemptions'] > 0

def test_n_greedy_samples_are_equal(windowed):
    name, _, path, want = windowed
    got = greedy(LLM(path, block_size=4), news=NEWS, n=3)
    assert got == [[w] * 3 for w in want]

def test_a_long_generation_holds_a_window_of_blocks(windowed):
    """Ten windows' worth of tokens from a short prompt: when every layer slides, the pool's high-water mark
    is a window's blocks plus one page; a model with a full layer keeps every block"""
    name, hf, path, _ = windowed
    window, B = WINDOWED[name][3], 4
    prompt, new = prompts()[0], 10 * window
    llm = LLM(path, block_size=B, enable_prefix_caching=False)
    got = llm.generate([prompt], SamplingParams(max_tokens=new, temperature=0.0, ignore_eos=True), use_tqdm=False)
    assert got[0].outputs[0].token_ids == hf_greedy(hf, prompt, new)
    high = llm.block_manager.metrics()['high_water']
    if name == "qwen2-mixed": assert high == cdiv(len(prompt) + new - 1, B)      # the last token is never written
    else: assert high <= cdiv(window, B) + 1, (high, cdiv(window, B) + 1)

def test_transformers_applies_the_window(tmp_path_factory):
    """The reference has teeth: `transformers`' eager and SDPA attention give the same tokens with the window,
    and the same weights without it give different ones on a prompt longer than the window"""
    hf, path = build('mistral', tmp_path_factory)
    eager, _ = build('mistral', tmp_path_factory, attn='eager')
    p = prompts()[2]
    with_window = hf_greedy(hf, p, 30)
    assert hf_greedy(eager, p, 30) == with_window
    hf.config.sliding_window = None
    full = MistralForCausalLM(hf.config).eval()
    full.load_state_dict(hf.state_dict())
    assert hf_greedy(full, p, 30) != with_window


@pytest.mark.parametrize('backend', ['torch', 'sdpa', 'triton'])
def test_a_context_longer_than_the_pool_is_served_by_every_backend(backend):
    "With every layer windowed, a request may outgrow the whole pool: each backend checks only the pages it reads"
    from minipaged.model.config import tiny_config
    cfg = tiny_config('MistralForCausalLM', sliding_window=8, num_layers=1)
    params = SamplingParams(max_tokens=40, temperature=0.0, ignore_eos=True)
    roomy = LLM(cfg, block_size=4, num_blocks=64, attention_backend=backend)
    want = roomy.generate([[1, 2, 3]], params, use_tqdm=False)[0].outputs[0].token_ids
    starved = LLM(cfg, block_size=4, num_blocks=6, attention_backend=backend)      # 24 slots for 42 tokens
    out = starved.generate([[1, 2, 3]], params, use_tqdm=False)[0].outputs[0]
    assert (out.token_ids, out.finish_reason) == (want, 'length')
    assert starved.block_manager.metrics()['high_water'] <= 8 // 4 + 1
