"""Tensor parallelism (chapter 13) with gloo on this CPU: an engine of 2 (and, where the heads allow, 4) processes
produces the greedy tokens of one rank and of `transformers` on tiny checkpoints of each attention layout (GQA,
MHA, MQA with its one KV head copied to every rank, Qwen2's q/k/v biases, tied embeddings, a vocabulary that
does not split evenly); its logits agree within float32 rounding; every rank's cache holds exactly its heads;
prefix caching, copy-on-write, preemption, cancellation and speculative decoding behave as at one rank; and a
worker that dies or hangs ends the engine with a clear error instead of a hang.

A token may differ only at a near-tie: where one rank's top-2 logits are closer than NEAR_TIE, the row-parallel
sums' different rounding may pick the other. Logits (as logprobs) must agree within LOGPROB_TOL."""
import gc, multiprocessing, os, signal, subprocess, sys, tempfile, textwrap, threading, time
import pytest
import torch

transformers = pytest.importorskip('transformers')
from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM
from minipaged.llm import LLM
from minipaged.engine.sampler import SamplingParams
from minipaged.parallel.group import TensorParallelError
from minipaged.model.config import tiny_config
from tiny_hf import hf_greedy, save_tiny
from minipaged.testing.engine import check_engine, fail_forward, isolation_failures, random_case, run_case

transformers.utils.logging.disable_progress_bar()
NEAR_TIE, LOGPROB_TOL = 1e-3, 1e-4
BASE = dict(intermediate_size=128, num_hidden_layers=2, initializer_range=0.1, bos_token_id=None, eos_token_id=None,
            max_position_embeddings=256)
# name: (config class, model class, config, the tensor_parallel_sizes its heads allow besides 1)
LAYOUTS = {
    'gqa': (LlamaConfig, LlamaForCausalLM, dict(vocab_size=256, hidden_size=64, num_attention_heads=8,
            num_key_value_heads=2), (2, 4)),                    # at 4: 2 KV heads, each kept by two ranks
    'mha': (LlamaConfig, LlamaForCausalLM, dict(vocab_size=256, hidden_size=64, num_attention_heads=4,
            num_key_value_heads=4), (2, 4)),
    'mqa-tied': (LlamaConfig, LlamaForCausalLM, dict(vocab_size=256, hidden_size=64, num_attention_heads=4,
                 num_key_value_heads=1, head_dim=32, tie_word_embeddings=True), (2,)),
    'qwen2-bias': (Qwen2Config, Qwen2ForCausalLM, dict(vocab_size=256, hidden_size=64, num_attention_heads=4,
                   num_key_value_heads=2, tie_word_embeddings=True, rope_theta=1e6, use_sliding_window=False), (2,)),
    'odd-vocab': (LlamaConfig, LlamaForCausalLM, dict(vocab_size=250, hidden_size=64, num_attention_heads=4,
                  num_key_value_heads=2), (4,)),                # 63 rows a rank, the last two padding
}
PROMPT_LENS, NEW = [5, 30, 47], [24, 16, 20]

def build(name, tmp_path_factory):
    C, M, kw, _ = LAYOUTS[name]
    path = tmp_path_factory.mktemp(name)
    return save_tiny(C, M, dict(BASE, **kw), path), path

def prompts(vocab=250):
    g = torch.Generator().manual_seed(3)
    return [torch.randint(0, vocab, (n,), generator=g).tolist() for n in PROMPT_LENS]

def run(llm, ps=None, news=NEW, logprobs=None):
    sp = [SamplingParams(max_tokens=n, temperature=0.0, ignore_eos=True, logprobs=logprobs) for n in news]
    outs = llm.generate(ps or prompts(), sp, use_tqdm=False)
    llm.block_manager.check()
    return [o.outputs[0] for o in outs]

def near_tie_only(got, want, logprobs_of_want):
    "Tokens equal, or they part at a position where the one-rank engine's top two logprobs nearly tie"
    for g, w, lps in zip(got, want, logprobs_of_want):
        j = next((i for i, (a, b) in enumerate(zip(g, w)) if a != b), None)
        if j is None: continue
        top = sorted((lp.logprob for lp in lps[j].values()), reverse=True)
        assert top[0] - top[1] < NEAR_TIE, f"tokens part at {j} with a top-2 gap of {top[0] - top[1]:.2e}"

@pytest.fixture(scope='module', params=list(LAYOUTS))
def layout(request, tmp_path_factory):
    hf, path = build(request.param, tmp_path_factory)
    want = [hf_greedy(hf, p, n) for p, n in zip(prompts(), NEW)]
    one = run(LLM(path, block_size=8), logprobs=2)
    return request.param, path, want, one

def test_one_rank_equals_transformers(layout):
    name, path, want, one = layout
    near_tie_only([o.token_ids for o in one], want, [o.logprobs for o in one])

def test_tensor_parallel_equals_one_rank_and_transformers(layout):
    name, path, want, one = layout
    for tp in LAYOUTS[name][3]:
        with LLM(path, block_size=8, tensor_parallel_size=tp) as llm:
            s = llm.config.shape
            assert llm.rank_shape.num_kv_heads == max(1, s.num_kv_heads // tp)
            got = run(llm, logprobs=2)
        near_tie_only([o.token_ids for o in got], [o.token_ids for o in one], [o.logprobs for o in one])
        near_tie_only([o.token_ids for o in got], want, [o.logprobs for o in one])
        for g, o in zip(got, one):               # the sampled tokens' logprobs, where the tokens agree
            for a, b, ta, tb in zip(g.logprobs, o.logprobs, g.token_ids, o.token_ids):
                if ta != tb: break
                assert abs(a[ta].logprob - b[tb].logprob) < LOGPROB_TOL, (name, tp, a[ta], b[tb])

# the engine-level behaviours, on the GQA checkpoint at tp=2
@pytest.fixture(scope='module')
def gqa(tmp_path_factory):
    return build('gqa', tmp_path_factory)[1]

@pytest.fixture(scope='module')
def tp2(gqa):
    llm = LLM(gqa, block_size=4, num_blocks=96, max_num_batched_tokens=24, tensor_parallel_size=2)
    yield llm
    llm.shutdown()

def test_each_rank_caches_exactly_its_heads(gqa, tp2):
    one = LLM(gqa, block_size=4, num_blocks=96, max_num_batched_tokens=24)
    ps = prompts()
    assert [o.token_ids for o in run(one, ps)] == [o.token_ids for o in run(tp2, ps)]
    for layer in range(2):
        ranks = tp2.workers.gather_kv(layer, tp2.kv_caches)
        assert torch.equal(ranks[0][0], tp2.kv_caches[layer][0])
        k1, v1 = one.kv_caches[layer]
        for r, (k, v) in enumerate(ranks):       # 2 KV heads: one per rank, in order
            assert k.shape == (96, 4, 1, 8)
            torch.testing.assert_close(k, k1[:, :, r:r + 1], atol=1e-4, rtol=0)
            torch.testing.assert_close(v, v1[:, :, r:r + 1], atol=1e-4, rtol=0)

def test_replicated_kv_heads_are_identical_copies(tmp_path_factory):
    _, path = build('gqa', tmp_path_factory)
    with LLM(path, block_size=8, num_blocks=32, tensor_parallel_size=4) as llm:   # 2 KV heads, 4 ranks
        run(llm, prompts()[:1], [6])
        ranks = llm.workers.gather_kv(1, llm.kv_caches)
    assert all(k.shape == (32, 8, 1, 8) for k, _ in ranks)
    assert torch.equal(ranks[0][0], ranks[1][0]) and torch.equal(ranks[2][1], ranks[3][1])
    assert not torch.equal(ranks[1][0], ranks[2][0])

def test_prefix_caching_and_copy_on_write_at_tp2(gqa, tp2):
    one = LLM(gqa, block_size=4, num_blocks=96, max_num_batched_tokens=24)
    shared = list(range(10, 40))
    ps, sp = [shared + [1, 2], shared + [3]], SamplingParams(max_tokens=10, temperature=0.0, ignore_eos=True)
    outs = {}
    for name, llm in (('one', one), ('two', tp2)):
        first = llm.generate([ps[0]], sp)[0]
        second = llm.generate([ps[1]], sp)[0]
        fork = llm.generate([shared + [5]], SamplingParams(n=3, max_tokens=9, temperature=0.0, ignore_eos=True))[0]
        outs[name] = ([first.outputs[0].token_ids, second.outputs[0].token_ids] + [c.token_ids for c in fork.outputs],
                      second.metrics['num_cached_tokens'], llm.block_manager.metrics()['cow_copies'])
    assert outs['one'] == outs['two']
    assert outs['two'][1] >= 28 and outs['two'][2] > 0, outs['two']     # a prefix hit, copy-on-write copies

def test_preemption_at_tp2(gqa):
    one = LLM(gqa, block_size=4, num_blocks=24, max_num_batched_tokens=16)
    with LLM(gqa, block_size=4, num_blocks=24, max_num_batched_tokens=16, tensor_parallel_size=2) as two:
        ps = prompts()
        got = [o.token_ids for o in run(two, ps)]
        assert two.scheduler.counters['preemptions'] > 0
    assert got == [o.token_ids for o in run(one, ps)]

def test_cancellation_at_tp2(gqa, tp2):
    sp = SamplingParams(max_tokens=30, temperature=0.0, ignore_eos=True)
    a, b = tp2.add_request(prompts()[1], sp), tp2.add_request(prompts()[2], sp)
    for _ in range(4): tp2.step()
    tp2.abort(a)
    done = {}
    while tp2.has_unfinished_requests():
        for o in tp2.step():
            if o.finished: done[o.request_id] = o
        check_engine(tp2)
    assert done[a].outputs[0].finish_reason == 'cancelled' and len(done[b].outputs[0].token_ids) == 30
    assert done[b].outputs[0].token_ids == run(LLM(gqa, block_size=4, num_blocks=96), [prompts()[2]], [30])[0].token_ids
    assert tp2.block_manager.num_used_blocks == 0

def test_speculative_decoding_at_tp2(gqa):
    spec = dict(method='ngram', num_speculative_tokens=3, prompt_lookup_max=3)
    ps = [[5, 6, 7, 8] * 6, prompts()[1]]
    want = [o.token_ids for o in run(LLM(gqa, block_size=4), ps, [16, 16])]
    with LLM(gqa, block_size=4, tensor_parallel_size=2, speculative_config=spec) as two:
        outs = two.generate(ps, SamplingParams(max_tokens=16, temperature=0.0, ignore_eos=True))
    assert [o.outputs[0].token_ids for o in outs] == want
    assert sum(o.metrics['num_spec_proposed'] for o in outs) > 0

@pytest.mark.parametrize('seed', [3, 11])
def test_adversarial_cases_at_tp2(gqa, seed):
    case = random_case(seed)
    result = run_case(gqa, case, tensor_parallel_size=2)
    assert not isolation_failures(gqa, result)

def test_a_bad_tensor_parallel_size_is_refused_before_any_process(gqa):
    before = set(p.pid for p in multiprocessing.active_children())
    with pytest.raises(ValueError, match='tensor_parallel_size 3 must divide the 8 query heads'):
        LLM(gqa, tensor_parallel_size=3)
    with pytest.raises(ValueError, match='tensor_parallel_size 16 must divide the 8 query heads'):
        LLM(gqa, tensor_parallel_size=16)
    with pytest.raises(ValueError, match='tensor_parallel_size must be an integer'):
        LLM(gqa, tensor_parallel_size=1.5)
    with pytest.raises(ValueError, match='collective_timeout_s'):
        LLM(gqa, tensor_parallel_size=2, collective_timeout_s=0)
    assert set(p.pid for p in multiprocessing.active_children()) <= before

def test_workers_stop_on_shutdown_and_garbage_collection(gqa):
    llm = LLM(gqa, block_size=8, num_blocks=16, tensor_parallel_size=2)
    procs = list(llm.workers.procs)
    del llm; gc.collect()
    for p in procs: p.join(10)
    assert all(p.exitcode == 0 for p in procs), [p.exitcode for p in procs]      # stopped, not killed
    # an engine whose construction fails after its workers started leaves none behind (another test's may run)
    ranks = lambda: {p.pid for p in multiprocessing.active_children() if p.name.startswith('minipaged-rank')}
    before = ranks()
    with pytest.raises(ValueError, match='memory_bytes'):
        LLM(gqa, tensor_parallel_size=2, memory_bytes=2 ** 20)
    assert ranks() <= before

def test_a_hung_worker_is_a_timeout_not_a_hang(gqa):
    llm = LLM(gqa, block_size=8, num_blocks=16, tensor_parallel_size=2, collective_timeout_s=2)
    pid = llm.workers.procs[0].pid
    os.kill(pid, signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        with pytest.raises(TensorParallelError, match='a rank stopped answering'):
            llm.generate([[1, 2, 3]], SamplingParams(max_tokens=4))
        assert time.monotonic() - t0 < 20
    finally:
        os.kill(pid, signal.SIGCONT)
        llm.shutdown()
    assert not llm.workers.procs[0].is_alive()

def test_a_worker_killed_mid_run_ends_the_engine_with_its_exit_code(gqa):
    llm = LLM(gqa, block_size=8, num_blocks=64, tensor_parallel_size=2)
    rid = llm.add_request(list(range(40)), SamplingParams(max_tokens=200, temperature=0.0, ignore_eos=True))
    llm.step()
    os.kill(llm.workers.procs[0].pid, signal.SIGKILL)
    with pytest.raises(TensorParallelError, match='rank 1 exited with code -9'):
        for _ in range(200): llm.step()
    with pytest.raises(TensorParallelError, match='cannot go on'): llm.step()
    llm.abort(rid)
    llm.shutdown()

def test_workers_exit_when_rank_0_is_killed(gqa, tmp_path):
    script = tmp_path / 'rank0.py'
    script.write_text(textwrap.dedent(f"""
        import os, signal, sys
        from minipaged.llm import LLM
        if __name__ == '__main__':
            llm = LLM({str(gqa)!r}, block_size=8, num_blocks=16, tensor_parallel_size=2)
            print(llm.workers.procs[0].pid, flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        """))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    pid = int(out.stdout.split()[0])
    for _ in range(100):
        if not alive(pid): break
        time.sleep(0.1)
    else: pytest.fail(f"worker {pid} outlived its rank 0")

def alive(pid: int) -> bool:
    "Whether process `pid` runs (a zombie nobody reaped has ended)"
    try: return open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()[0] != 'Z'
    except FileNotFoundError: return False

def test_a_rank_0_error_breaks_the_engine_at_once_whatever_its_message(gqa):
    with LLM(gqa, block_size=8, num_blocks=32, tensor_parallel_size=2, collective_timeout_s=30) as llm:
        llm.add_request([1, 2, 3, 4], SamplingParams(max_tokens=12, temperature=0.0, ignore_eos=True))
        llm.step()
        fail_forward(llm, 1, RuntimeError())            # an error with no message, mid-way through a step
        with pytest.raises(TensorParallelError, match=r'the step failed on rank 0 \(RuntimeError: \)'):
            llm.step()
        t0 = time.monotonic()
        with pytest.raises(TensorParallelError, match='cannot go on'): llm.step()    # at once: no collective
        assert time.monotonic() - t0 < 5

def test_a_refused_size_leaves_no_temporary_checkpoint(tmp_path, monkeypatch):
    monkeypatch.setenv('TMPDIR', str(tmp_path))
    monkeypatch.setattr(tempfile, 'tempdir', None)
    with pytest.raises(ValueError, match='tensor_parallel_size 3 must divide the 8 query heads'):
        LLM(tiny_config(), tensor_parallel_size=3)
    assert not list(tmp_path.glob('minipaged-tp-*'))
    with LLM(tiny_config(), tensor_parallel_size=2, num_blocks=8) as llm:           # an in-memory model works
        made = list(tmp_path.glob('minipaged-tp-*'))
        assert len(made) == 1 and llm.generate([[1, 2]], SamplingParams(max_tokens=2))[0].finished
    assert not made[0].exists()                                                     # shutdown removed it

def test_ctrl_c_during_generate_leaves_the_engine_in_step(gqa, tp2):
    # a Ctrl-C reaches the main thread only; Python's own handler makes it a KeyboardInterrupt (a notebook run in
    # this process before may have installed nbdev's, which exits: Python's is put back for the test)
    if threading.current_thread() is not threading.main_thread():
        pytest.skip('not on the main thread')
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try: ctrl_c_during_generate(gqa, tp2)
    finally: signal.signal(signal.SIGINT, before)

def ctrl_c_during_generate(gqa, tp2):
    sp = SamplingParams(max_tokens=150, temperature=0.0, ignore_eos=True)
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt): tp2.generate([list(range(3, 60))], sp)
    finally: timer.cancel()
    assert tp2.workers.broken is None and not tp2.has_unfinished_requests()
    short = SamplingParams(max_tokens=8, temperature=0.0, ignore_eos=True)
    want = LLM(gqa, block_size=4, num_blocks=96).generate([[5, 6, 7]], short)[0].outputs[0].token_ids
    assert tp2.generate([[5, 6, 7]], short)[0].outputs[0].token_ids == want
