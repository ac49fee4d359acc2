"""Chapter 03's attention contract, for every backend: one pytest case per (backend, contract case).

The cases, the tolerances and the runner live in `minipaged.testing.attention`; the chapters run the
same contract (03 on the reference, 03b on the whole-page CPU path, 04 on the Triton kernels). Triton
runs in its interpreter without a GPU (the conftest switches it on), slow enough that it takes
`quick_cases()`, the subset for slow backends, and no float64 (its launchers refuse it).

The window and 8-bit cases (`WINDOW_CASES`, `QUANT_CASES`) run on every backend too."""
import pytest
import torch
from minipaged.attention.cpu import sdpa_decode_attention, sdpa_prefill_attention
from minipaged.attention.reference import paged_decode_attention, paged_prefill_attention
from minipaged.testing.attention import (CASES, QUANT_CASES, WINDOW_CASES, AttentionCase,
                                         check_attention_backend, quick_cases, random_cases)

DEVICE = 'cuda' if torch.cuda.is_available() else 'cpu'

def _triton_raw():
    from minipaged.attention.triton import triton_paged_decode_attention, triton_paged_prefill_attention
    return triton_paged_decode_attention, triton_paged_prefill_attention

def _triton():
    checked = lambda fn: lambda *args, **kw: fn(*args, check_values=True, **kw)      # off by default on a GPU
    return tuple(map(checked, _triton_raw()))

BACKENDS = {'reference': lambda: (paged_decode_attention, paged_prefill_attention),
            'cpu': lambda: (sdpa_decode_attention, sdpa_prefill_attention),
            'triton': _triton}
KV_CASES = WINDOW_CASES + QUANT_CASES
def kernel_cases(cases):
    "A GPU runs every case but float64's; Triton's interpreter the quick subset"
    return tuple(c for c in cases if c.dtype != torch.float64) if DEVICE == 'cuda' else quick_cases(cases=cases)
CASES_OF = {'reference': CASES + KV_CASES, 'cpu': CASES + KV_CASES,
            'triton': kernel_cases(CASES) + kernel_cases(KV_CASES)}
PARAMS = [(b, c) for b, cases in CASES_OF.items() for c in cases]

@pytest.mark.parametrize('backend,case', PARAMS, ids=[f"{b}-{c.name}" for b, c in PARAMS])
def test_contract(backend, case):
    decode_fn, prefill_fn = BACKENDS[backend]()
    device = DEVICE if backend == 'triton' else 'cpu'
    plain = None if case.refused else (paged_decode_attention, paged_prefill_attention)
    rows = check_attention_backend(decode_fn, prefill_fn, [case], device, plain)
    assert [r['call'] for r in rows] == (['prefill'] if case.q_lens else ['decode', 'prefill'])

def test_the_new_cases_cover_what_they_promise():
    assert {c.kv_dtype for c in QUANT_CASES} == {torch.float8_e4m3fn, torch.int8}
    assert any(not c.free_pages for c in WINDOW_CASES) and any(c.refused for c in WINDOW_CASES)
    windows = {c.window for c in WINDOW_CASES if not c.refused}
    assert 1 in windows and any(c.window > max(c.context_lens) for c in WINDOW_CASES if not c.refused)
    assert any(c.q_lens and c.window for c in WINDOW_CASES) and any(c.window for c in QUANT_CASES)
    quick = quick_cases(cases=KV_CASES)
    assert {c.kv_dtype for c in quick} >= {torch.float8_e4m3fn, torch.int8} and any(c.refused for c in quick)

def test_the_subset_covers_every_property():
    quick = quick_cases()
    assert {1, 2, 3, 4, 8} <= {c.gqa for c in quick} and {1, 8, 16, 24, 32} == {c.block_size for c in quick}
    assert {c.dtype for c in quick} == {torch.float32, torch.float16, torch.bfloat16}
    assert {c.q_lens is None for c in quick} == {True, False} and sum(bool(c.refused) for c in quick) == 2
    assert {c.q_lens is None for c in quick if c.logit_scale > 1} == {True, False}      # decode and prefill

@pytest.mark.parametrize('backend', ['reference', 'cpu'])
def test_random_cases(backend):
    rows = check_attention_backend(*BACKENDS[backend](), random_cases(20, seed=17, max_seqs=8))
    assert len(rows) >= 20

def test_a_broken_backend_fails_naming_the_case():
    def off_by_one(q, k_cache, v_cache, block_tables, context_lens, scale=None):
        return paged_decode_attention(q, k_cache, v_cache, block_tables, (context_lens - 1).clamp(min=1),
                                      scale)
    with pytest.raises(AssertionError, match=r"case 'pages-of-16' \(decode, float32\): error .* exceeds"):
        check_attention_backend(off_by_one, None)
    def accepts_empty(q, kc, vc, bt, cl, s=None): return paged_decode_attention(q, kc, vc, bt, cl.clamp(1), s)
    with pytest.raises(AssertionError, match="context_lens \\[0, 5\\] accepted"):
        check_attention_backend(accepts_empty, None, [c for c in CASES if c.name == 'empty-context'])
    with pytest.raises(AssertionError, match='NaN in 1 rows'):
        first_row_nan = lambda q, *a: torch.where(torch.arange(len(q))[:, None, None] == 0, float('nan'), q)
        check_attention_backend(first_row_nan, None, [AttentionCase('nan', (3, 5))])
