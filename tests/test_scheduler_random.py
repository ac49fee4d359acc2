"""Hypothesis-driven random traces through the scheduler: arrivals (up to 3 samples each), cancellations,
lengths, priorities, a small pool, continuous or static batching. After every step: the scheduler's
invariants, the block manager's check(), and the plan's reason for where admission stopped, checked
against the state the plan left."""
from hypothesis import given, settings, strategies as st
from minipaged.engine.blocks import BlockManager
from minipaged.engine.config import EngineConfig
from minipaged.engine.request import AdmissionStop, FinishReason, Request
from minipaged.engine.scheduler import Scheduler, check_scheduler

def check_admission(s, b):
    "The plan's reason for stopping admission holds in the state it left (an oracle from chapter 06's rules)"
    A = b.admission
    assert isinstance(A, AdmissionStop), A
    assert (b.num_running, b.num_waiting) == (len(s.running), len(s.waiting))
    if A is AdmissionStop.QUEUE_EMPTY: assert not s.waiting; return
    assert s.waiting, f"{A.value}: nothing waits"
    head = s.waiting[0]
    tokens = head.all_token_ids
    if A is AdmissionStop.SEATS:              # a prompt with n samples holds n seats until it has a token
        held = sum(r.num_samples - 1 for r in s.running.values() if not r.output_token_ids)
        assert len(s.running) + held + (head.num_samples if not head.output_token_ids else 1) > s.max_num_seqs
    elif A is AdmissionStop.TOKEN_BUDGET:
        cfg = s.config
        left = cfg.max_num_batched_tokens - b.num_batched_tokens
        rest = len(tokens) - s.bm.plan_allocation(tokens, head.cache_salt)[1]
        assert left == 0 or (not cfg.enable_chunked_prefill and left < rest <= cfg.max_num_batched_tokens), (left, rest)
    elif A is AdmissionStop.BLOCKS: assert b.preempted or not s.bm.plan_allocation(tokens, head.cache_salt)[0]
    elif A is AdmissionStop.WATERMARK:
        assert s.bm.plan_allocation(tokens, head.cache_salt)[0] and s.running
        assert s.bm.num_available_blocks - s.bm.blocks_needed(len(tokens)) < s.watermark_blocks
    else: assert A is AdmissionStop.STATIC_BATCH and s.config.batching == 'static'

event = st.one_of(
    st.tuples(st.just('arrive'), st.lists(st.integers(0, 4), min_size=0, max_size=40), st.integers(0, 30),
              st.integers(0, 2), st.sampled_from([None, 'a', 'b']), st.sampled_from([1, 1, 2, 3])),
    st.tuples(st.just('cancel'), st.integers(0, 10_000)),
    st.tuples(st.just('step'), st.integers(0, 4)),
)

@settings(max_examples=150, deadline=None)
@given(trace=st.lists(event, min_size=1, max_size=80), num_blocks=st.integers(2, 24), block_size=st.sampled_from([1, 2, 4, 8]),
       budget=st.integers(1, 32), max_seqs=st.integers(1, 6), policy=st.sampled_from(['fcfs', 'priority']),
       chunked=st.booleans(), caching=st.booleans(),
       batching=st.sampled_from(['continuous', 'continuous', 'static']), window=st.sampled_from([None, None, 1, 3, 8]))
def test_random_trace_keeps_invariants_and_drains(trace, num_blocks, block_size, budget, max_seqs, policy,
                                                  chunked, caching, batching, window):
    "With a window too: a preempted request whose recompute outgrew the pool ends aborted, with its reason"
    s = Scheduler(BlockManager(num_blocks, block_size, enable_prefix_caching=caching, window=window),
                  EngineConfig(max_num_seqs=max_seqs, max_num_batched_tokens=budget, max_model_len=48, policy=policy,
                               enable_chunked_prefill=chunked, batching=batching))
    t, nid, admitted = 0, 0, []
    def step():
        nonlocal t
        b = s.schedule(t); check_scheduler(s, b); check_admission(s, b)
        s.update(b, {r.request_id: (r.num_tokens * 7) % 5 for r in b.requests}, t + 1); check_scheduler(s)
        t += 1
        return b
    for ev in trace:
        if ev[0] == 'arrive':
            _, prompt, max_tokens, prio, salt, n = ev
            r = s.add_request(Request(nid, prompt, max_tokens, stop_token_ids=frozenset({4}), priority=prio,
                                      arrival_time=t, cache_salt=salt, num_samples=n), t)
            nid += 1
            if r.finish_reason is FinishReason.REJECTED: assert r.reject_reason
            else: admitted.append(r)
        elif ev[0] == 'cancel' and s.requests:
            ids = sorted(s.requests, key=str); s.abort(ids[ev[1] % len(ids)], t); check_scheduler(s)
        else:
            for _ in range(ev[1]): step()
    for _ in range(5_000):                       # drain: every admitted request must finish
        if not s.has_unfinished: break
        step()
    assert not s.has_unfinished, 'starvation or a hang: requests left unfinished'
    assert all(r.finished for r in admitted) and s.bm.num_used_blocks == 0
    assert all(r.error for r in admitted if r.finish_reason is FinishReason.ABORTED)
