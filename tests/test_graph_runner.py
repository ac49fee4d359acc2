"""Chapter 15's static decode path against chapter 08's eager runner, under the engine's pressures.

The `GraphRunner` pads a decode-only step to the next captured batch size and runs it from static buffers (on a GPU,
replayed as a CUDA graph). On this CPU the same path is called, with the ladder's padding forced on, and must give
the greedy tokens of the plain `ModelRunner` — under tiny pages, a starved pool that preempts, chunked prefill,
shared prefixes and n > 1 — and, with chapter 14's fused kernels in Triton's interpreter, the tokens of the
no-cache reference; an 8-bit cache written by the fused kernel on the padded path is written where the plain
write puts it, and gives its tokens."""
import random
import pytest
import torch
from minipaged.engine.runner import ModelRunner
from minipaged.engine.sampler import SamplingParams
from minipaged.llm import LLM
from minipaged.model.causal_lm import contiguous_forward, random_model
from minipaged.model.config import tiny_config

MODEL = random_model(tiny_config(), seed=5, std=0.05)


def workload(seed: int, n: int = 10):
    "Ragged prompts, half of them sharing a 12-token prefix"
    rng = random.Random(seed)
    prefix = [rng.randrange(3, 256) for _ in range(12)]
    return [(prefix if i % 2 else []) + [rng.randrange(3, 256) for _ in range(rng.randint(1, 30))] for i in range(n)]


def serve(prompts, params, static: bool, **engine):
    llm = LLM(MODEL, max_num_seqs=6, device='cpu', **engine)
    calls = []
    if static:
        llm.runner.pad = True                                        # pad to the ladder, as on a GPU
        forward = llm.runner.forward_static
        llm.runner.forward_static = lambda rows, **kw: calls.append(rows) or forward(rows, **kw)
    else: llm.runner = llm.core.executor = ModelRunner(MODEL, llm.engine_config.num_blocks,
                                                       llm.engine_config.block_size, llm.backend, 'cpu')
    outs = llm.generate(prompts, params, use_tqdm=False)
    llm.block_manager.check()
    assert not static or calls and set(calls) <= set(llm.runner.sizes)      # decode steps took the padded path
    return [[c.token_ids for c in o.outputs] for o in outs], llm


@pytest.mark.parametrize('engine', [dict(block_size=1, num_blocks=400), dict(block_size=16, num_blocks=12),
                                    dict(block_size=4, num_blocks=40, max_num_batched_tokens=16)],
                         ids=['pages-of-1', 'starved-pool', 'chunked-prefill'])
def test_static_path_matches_eager(engine):
    prompts = workload(len(engine))
    params = [SamplingParams(max_tokens=random.Random(i).randint(3, 14), temperature=0.0, ignore_eos=True,
                             n=2 if i == 3 else 1) for i in range(len(prompts))]
    static, llm = serve(prompts, params, True, **engine)
    eager, _ = serve(prompts, params, False, **engine)
    assert static == eager
    assert llm.runner.inputs.max_rows == 6


def test_fused_kernels_on_the_padded_path_match_the_reference():
    from minipaged.fast.fused import TRITON_OPS                      # Triton's interpreter on a CPU
    model = random_model(tiny_config(), seed=3, std=0.05)
    llm = LLM(model, block_size=4, num_blocks=96, max_num_seqs=6, device='cpu')
    model.ops, llm.runner.pad = TRITON_OPS, True
    prompts = [[(7 * i + j) % 250 + 3 for j in range(3 + 5 * i)] for i in range(3)]
    outs = llm.generate(prompts, SamplingParams(max_tokens=4, temperature=0.0, ignore_eos=True), use_tqdm=False)
    def reference(prompt, n):
        ids = list(prompt)
        for _ in range(n): ids.append(int(contiguous_forward(model, torch.tensor(ids))[-1].argmax()))
        return ids[len(prompt):]
    assert [o.outputs[0].token_ids for o in outs] == [reference(p, 4) for p in prompts]


@pytest.mark.parametrize('fmt', ['int8', 'fp8'])
def test_fused_quantised_write_on_the_padded_path_matches_the_plain_write(fmt):
    """Chapter 14's kernel writes an 8-bit cache on the static path (padding rows: slot -1) where write_kv does:
    the same tokens, the same slots written, values within a code or two (the fused RMSNorm rounds the layers'
    inputs differently in float32's last bits; the write itself is held byte for byte in chapter 14)"""
    from minipaged.fast.fused import TRITON_OPS                      # Triton's interpreter on a CPU
    from minipaged.model.ops import TORCH_OPS
    from minipaged.attention.kv_format import dequantize_kv
    prompts = [[(7 * i + j) % 250 + 3 for j in range(3 + 5 * i)] for i in range(3)]
    runs = []
    for ops in (TORCH_OPS, TRITON_OPS):
        model = random_model(tiny_config(), seed=3, std=0.05)
        llm = LLM(model, block_size=4, num_blocks=96, max_num_seqs=6, device='cpu', kv_cache_dtype=fmt)
        model.ops, llm.runner.pad = ops, True
        outs = llm.generate(prompts, SamplingParams(max_tokens=5, temperature=0.0, ignore_eos=True), use_tqdm=False)
        llm.block_manager.check()
        runs.append(([o.outputs[0].token_ids for o in outs], [[t.clone() for t in layer] for layer in llm.kv_caches]))
    (want, want_cache), (got, got_cache) = runs
    assert got == want
    for (*codes, k_scale, v_scale), (*want_codes, want_k_scale, want_v_scale) in zip(got_cache, want_cache):
        for c, s, wc, ws in zip(codes, (k_scale, v_scale), want_codes, (want_k_scale, want_v_scale)):
            assert torch.equal(s == 1, ws == 1) and int((s != 1).sum()) > 0      # the same slots written
            d, wd = dequantize_kv(c, s), dequantize_kv(wc, ws)
            assert ((d - wd).abs() <= 2 ** -3 * wd.abs() + 2 * ws[..., None]).all()
