"""Property tests of the chapter 00a-01 accounting on random input (hypothesis)."""
from fractions import Fraction
from hypothesis import given, settings, strategies as st
from minipaged.accounting.budget import ModelShape, kv_bytes, kv_bytes_per_token
from minipaged.accounting.paging import (allocated_slots, compare_allocation, expected_tail_waste,
                                         expected_tail_waste_brute, num_pages, tail_waste, utilization)

lengths = st.lists(st.integers(1, 5000), min_size=1, max_size=40)
page = st.integers(1, 512)

@given(st.integers(1, 100_000), page)
def test_tail_waste_is_bounded_and_pages_fit(n, B):
    assert 0 <= tail_waste(n, B) <= B - 1
    assert (num_pages(n, B) - 1) * B < n <= num_pages(n, B) * B

@settings(max_examples=200)
@given(st.integers(1, 128), st.integers(1, 700))
def test_expected_tail_waste_closed_form_equals_brute_force(B, M):
    assert expected_tail_waste(B, M) == expected_tail_waste_brute(B, M)
    if M % B == 0: assert expected_tail_waste(B, M) == Fraction(B - 1, 2)

@given(lengths, page)
def test_utilization_is_useful_over_allocated(ls, B):
    u = utilization(ls, block_size=B)
    assert 0 < u <= 1 and u == Fraction(sum(ls), sum(allocated_slots(n, B) for n in ls))
    row = compare_allocation(ls, [B])[0]
    assert row['wasted'] == sum(tail_waste(n, B) for n in ls) <= len(ls) * (B - 1)

@given(lengths, st.sampled_from([1, 2, 4, 8, 16, 32]), st.integers(0, 64))
def test_pages_beat_any_page_aligned_reservation_that_fits(ls, B, extra_pages):
    reserve = allocated_slots(max(ls), B) + extra_pages * B          # any reservation, in whole pages, that holds the longest
    assert utilization(ls, block_size=B) >= utilization(ls, reserve=reserve)
    assert sum(tail_waste(n, B) for n in ls) <= sum(reserve - n for n in ls)

@given(st.integers(1, 96), st.integers(1, 64), st.sampled_from([64, 80, 128, 256]), st.sampled_from(['float32', 'bfloat16', 'int8']), lengths)
def test_kv_bytes_is_linear_in_tokens(L, kv, d, dt, ls):
    shape = ModelShape(num_layers=L, num_q_heads=kv * 2, num_kv_heads=kv, head_dim=d, kv_dtype=dt)
    assert kv_bytes(shape, ls) == sum(ls) * kv_bytes_per_token(L, kv, d, dt)
    assert kv_bytes(shape, ls, block_size=16) == sum(allocated_slots(n, 16) for n in ls) * shape.kv_bytes_per_token
