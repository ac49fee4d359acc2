"""The engine against the outside reference: greedy tokens identical to `transformers`' `generate`.

Tiny random Llama and Qwen2 models are built by `transformers` and saved with `save_pretrained`
(the Llama sharded) into a temporary directory; minipaged loads them from disk like any checkpoint."""
import warnings
import pytest
import torch

transformers = pytest.importorskip('transformers')
from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM
from minipaged.llm import LLM
from minipaged.engine.sampler import SamplingParams

transformers.utils.logging.disable_progress_bar()
SHAPE = dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=8,
             num_key_value_heads=2, max_position_embeddings=512, initializer_range=0.1,
             bos_token_id=None, eos_token_id=None)      # no EOS: both sides generate exactly max_new_tokens
ARCHS = {'llama': (LlamaConfig, LlamaForCausalLM, dict(rope_theta=5000.0)),
         'qwen2': (Qwen2Config, Qwen2ForCausalLM, dict(tie_word_embeddings=True))}

@pytest.fixture(scope='module', params=list(ARCHS))
def checkpoint(request, tmp_path_factory):
    C, M, extra = ARCHS[request.param]
    torch.manual_seed(0)
    hf = M(C(**SHAPE, **extra)).eval()
    path = tmp_path_factory.mktemp(request.param)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        hf.save_pretrained(path, max_shard_size='200KB' if request.param == 'llama' else '1GB')
    return hf, path

def ragged_prompts(seed=0, n=8):
    g = torch.Generator().manual_seed(seed)
    lens = [1, 7, 16, 33, 64, 100][:n] + [int(x) for x in torch.randint(2, 100, (max(0, n - 6),), generator=g)]
    return [torch.randint(0, 256, (L,), generator=g).tolist() for L in lens]

def hf_greedy(hf, prompt, new, eos=None):
    with torch.no_grad():
        out = hf.generate(torch.tensor([prompt]), attention_mask=torch.ones(1, len(prompt), dtype=torch.long), max_new_tokens=new,
                          do_sample=False, pad_token_id=0, eos_token_id=eos)
    return out[0, len(prompt):].tolist()

@pytest.fixture(scope='module')
def reference(checkpoint):
    hf, path = checkpoint
    prompts = ragged_prompts()
    g = torch.Generator().manual_seed(1)
    news = [int(x) for x in torch.randint(20, 61, (len(prompts),), generator=g)]
    shared = torch.randint(0, 256, (70,), generator=g).tolist()
    prompts += [shared + [1, 2, 3], shared + [9], shared + list(range(40, 60))]      # prefix-cache hits
    news += [24, 30, 20]
    return prompts, news, [hf_greedy(hf, p, n) for p, n in zip(prompts, news)]

def run(path, prompts, news, **kw):
    llm = LLM(path, **kw)
    outs = llm.generate(prompts, [SamplingParams(max_tokens=n, temperature=0.0, ignore_eos=True) for n in news], use_tqdm=False)
    llm.block_manager.check()
    assert llm.block_manager.num_used_blocks == 0
    return [o.outputs[0].token_ids for o in outs], llm

def test_one_prompt_at_a_time(checkpoint, reference):
    _, path = checkpoint
    prompts, news, want = reference
    llm = LLM(path, block_size=16)
    for p, n, w in zip(prompts, news, want):
        assert llm.generate([p], SamplingParams(max_tokens=n, temperature=0.0, ignore_eos=True))[0].outputs[0].token_ids == w

@pytest.mark.parametrize('kw', [dict(block_size=16), dict(block_size=1), dict(block_size=32), dict(block_size=16, max_num_batched_tokens=5),
                                dict(block_size=8, num_blocks=24), dict(block_size=16, enable_prefix_caching=False),
                                dict(block_size=16, attention_backend='torch'), dict(block_size=8, num_blocks=24, attention_backend='torch')],
                         ids=['continuous-b16', 'b1', 'b32', 'chunked-5', 'tiny-pool-preempts', 'no-prefix-cache', 'reference-backend', 'reference-backend-preempts'])
def test_all_together(checkpoint, reference, kw):
    _, path = checkpoint
    prompts, news, want = reference
    got, llm = run(path, prompts, news, **kw)
    assert got == want
    m, c = llm.block_manager.metrics(), llm.scheduler.counters
    if kw.get('num_blocks'): assert c['preemptions'] > 0
    if kw.get('max_num_batched_tokens'): assert m['prefix_hit_tokens'] >= 64     # admitted one after another: the shared prefix hits

def test_triton_backend_under_the_interpreter(checkpoint, reference):
    pytest.importorskip('triton')
    _, path = checkpoint
    prompts, news, want = reference
    idx = [0, 1, 7]
    got, _ = run(path, [prompts[i] for i in idx], [min(news[i], 8) for i in idx], block_size=16, attention_backend='triton')
    assert got == [want[i][:min(news[i], 8)] for i in idx]

def test_paged_logits_match_contiguous(checkpoint, reference):
    """Every logits row the engine samples from equals the cache-free contiguous forward within 1e-4 (float32)."""
    from minipaged.model.causal_lm import contiguous_forward
    _, path = checkpoint
    prompts, news, want = reference
    llm = LLM(path, block_size=4, max_num_batched_tokens=9)        # chunked prefill over small pages
    rows, orig = [], llm.model.compute_logits
    llm.model.compute_logits = lambda h: rows.append(orig(h)) or rows[-1]
    idx = [2, 3, 8]
    got = llm.generate([prompts[i] for i in idx], [SamplingParams(max_tokens=6, temperature=0.0, ignore_eos=True)] * 3)
    steps = torch.cat(rows)                                         # every sampled row, in step order
    for i, o in zip(idx, got):
        full = torch.tensor(prompts[i] + o.outputs[0].token_ids)
        ref = contiguous_forward(llm.model, full)[len(prompts[i]) - 1:-1]   # the logits that produced each new token
        hits = [(steps - r).abs().amax(-1).min().item() for r in ref]
        assert max(hits) < 1e-4

def test_parallel_samples_share_blocks_and_match_alone(checkpoint):
    _, path = checkpoint
    llm = LLM(path, block_size=16)
    prompt = list(range(5, 69))                                     # 64 tokens: 4 full blocks
    sp = SamplingParams(n=3, temperature=0.8, top_k=50, seed=11, max_tokens=12, ignore_eos=True)
    rid = llm.add_request(prompt, sp)
    peak, final = 0, None
    while llm.has_unfinished_requests():
        for o in llm.step():
            if o.finished: final = o
        peak = max(peak, llm.block_manager.num_used_blocks)
    assert peak <= 4 + 3                                            # the 4 prompt blocks once, one new block per sample
    for i, out in enumerate(final.outputs):
        alone = LLM(path, block_size=16).generate([prompt], SamplingParams(temperature=0.8, top_k=50, seed=11 + i, max_tokens=12, ignore_eos=True))
        assert out.token_ids == alone[0].outputs[0].token_ids

def test_stop_token_matches_transformers_eos(checkpoint, reference):
    """A stop token ends generation where `transformers` stops at the same token as EOS (the stop token is kept)."""
    hf, path = checkpoint
    prompts, news, want = reference
    i = next(k for k, w in enumerate(want) if len(set(w[:10])) > 3)
    stop = want[i][5]
    first = want[i].index(stop)
    ref = hf_greedy(hf, prompts[i], news[i], eos=stop)
    got = LLM(path).generate([prompts[i]], SamplingParams(max_tokens=news[i], temperature=0.0, stop_token_ids=[stop]))[0].outputs[0]
    assert got.token_ids == ref[:first + 1] == want[i][:first + 1] and got.finish_reason == 'stop'
