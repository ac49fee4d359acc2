"""The engine on a quantised KV cache (`kv_cache_dtype='fp8'` / `'int8'`, chapter 03c; the engine's side in 08,
08a, 13): every supported family is served, with 8-bit pages and a float32 scale per token and KV head in every
layer's cache entry; the pool holds the blocks chapter 00a's formula (with the scales' bytes) gives, and the
engine's caches take exactly those bytes; greedy tokens on a quantised cache are unchanged by paging and by the
engine's mechanisms — prefix caching, copy-on-write (`n > 1`), preemption, chunked prefill, speculative decoding,
tensor parallelism — each equal to the plain quantised run (one prompt at a time, large pages, nothing shared);
and an unknown `kv_cache_dtype` is refused in one line that names it.

Quantisation rounds each key and value to 8 bits, so a quantised run's tokens are not the unquantised run's (chapter
03c measures by how much); but it is deterministic per token and head, so nothing the engine does around it may
change a token. At tensor parallelism 2 the row-parallel sums round differently, as at full precision, so a token
may differ there only at a near-tie (chapter 13's rule, with the gap the 8-bit rounding can move a logit by)."""
import pytest
import torch

transformers = pytest.importorskip('transformers')
from transformers import LlamaConfig, LlamaForCausalLM, MistralConfig, MistralForCausalLM, Qwen2Config, Qwen2ForCausalLM
from minipaged.llm import LLM
from minipaged.engine.sampler import SamplingParams
from minipaged.attention.kv_format import QUANTISED_KV, SCALE_BYTES, kv_cache_dtype_name, kv_storage_dtype
from minipaged.utils import MiB
from tiny_hf import save_tiny

transformers.utils.logging.disable_progress_bar()
FORMATS = ('fp8', 'int8')
BASE = dict(vocab_size=256, intermediate_size=128, num_hidden_layers=2, initializer_range=0.1, bos_token_id=None,
            eos_token_id=None, max_position_embeddings=256)
FAMILIES = {
    'llama-gqa': (LlamaConfig, LlamaForCausalLM, dict(hidden_size=64, num_attention_heads=8, num_key_value_heads=2)),
    'qwen2-bias': (Qwen2Config, Qwen2ForCausalLM, dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
                   tie_word_embeddings=True, rope_theta=1e6, use_sliding_window=False)),
    'mistral': (MistralConfig, MistralForCausalLM, dict(hidden_size=64, num_attention_heads=8, num_key_value_heads=2,
                sliding_window=None, rope_theta=1e6)),
    # every layer slides a window of 16: the block manager frees what the window left behind (chapter 05)
    'mistral-window': (MistralConfig, MistralForCausalLM, dict(hidden_size=64, num_attention_heads=8,
                       num_key_value_heads=2, sliding_window=16, rope_theta=1e6)),
}
PROMPT_LENS, NEW = [5, 30, 47], [20, 16, 12]
NEAR_TIE = 2e-2        # tensor parallelism: tokens may part only where the one-rank top-2 logprobs are this close
SMOL = 'smollm2-135m-instruct'


def build(name, tmp_path_factory):
    C, M, kw = FAMILIES[name]
    path = tmp_path_factory.mktemp(name)
    save_tiny(C, M, dict(BASE, **kw), path)
    return path

def prompts(vocab=256, lens=PROMPT_LENS):
    g = torch.Generator().manual_seed(3)
    return [torch.randint(0, vocab, (n,), generator=g).tolist() for n in lens]

def greedy(new, **kw): return SamplingParams(max_tokens=new, temperature=0.0, ignore_eos=True, **kw)

def tokens(llm, ps, news=NEW, **kw):
    "Greedy tokens of every prompt in one batch; the block manager's invariants checked after"
    outs = llm.generate(ps, [greedy(n, **kw) for n in news], use_tqdm=False)
    llm.block_manager.check()
    return [o.outputs[0].token_ids for o in outs]

def plain(model, ps, news, fmt, **kw):
    "The plain quantised run: each prompt alone on a fresh engine, pages of 16, no prefix cache, no chunking"
    return [tokens(LLM(model, block_size=16, num_blocks=64, enable_prefix_caching=False, kv_cache_dtype=fmt,
                       **kw), [p], [n])[0] for p, n in zip(ps, news)]

def check_cache(llm, fmt):
    "Every layer's entry: 8-bit K and V pages, then float32 scales [blocks, block_size, kv heads]"
    s, c = llm.rank_shape, llm.engine_config
    assert s.kv_dtype == kv_cache_dtype_name(fmt, c.dtype) and s.kv_dtype in QUANTISED_KV
    for layer in llm.kv_caches:
        k, v, ks, vs = layer
        assert k.dtype == v.dtype == kv_storage_dtype(s.kv_dtype) and ks.dtype == vs.dtype == torch.float32
        assert k.shape == v.shape == (c.num_blocks, c.block_size, s.num_kv_heads, s.head_dim)
        assert ks.shape == vs.shape == (c.num_blocks, c.block_size, s.num_kv_heads)


@pytest.fixture(scope='module')
def gqa(tmp_path_factory):
    return build('llama-gqa', tmp_path_factory)

@pytest.fixture(scope='module', params=FORMATS)
def fmt(request):
    return request.param

@pytest.fixture(scope='module')
def want(gqa, fmt):
    "The plain quantised run of the prompts on the GQA checkpoint"
    return plain(gqa, prompts(), NEW, fmt)


@pytest.mark.parametrize('family', list(FAMILIES))
@pytest.mark.parametrize('backend', ['torch', 'sdpa'])
def test_every_family_is_served_paged_as_plain(tmp_path_factory, family, backend, fmt):
    path = build(family, tmp_path_factory)
    llm = LLM(path, block_size=4, num_blocks=96, kv_cache_dtype=fmt, attention_backend=backend)
    check_cache(llm, fmt)
    got = tokens(llm, prompts())
    assert [len(t) for t in got] == NEW
    assert got == plain(path, prompts(), NEW, fmt, attention_backend=backend)
    if family == 'mistral-window':                         # blocks behind the window were given back
        assert llm.block_manager.window == 16


@pytest.mark.parametrize('family', ['llama-gqa', 'mistral-window'])
def test_the_triton_kernels_serve_it_paged_as_plain(tmp_path_factory, family, fmt):
    "Chapter 04's kernels (Triton's interpreter on a CPU) read the 8-bit pages too: a shorter run, paged as plain"
    path = build(family, tmp_path_factory)
    ps, news = prompts(lens=[5, 30]), [8, 8]
    llm = LLM(path, block_size=4, num_blocks=96, kv_cache_dtype=fmt, attention_backend='triton')
    assert tokens(llm, ps, news) == plain(path, ps, news, fmt, attention_backend='triton')


def test_the_pool_holds_what_the_formula_with_scales_gives(gqa):
    per_token = {}
    for fmt in ('auto',) + FORMATS:
        llm = LLM(gqa, block_size=16, memory_bytes=64 * MiB, kv_cache_dtype=fmt)
        s, c = llm.rank_shape, llm.engine_config
        b = 4 if fmt == 'auto' else 1                          # float32 weights: 'auto' pages are float32
        scales = 0 if fmt == 'auto' else SCALE_BYTES
        per_token[fmt] = 2 * s.num_layers * s.num_kv_heads * (s.head_dim * b + scales)
        assert s.kv_bytes_per_token == per_token[fmt], (fmt, s.kv_bytes_per_token, per_token[fmt])
        assert c.num_blocks == llm.budget.kv_pool_bytes // (c.block_size * per_token[fmt])
        held = sum(t.numel() * t.element_size() for layer in llm.kv_caches for t in layer)
        assert held == c.num_blocks * c.block_size * per_token[fmt]       # the caches, scales included
        assert llm.block_manager.context.kv_dtype == s.kv_dtype             # the prefix cache's key
    assert per_token['fp8'] == per_token['int8'] < per_token['auto'] / 2     # head_dim 8: 8 + 4 bytes against 32


def test_the_workspace_is_budgeted_as_the_dequantised_buffers_it_grows_to(gqa, fmt):
    "The CPU path gathers 8-bit pages dequantised, in float32: the budget counts those buffers at their bound"
    llm = LLM(gqa, block_size=16, memory_bytes=64 * MiB, kv_cache_dtype=fmt)
    tokens(llm, prompts(), NEW)
    ws, s = llm.backend.workspace, llm.rank_shape
    assert ws.k.dtype == ws.v.dtype == torch.float32 and ws.k.shape[1:] == (s.num_kv_heads, s.head_dim)
    k, v = ws.buffers(ws.max_rows, llm.kv_caches[0][0], torch.float32)       # grown to its bound
    assert k.shape[0] == ws.max_rows and llm.budget.fixed['workspace'] == k.nbytes + v.nbytes


@pytest.mark.parametrize('memory', [16 * MiB, 64 * MiB])
def test_an_fp8_pool_holds_at_most_the_byte_ratio_more_blocks(gqa, memory):
    """The same memory: an fp8 pool of a float32 model holds 4d / (d + 4) times the blocks of the 'auto' one
    (each pool rounded down to whole blocks), as every other term of the budget is the same"""
    n = {f: LLM(gqa, block_size=16, memory_bytes=memory, kv_cache_dtype=f).engine_config.num_blocks
         for f in ('auto', 'fp8')}
    d = LLM(gqa, block_size=16, num_blocks=8).rank_shape.head_dim
    ratio = 4 * d / (d + 4)
    assert ratio * n['auto'] - 1 < n['fp8'] < ratio * (n['auto'] + 1), (n, ratio)


def test_prefix_caching_on_and_off(gqa, fmt):
    shared = prompts(lens=[40])[0]
    ps, news = [shared + [1, 2], shared + [3], shared[:9]], [12, 12, 8]
    base = plain(gqa, ps, news, fmt)
    for caching in (True, False):
        llm = LLM(gqa, block_size=4, num_blocks=96, kv_cache_dtype=fmt, enable_prefix_caching=caching)
        got = [tokens(llm, [p], [n])[0] for p, n in zip(ps, news)]      # one after another: the later ones hit
        assert got == base, caching
        assert (llm.block_manager.metrics()['prefix_hit_tokens'] > 0) == caching


def test_copy_on_write_n_samples(gqa, fmt, want):
    llm = LLM(gqa, block_size=4, num_blocks=96, kv_cache_dtype=fmt)
    ps = prompts()
    outs = llm.generate(ps, [greedy(n, n=3) for n in NEW], use_tqdm=False)
    assert [[c.token_ids for c in o.outputs] for o in outs] == [[w] * 3 for w in want]
    assert llm.block_manager.metrics()['cow_copies'] > 0


def test_preemption_in_a_starved_pool(gqa, fmt, want):
    llm = LLM(gqa, block_size=4, num_blocks=24, max_num_batched_tokens=16, kv_cache_dtype=fmt)
    assert tokens(llm, prompts()) == want
    assert llm.scheduler.counters['preemptions'] > 0


def test_chunked_prefill(gqa, fmt, want):
    llm = LLM(gqa, block_size=8, num_blocks=64, max_num_batched_tokens=8, kv_cache_dtype=fmt)
    assert tokens(llm, prompts()) == want


@pytest.mark.parametrize('method', ['ngram', 'draft_model'])
def test_speculative_decoding(gqa, fmt, method):
    "Guesses verified on the quantised cache; a draft model (here: the same weights) keeps its own cache unquantised"
    ps, news = [[5, 6, 7, 8] * 6, prompts()[1]], [16, 16]
    spec = dict(method=method, num_speculative_tokens=3) | (
        dict(prompt_lookup_max=3) if method == 'ngram' else dict(model=str(gqa)))
    llm = LLM(gqa, block_size=4, num_blocks=96, kv_cache_dtype=fmt, speculative_config=spec)
    outs = llm.generate(ps, [greedy(n) for n in news], use_tqdm=False)
    assert [o.outputs[0].token_ids for o in outs] == plain(gqa, ps, news, fmt)
    assert sum(o.metrics['num_spec_proposed'] for o in outs) > 0


def test_tensor_parallel_2(gqa, fmt):
    one = LLM(gqa, block_size=8, num_blocks=64, kv_cache_dtype=fmt)
    outs = one.generate(prompts(), [greedy(n, logprobs=2) for n in NEW], use_tqdm=False)
    with LLM(gqa, block_size=8, num_blocks=64, kv_cache_dtype=fmt, tensor_parallel_size=2) as two:
        check_cache(two, fmt)
        got = tokens(two, prompts())
        ranks = two.workers.gather_kv(1, two.kv_caches)
    for g, o in zip(got, outs):                        # equal, or parting at a near-tie of the one-rank run
        w, lps = o.outputs[0].token_ids, o.outputs[0].logprobs
        j = next((i for i, (a, b) in enumerate(zip(g, w)) if a != b), None)
        if j is not None:
            top = sorted((lp.logprob for lp in lps[j].values()), reverse=True)
            assert top[0] - top[1] < NEAR_TIE, f"tokens part at {j} with a top-2 gap of {top[0] - top[1]:.2e}"
    # every rank holds its KV head's codes and scales (2 KV heads, one a rank)
    assert len(ranks) == 2 and all(len(entry) == 4 for entry in ranks)
    assert all(k.shape == (64, 8, 1, 8) and ks.shape == (64, 8, 1) for k, _, ks, _ in ranks)


def test_an_unknown_kv_cache_dtype_is_refused_by_name(gqa):
    with pytest.raises(ValueError, match="kv_cache_dtype must be one of 'auto', 'fp8', 'int8', got 'fp4'"):
        LLM(gqa, kv_cache_dtype='fp4')
    from minipaged.cli import main
    import contextlib, io
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try: code = main(['generate', 'pylm', 'def f():', '--kv-cache-dtype', 'fp4'])
        except SystemExit as e: code = e.code
    assert code == 2 and err.getvalue().count('\n') == 1 and '--kv-cache-dtype' in err.getvalue(), err.getvalue()


def test_the_cli_generates_on_an_fp8_cache():
    from minipaged.cli import main
    import contextlib, io, json
    out, err = io.StringIO(), io.StringIO()
    threads = torch.get_num_threads()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try: code = main(['generate', 'pylm', 'def read_config(path):', '--kv-cache-dtype', 'fp8',
                          '--max-tokens', '8', '--temperature', '0', '--json'])
        finally: torch.set_num_threads(threads)
    assert code == 0, err.getvalue()
    assert len(json.loads(out.getvalue())['token_ids']) == 8


@pytest.fixture(scope='module')
def smol():
    from minipaged.model.fetch import fetched_path
    path = fetched_path(SMOL)
    if not (path / 'config.json').is_file(): pytest.skip(f"{SMOL} is not fetched: run `minipaged fetch {SMOL}`")
    return path

def test_the_instruct_model_on_a_quantised_cache(smol, fmt):
    llm = LLM(smol, block_size=8, kv_cache_dtype=fmt, max_model_len=256)
    check_cache(llm, fmt)
    msgs = [[{'role': 'user', 'content': q}] for q in ('What is a KV cache?', 'Name two planets.')]
    outs = llm.chat(msgs, greedy(16), use_tqdm=False)
    alone = [llm.chat(m, greedy(16), use_tqdm=False)[0] for m in msgs]    # the second hits the prefix cache
    assert [o.outputs[0].token_ids for o in outs] == [o.outputs[0].token_ids for o in alone]
    assert all(len(o.outputs[0].token_ids) == 16 and o.outputs[0].text for o in outs)


def test_bench_and_serve_take_kv_cache_dtype(tmp_path):
    "`minipaged bench` and `minipaged serve` offer --kv-cache-dtype (chapter 09c's ENGINE_FLAGS); bench runs on it"
    import argparse, json
    from minipaged.bench.cli import run_bench_cli
    from minipaged.bench.flags import engine_config
    from minipaged.bench.options import BENCH_ENGINE, ENGINE_FLAGS, add_bench_arguments
    from minipaged.serve.cli import add_serve_arguments
    serve = argparse.ArgumentParser(); add_serve_arguments(serve)
    assert engine_config(serve.parse_args(['pylm', '--kv-cache-dtype', 'fp8']), ENGINE_FLAGS,
                         BENCH_ENGINE).kv_cache_dtype == 'fp8'
    bench = argparse.ArgumentParser(); add_bench_arguments(bench)
    run_bench_cli(bench.parse_args(['--threads', '1', '--no-progress', '--model', 'tiny-random', '--num-requests', '3',
                                    '--rate', '30', '--num-blocks', '64', '--max-model-len', '256', '--repetitions', '1',
                                    '--kv-cache-dtype', 'int8', '--out', str(tmp_path / 'run')]))
    assert json.loads((tmp_path / 'run' / 'summary.json').read_text())['config']['kv_cache_dtype'] == 'int8'
