"""The checkpoints people have, in miniature: for each family a tiny random checkpoint built by `transformers`
with that family's exact config features (GQA layout, tied embeddings, explicit head_dim, q/k/v biases, the rope
scaling with its type and factors), saved with `save_pretrained` and loaded by minipaged from disk. Greedy
tokens must equal `transformers`' at prompt lengths that cross the scaling's interesting positions (past
`original_max_position_embeddings`, past `max_position_embeddings` for dynamic NTK)."""
import json
import pytest
import torch

transformers = pytest.importorskip('transformers')
from transformers import (LlamaConfig, LlamaForCausalLM, MistralConfig, MistralForCausalLM, Qwen2Config,
                          Qwen2ForCausalLM)
from minipaged.llm import LLM
from minipaged.engine.sampler import SamplingParams
from tiny_hf import hf_greedy, save_tiny

transformers.utils.logging.disable_progress_bar()
BASE = dict(vocab_size=256, intermediate_size=128, num_hidden_layers=2, initializer_range=0.1,
            bos_token_id=None, eos_token_id=None)
L3 = lambda factor: {'rope_type': 'llama3', 'factor': factor, 'low_freq_factor': 1.0, 'high_freq_factor': 4.0,
                     'original_max_position_embeddings': 32}
# name: (config class, model class, config kwargs); trained contexts are small so short prompts cross them
FAMILIES = {
    # Llama 3.2 1B/3B: GQA 4:1, tied embeddings, head_dim given (not hidden / heads), llama3 rope factor 32
    'llama-3.2': (LlamaConfig, LlamaForCausalLM, dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=1,
                  head_dim=32, tie_word_embeddings=True, max_position_embeddings=256,
                  rope_parameters={**L3(32.0), 'rope_theta': 500000.0}, rms_norm_eps=1e-5)),
    # Llama 3.1 8B: untied, llama3 rope factor 8
    'llama-3.1': (LlamaConfig, LlamaForCausalLM, dict(hidden_size=64, num_attention_heads=8, num_key_value_heads=2,
                  tie_word_embeddings=False, max_position_embeddings=256,
                  rope_parameters={**L3(8.0), 'rope_theta': 500000.0})),
    # Qwen2.5 0.5B-7B: q/k/v biases, tied, rope_theta 1e6
    'qwen2.5': (Qwen2Config, Qwen2ForCausalLM, dict(hidden_size=56, num_attention_heads=7, num_key_value_heads=1,
                tie_word_embeddings=True, max_position_embeddings=256, rope_theta=1e6, use_sliding_window=False,
                sliding_window=4096)),
    # Qwen2.5 long context: YaRN factor 4 over an original context of 64 (the older rope_scaling key)
    'qwen2.5-yarn': (Qwen2Config, Qwen2ForCausalLM, dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
                     tie_word_embeddings=True, max_position_embeddings=64, rope_theta=1e6,
                     rope_scaling={'type': 'yarn', 'factor': 4.0, 'original_max_position_embeddings': 64})),
    # SmolLM2 135M: tied, 9 query heads sharing 3 KV heads, rope_theta 1e5
    'smollm2': (LlamaConfig, LlamaForCausalLM, dict(hidden_size=72, num_attention_heads=9, num_key_value_heads=3,
                tie_word_embeddings=True, max_position_embeddings=256, rope_theta=100000.0)),
    'linear': (LlamaConfig, LlamaForCausalLM, dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
               max_position_embeddings=64, rope_parameters={'rope_type': 'linear', 'factor': 2.0, 'rope_theta': 10000.0})),
    'dynamic': (LlamaConfig, LlamaForCausalLM, dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
                max_position_embeddings=64, rope_parameters={'rope_type': 'dynamic', 'factor': 2.0, 'rope_theta': 10000.0})),
    # Mistral 7B v0.2+: a Llama with no sliding window
    'mistral': (MistralConfig, MistralForCausalLM, dict(hidden_size=64, num_attention_heads=8, num_key_value_heads=2,
                max_position_embeddings=256, sliding_window=None, rope_theta=1e6)),
}
PROMPT_LENS, NEW = [5, 30, 40, 100], [40, 20, 30, 20]

def build(name, tmp_path_factory, dtype=torch.float32):
    C, M, kw = FAMILIES[name]
    path = tmp_path_factory.mktemp(name)
    return save_tiny(C, M, dict(BASE, **kw), path, dtype), path

def prompts():
    g = torch.Generator().manual_seed(3)
    return [torch.randint(0, 256, (n,), generator=g).tolist() for n in PROMPT_LENS]

@pytest.fixture(scope='module', params=list(FAMILIES))
def family(request, tmp_path_factory):
    hf, path = build(request.param, tmp_path_factory)
    want = []
    for p, n in zip(prompts(), NEW):
        # dynamic NTK in transformers keeps state across calls (the longest length seen): a fresh model each time
        model = type(hf).from_pretrained(path).eval() if request.param == 'dynamic' else hf
        want.append(hf_greedy(model, p, n))
    return request.param, path, want

def greedy(llm, ps=None, news=NEW):
    sp = [SamplingParams(max_tokens=n, temperature=0.0, ignore_eos=True) for n in news]
    outs = llm.generate(ps or prompts(), sp, use_tqdm=False)
    llm.block_manager.check()
    assert llm.block_manager.num_used_blocks == 0
    return [o.outputs[0].token_ids for o in outs]

def test_greedy_equals_transformers(family):
    name, path, want = family
    assert greedy(LLM(path, block_size=16)) == want

@pytest.mark.parametrize('kw', [dict(block_size=1), dict(block_size=4, max_num_batched_tokens=7),
                                dict(block_size=4, num_blocks=32)], ids=['b1', 'chunked-7', 'starved-pool-preempts'])
def test_paging_chunking_preemption_change_nothing(family, kw):
    name, path, want = family
    llm = LLM(path, **kw)
    assert greedy(llm) == want
    if 'num_blocks' in kw: assert llm.scheduler.counters['preemptions'] > 0

def test_the_config_is_read_as_written(family):
    name, path, _ = family
    cfg = LLM(path).config
    raw = json.loads((path / 'config.json').read_text())
    assert cfg.shape.num_kv_heads == raw['num_key_value_heads'] and cfg.shape.tie_word_embeddings == raw['tie_word_embeddings']
    kind = (raw.get('rope_parameters') or raw.get('rope_scaling') or {}).get('rope_type', 'default')
    assert (cfg.rope_scaling.rope_type if cfg.rope_scaling else 'default') == kind
    if name == 'llama-3.2': assert cfg.shape.head_dim == 32 != raw['hidden_size'] // raw['num_attention_heads']
    if name.startswith('qwen'): assert cfg.shape.attention_bias

def test_bfloat16_checkpoint_loads_and_dtype_chooses_the_compute(tmp_path_factory):
    hf, path = build('llama-3.2', tmp_path_factory, dtype=torch.bfloat16)
    assert json.loads((path / 'config.json').read_text()).get('dtype', json.loads((path / 'config.json').read_text()).get('torch_dtype')) == 'bfloat16'
    llm = LLM(path)
    assert llm.engine_config.dtype == 'bfloat16' and next(llm.model.parameters()).dtype == torch.bfloat16
    assert len(greedy(llm, news=[4] * 4)[0]) == 4
    # float32 compute of the bfloat16 weights: transformers' float32 of the same weights, token for token
    f32 = LLM(path, dtype='float32')
    assert next(f32.model.parameters()).dtype == torch.float32
    hf32 = hf.float()
    assert greedy(f32) == [hf_greedy(hf32, p, n) for p, n in zip(prompts(), NEW)]

def test_generation_config_adds_end_of_sequence_ids(tmp_path_factory):
    hf, path = build('smollm2', tmp_path_factory)
    p = prompts()[1]
    free = hf_greedy(hf, p, 12)
    stop_at = free[5]
    (path / 'generation_config.json').write_text(json.dumps({'eos_token_id': [255 if stop_at != 255 else 254, stop_at]}))
    llm = LLM(path)
    assert stop_at in llm.config.eos_token_ids
    out = llm.generate([p], SamplingParams(max_tokens=12, temperature=0.0))[0].outputs[0]
    assert out.finish_reason == 'stop' and out.token_ids == free[:free.index(stop_at) + 1]

@pytest.mark.parametrize('change, message', [
    (dict(architectures=['GPT2LMHeadModel'], model_type='gpt2'), "architecture 'GPT2LMHeadModel' is not supported"),
    (dict(rope_parameters={'rope_type': 'longrope', 'rope_theta': 1e4, 'factor': 2.0}), "rope_scaling.rope_type 'longrope' is not supported"),
    (dict(rope_parameters={'rope_type': 'llama3', 'rope_theta': 1e4, 'factor': 8.0}), 'rope_scaling (llama3) needs low_freq_factor'),
    (dict(num_hidden_layers=None), 'num_hidden_layers'),
    (dict(hidden_act='gelu'), "hidden_act 'gelu' is not supported"),
    (dict(architectures=['MistralForCausalLM'], model_type='mistral', sliding_window=512), 'sliding_window 512 is larger than the context 128'),
    (dict(architectures=['Qwen2ForCausalLM'], model_type='qwen2', use_sliding_window=True, sliding_window=16,
          layer_types=['full_attention', 'chunked_attention']), "layer_types 'chunked_attention' is not supported"),
], ids=['architecture', 'rope-type', 'rope-fields', 'missing-field', 'activation', 'window-too-long', 'layer-type'])
def test_bad_configs_name_the_file_and_the_field(tmp_path_factory, change, message):
    _, path = build('linear', tmp_path_factory)
    raw = json.loads((path / 'config.json').read_text())
    raw.update(change)
    raw = {k: v for k, v in raw.items() if v is not None}
    (path / 'config.json').write_text(json.dumps(raw))
    with pytest.raises(ValueError) as e: LLM(path)
    assert message in str(e.value) and 'config.json' in str(e.value), str(e.value)

def test_dynamic_rope_prefix_hits_only_between_prompts_of_one_length(tmp_path_factory):
    """Under dynamic NTK a prompt past the trained context (64) has its keys computed at its own length: a
    longer prompt sharing its first 96 tokens must not reuse them (transformers computes it afresh), while
    prompts within the trained context share as usual"""
    hf, path = build('dynamic', tmp_path_factory)
    g = torch.Generator().manual_seed(5)
    base = torch.randint(0, 256, (100,), generator=g).tolist()
    short = base[:40]
    prompts = [base, base + [7], short, short + [9]]
    want = [hf_greedy(type(hf).from_pretrained(path).eval(), p, 12) for p in prompts]
    llm = LLM(path, block_size=16)
    got, cached = [], []
    for p in prompts:                         # one after another: each finds the earlier ones' blocks cached
        out = llm.generate([p], SamplingParams(max_tokens=12, temperature=0.0, ignore_eos=True))[0]
        got.append(out.outputs[0].token_ids); cached.append(out.metrics['num_cached_tokens'])
    assert got == want
    assert cached[1] == 0 and cached[3] == 32           # no hit past the trained context; the short ones share
