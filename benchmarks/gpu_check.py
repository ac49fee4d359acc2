"""Issue 34's prepared GPU check: one command, under 8 minutes on an H200, one JSON for the next session to record.

    python benchmarks/gpu_check.py --json benchmarks/results/gpu_check.json      # `make gpu-check`
    python benchmarks/gpu_check.py --smoke --json /tmp/gpu_check_smoke.json      # no GPU: the same code, toy sizes

Five sections run in order, each in a process of its own under a time budget (BUDGET_S): one that runs past it is
stopped and recorded as timed out, with what it had written so far, and the next one starts.
  attention     `attention_gpu.py`'s pipeline (decode grid, prefill vs SDPA), then the compile time of the prefill
                and decode kernels at PAGE_SIZE 1 and 16, head dim 128 (bfloat16; prefill in float32 too), each a
                fresh process with an empty Triton cache under a cap of its own
  equivalence   the engine against transformers on the device, float32, tiny random Llama and Qwen2 checkpoints:
                block sizes 16 and 1, a starved pool (preemptions), chunked prefill, CUDA graphs on and off
  throughput    the engine against transformers' padded batches on a random bfloat16 model of Llama-3.2-1B's shape,
                on 256 requests x prompts 64-512 x 128 new tokens, and 256 requests x prompts and outputs 100-1024.
                transformers runs only batches of 64 and 256, each on the workload's first batch only (its tok/s is
                that batch's requested tokens over its time), under a max_time cap; the best of the two counts
  decode        decode step time at batch 1, 64 and 256 (prompts of 512) against its byte floor: (weight bytes +
                the batch's KV bytes) / a device-to-device copy's bandwidth measured in the same process
  profile       torch.profiler over decode steps at batch 256: kernels per step and the GPU-busy share (summed
                kernel time / the steps' wall time), graphs on and off
Goals are printed beside the results (met / missed); the smoke run marks them n/a. The smoke run executes every
line on the CPU: Triton's interpreter where kernels run, the kernels' compile for sm_90 without a GPU instead of a
first launch, the profiler's CPU operators instead of CUDA kernels, graphs asked for where the engine takes the
setting (it captures none on a CPU); those values are marked 'cpu-smoke'. `benchmarks/GPU_CHECK.md` has the exact
command for a session with a device.
"""
import argparse, gc, json, os, random, statistics, subprocess, sys, tempfile, time, warnings
from pathlib import Path
import harness                                  # first: it puts this checkout's minipaged on the path

HERE = Path(__file__).resolve().parent
SECTIONS = ('attention', 'equivalence', 'throughput', 'decode', 'profile')
BUDGET_S = dict(attention=110, equivalence=75, throughput=165, decode=65, profile=50)        # 465 s in all
SMOKE_BUDGET_S = dict.fromkeys(SECTIONS, 150)          # caps only: a smoke run takes about a minute
COMPILE_CAP_S, SMOKE_COMPILE_CAP_S = 50, 30     # each probe; they run side by side
LLAMA_1B = dict(vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
                num_key_value_heads=8, head_dim=64, max_position_embeddings=4096, tie_word_embeddings=True, rope_theta=500000.0)
TOY_1B = dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, head_dim=16, max_position_embeddings=512, tie_word_embeddings=True, rope_theta=500000.0)
TINY = dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=8,
            num_key_value_heads=2, max_position_embeddings=512, initializer_range=0.1)      # tests/test_transformers_equivalence.py's
FULL = dict(model=LLAMA_1B, workloads=dict(short=(256, (64, 512), (128, 128)), long=(256, (100, 1024), (100, 1024))),
            hf_batches=(64, 256), hf_max_time=45.0, engine=dict(max_num_seqs=256, max_num_batched_tokens=8192),
            memory_bytes=48 << 30, decode_batches=(1, 64, 256), decode_prompt=512, decode_steps=20, profile_batch=256,
            profile_steps=5, probe=dict(head_dim=128, q_heads=32, kv_heads=8, context=256), copy_bytes=1 << 30)
SMOKE = dict(model=TOY_1B, workloads=dict(short=(6, (8, 24), (4, 4)), long=(6, (4, 24), (4, 12))),
             hf_batches=(2, 6), hf_max_time=20.0, engine=dict(max_num_seqs=8, max_num_batched_tokens=64),
             memory_bytes=64 << 20, decode_batches=(1, 4), decode_prompt=16, decode_steps=3, profile_batch=4,
             profile_steps=2, probe=dict(head_dim=32, q_heads=4, kv_heads=2, context=48), copy_bytes=1 << 20)
PROBES = [('prefill', 16, 'bfloat16'), ('prefill', 1, 'bfloat16'), ('decode', 16, 'bfloat16'), ('decode', 1, 'bfloat16'),
          ('prefill', 16, 'float32'), ('prefill', 1, 'float32')]
EQUIV = dict(b16=dict(block_size=16), b1=dict(block_size=1), starved_pool=dict(block_size=8, num_blocks=24),
             chunked_prefill=dict(block_size=16, max_num_batched_tokens=5))
GOALS = [('decode_256_over_floor', '<=', 2.5, 'decode step at batch 256 <= 2.5x its byte floor'),
         ('gpu_busy', '>=', 0.80, 'GPU busy >= 80% of a decode step (batch 256)'),
         ('vs_padded_short', '>=', 5.0, "engine >= 5x transformers' best padded batch (64-512 prompts, 128 new)"),
         ('vs_padded_long', '>=', 5.0, "engine >= 5x transformers' best padded batch (100-1,024 workload)"),
         ('tok_s_long', '>=', 20000, 'engine >= 20,000 output tok/s on the 100-1,024 workload'),
         ('decode_1_over_floor', '<=', 3.0, 'batch-1 decode step <= 3x its byte floor'),
         ('prefill_vs_sdpa', '>=', 0.95, 'prefill kernel >= 0.95x torch SDPA'),
         ('tokens_identical', '==', True, 'greedy tokens identical to transformers everywhere (float32)')]


# ---- the parent: each section in a process of its own, under its budget -------------------------------------------

def run_section(name: str, args, workdir: Path, budget: float) -> dict:
    "Run one section in a child process for at most `budget` s; its record, with status ok / timed out / failed"
    out = workdir / f'{name}.json'
    cmd = [sys.executable, __file__, '--section', name, '--workdir', str(workdir)] + ['--smoke'] * args.smoke
    t0 = time.perf_counter()
    try:
        rc = subprocess.run(cmd, timeout=budget).returncode
        status = 'ok' if rc == 0 else f'failed (exit status {rc})'
    except subprocess.TimeoutExpired:
        status = f'timed out after {budget:.0f} s (the results below are what it had written)'
    record = json.loads(out.read_text()) if out.exists() else {}
    return dict(status=status, seconds=round(time.perf_counter() - t0, 1), **record)


def goal_values(s: dict) -> dict:
    "Each goal's measured value from the sections' records (None where a section did not get that far)"
    g = lambda *keys: _dig(s, *keys)
    att_goals = {x['goal']: x['measured'] for x in g('attention', 'attention_gpu', 'goals') or []}
    eq = g('equivalence', 'rows') or []
    first = lambda rows, **kw: next((r for r in rows or [] if all(r.get(k) == v for k, v in kw.items())), {})
    dec = lambda b: first(g('decode', 'rows'), batch=b)            # the first mode: graphs on, or the default
    prof = first(g('profile', 'rows'))
    return dict(decode_256_over_floor=dec(256).get('over_floor'), decode_1_over_floor=dec(1).get('over_floor'),
                gpu_busy=prof.get('gpu_busy'), vs_padded_short=g('throughput', 'short', 'vs_best_padded'),
                vs_padded_long=g('throughput', 'long', 'vs_best_padded'), tok_s_long=g('throughput', 'long', 'engine_tok_s'),
                prefill_vs_sdpa=next((v for k, v in att_goals.items() if k.startswith('prefill')), None),
                # only a section that finished has compared every case: a partial one measured nothing whole
                tokens_identical=all(r['identical'] == r['requests'] for r in eq)
                if eq and g('equivalence', 'status') == 'ok' else None)


def _dig(d, *keys):
    for k in keys:
        if not isinstance(d, dict) or k not in d: return None
        d = d[k]
    return d


def judge(values: dict, smoke: bool) -> list[dict]:
    "One row per goal: target, measured, met (None: not measured, or a smoke run where goals do not apply)"
    ops = {'<=': lambda a, b: a <= b, '>=': lambda a, b: a >= b, '==': lambda a, b: a == b}
    return [dict(goal=text, target=f"{op} {target}", measured=values[key],
                 met=None if smoke or values[key] is None else ops[op](values[key], target))
            for key, op, target, text in GOALS]


def parent(args) -> int:
    import torch
    if not torch.cuda.is_available() and not args.smoke:
        print("gpu_check.py needs a CUDA GPU; pass --smoke to run the same code on the CPU at toy sizes", file=sys.stderr)
        return 2
    print(harness.header_line(), flush=True)
    budgets = SMOKE_BUDGET_S if args.smoke else BUDGET_S
    sections, t0 = {}, time.perf_counter()
    with tempfile.TemporaryDirectory(prefix='gpu_check_') as d:
        for name in args.only or SECTIONS:
            print(f"\n== {name} (budget {budgets[name]} s) ==", flush=True)
            sections[name] = run_section(name, args, Path(d), budgets[name])
            print(f"-- {name}: {sections[name]['status']}, {sections[name]['seconds']} s", flush=True)
    met = judge(goal_values(sections), args.smoke)
    print(); harness.print_table([dict(goal=m['goal'], target=m['target'], measured=_fmt(m['measured']),
                                       met='n/a' if m['met'] is None else 'met' if m['met'] else 'MISSED') for m in met],
                                 'goals (issue 34)')
    harness.print_table([dict(section=k, status=v['status'], seconds=v['seconds']) for k, v in sections.items()])
    total = time.perf_counter() - t0
    print(f"total {total:.0f} s" + ("  (--smoke: CPU, toy sizes; the figures say nothing about a GPU)" if args.smoke else ''))
    if args.json:
        record = harness.write_json(args.json, dict(mode='cpu-smoke' if args.smoke else 'gpu', seconds=total,
                                                    budgets_s=budgets, goals=met, sections=sections))
        if args.commit:                     # a copy of the tree without its git: the commit it was copied from
            record['header']['commit'] = args.commit
            Path(args.json).write_text(json.dumps(record, indent=1) + '\n')
    return 0


def _fmt(v) -> str:
    return 'not measured' if v is None else f"{v:.3g}" if isinstance(v, float) else str(v)


# ---- the child: one section, writing its record after every step ---------------------------------------------------

class Record(dict):
    "A section's results, written to its JSON after every change, so a stopped section leaves what it had"
    def __init__(self, path: Path, **kw):
        super().__init__(**kw); self.path = path; self.save()
    def save(self): self.path.write_text(json.dumps(self, indent=1, default=str))
    def put(self, key, value):
        self[key] = value; self.save(); return value
    def add(self, key, row: dict):
        self.setdefault(key, []).append(row); self.save(); return row


def device_of(smoke: bool):
    import torch
    return torch.device('cpu' if smoke else 'cuda')


def sync(device) -> None:
    import torch
    if device.type == 'cuda': torch.cuda.synchronize(device)


GRAPH_MODES = [('graphs on', dict(enforce_eager=False)), ('graphs off', dict(enforce_eager=True))]


def section_attention(rec: Record, cfg: dict, smoke: bool) -> None:
    "attention_gpu.py's whole pipeline, then the kernels' compile times at page sizes 1 and 16"
    import attention_gpu
    out = rec.path.with_name('attention_gpu.json')
    rc = attention_gpu.main((['--cpu-smoke'] if smoke else []) + ['--json', str(out)])
    rec.put('attention_gpu', json.loads(out.read_text()) if out.exists() else dict(exit_status=rc))
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(2 if smoke else len(PROBES)) as pool:      # each its own process: side by side
        for row in pool.map(lambda p: compile_probe(*p, cfg['probe'], smoke), PROBES):
            rec.add('compile', row)
            print(f"compile {row['kernel']} PAGE_SIZE={row['page_size']} {row['dtype']}: {row['status']}, "
                  f"{_fmt(row.get('compile_s'))} s", flush=True)
    harness.print_table(rec['compile'], '\ncompile time (fresh process, empty Triton cache)')
    from minipaged.fast.fused import TRITON_OPS              # chapter 14's kernels against their definitions
    from minipaged.testing.fused import check_fused_ops
    try: rows = check_fused_ops(TRITON_OPS, 'cpu' if smoke else 'cuda', tokens=(1, 7), head_dims=(64,)) if smoke \
        else check_fused_ops(TRITON_OPS, 'cuda')
    except AssertionError as e: rows = [dict(passed=False, error=str(e)[:500])]
    rec.put('fused_contract', dict(cases=len(rows), passed=all(r.get('passed', True) for r in rows), rows=rows))
    print(f"fused-kernel contract: {rec['fused_contract']['cases']} cases, passed: {rec['fused_contract']['passed']}")


def compile_probe(kind: str, page: int, dtype: str, probe: dict, smoke: bool) -> dict:
    "One kernel's compile time in a fresh process with an empty Triton cache, under a cap; the process is killed past it"
    cap = SMOKE_COMPILE_CAP_S if smoke else COMPILE_CAP_S
    row = dict(kernel=kind, page_size=page, dtype=dtype, head_dim=probe['head_dim'],
               how='AOT for sm_90, no GPU (cpu-smoke)' if smoke else 'first launch minus second')
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, TRITON_CACHE_DIR=cache, **({'TRITON_INTERPRET': '0'} if smoke else {}))
        cmd = [sys.executable, __file__, '--probe', kind, str(page), dtype] + ['--smoke'] * smoke
        try:
            run = subprocess.run(cmd, capture_output=True, text=True, timeout=cap, env=env)
        except subprocess.TimeoutExpired:
            return dict(row, status=f'timed out: over {cap} s', compile_s=None)
    if run.returncode != 0: return dict(row, status='failed: ' + run.stderr.strip()[-300:], compile_s=None)
    return dict(row, status='ok', **json.loads(run.stdout.strip().splitlines()[-1]))


def probe_main(kind: str, page: int, dtype: str, smoke: bool) -> None:
    "The probe process: compile (and on a GPU launch) one kernel; prints its timings as one JSON line"
    import torch
    if smoke: return print(json.dumps(aot_compile(kind, page, dtype, (SMOKE if smoke else FULL)['probe'])))
    from minipaged.attention import triton as ta
    p, dev, dt = FULL['probe'], torch.device('cuda'), getattr(torch, dtype)
    q, kc, vc, tables, cu, lens = probe_inputs(kind, page, p, dt, dev)
    launch = (lambda: ta.triton_paged_prefill_attention(q, kc, vc, tables, cu, lens)) if kind == 'prefill' else \
        (lambda: ta.triton_paged_decode_attention(q, kc, vc, tables, lens, num_splits=1))
    times = []
    for _ in range(2):
        t = time.perf_counter(); launch(); torch.cuda.synchronize(); times.append(time.perf_counter() - t)
    print(json.dumps(dict(first_s=times[0], second_s=times[1], compile_s=times[0] - times[1])))


def probe_inputs(kind: str, page: int, p: dict, dt, dev):
    "A small batch for one launch: 2 sequences of `context` tokens (prefill: all of them new)"
    import torch
    n, S = p['context'], 2
    pages = -(-n // page)
    kc, vc = (torch.randn(S * pages, page, p['kv_heads'], p['head_dim'], device=dev).to(dt) for _ in range(2))
    tables = torch.arange(S * pages, device=dev, dtype=torch.int32).view(S, pages)
    lens = torch.full((S,), n, dtype=torch.int32, device=dev)
    q = torch.randn(S * n if kind == 'prefill' else S, p['q_heads'], p['head_dim'], device=dev).to(dt)
    cu = torch.arange(0, S * n + 1, n, dtype=torch.int32, device=dev)
    return q, kc, vc, tables, cu, lens


def aot_compile(kind: str, page: int, dtype: str, p: dict) -> dict:
    "Compile one kernel for sm_90 without a GPU, as chapter 04 does (TRITON_INTERPRET=0 in this process)"
    import triton, triton.language as tl
    from triton.compiler import ASTSource
    from triton.backends.compiler import GPUTarget
    with warnings.catch_warnings():
        warnings.simplefilter('ignore'); from minipaged.attention import triton as ta
    g, d = p['q_heads'] // p['kv_heads'], p['head_dim']
    ptr = '*' + dict(bfloat16='bf16', float32='fp32')[dtype]
    dot = dict(DOT_DTYPE=tl.float32 if dtype == 'float32' else tl.bfloat16, DOT_PRECISION='ieee' if dtype == 'float32' else 'tf32')
    consts = dict(PAGE_SIZE=page, HEAD_DIM=d, GROUP=g, **dot)
    if kind == 'prefill':
        fn, cfg, types = ta._paged_prefill_kernel, ta.prefill_config(d, g, False, page_size=page), dict(out_ptr=ptr)
    else:
        fn, cfg, types = ta._paged_decode_kernel, ta.decode_config(d, g, False), dict(out_ptr=ptr, m_ptr=ptr, l_ptr=ptr)
        consts['SPLIT'] = False
    types.update(q_ptr=ptr, k_cache_ptr=ptr, v_cache_ptr=ptr, block_tables_ptr='*i32', context_lens_ptr='*i32',
                 cu_seqlens_q_ptr='*i32', qk_scale='fp32')
    opts = dict(num_warps=cfg.pop('num_warps'), num_stages=cfg.pop('num_stages')); consts.update(cfg)
    sig = {n: 'constexpr' if n in consts else types.get(n, 'i32') for n in fn.arg_names}
    src = ASTSource(fn, sig, {(fn.arg_names.index(n),): v for n, v in consts.items()})
    t = time.perf_counter()
    triton.compile(src, target=GPUTarget('cuda', 90, 32), options=opts)
    return dict(compile_s=time.perf_counter() - t, **opts)


def hf_checkpoint(arch: str, shape: dict, dtype, device, path: Path, seed: int = 0):
    "A random transformers model of `shape` on `device`, saved as a checkpoint at `path` (no EOS: fixed lengths)"
    import torch, transformers
    transformers.utils.logging.disable_progress_bar()
    C, M = dict(llama=(transformers.LlamaConfig, transformers.LlamaForCausalLM),
                qwen2=(transformers.Qwen2Config, transformers.Qwen2ForCausalLM))[arch]
    extra = dict(rope_theta=5000.0) if arch == 'llama' and 'rope_theta' not in shape else \
        dict(tie_word_embeddings=True) if arch == 'qwen2' else {}
    torch.manual_seed(seed)
    with torch.device(device): hf = M(C(**shape, **extra, bos_token_id=None, eos_token_id=None)).to(dtype).eval()
    hf.generation_config.eos_token_id = None
    with warnings.catch_warnings():
        warnings.simplefilter('ignore'); hf.save_pretrained(path)
    return hf


def hf_greedy(hf, prompt: list, new: int, device) -> list:
    import torch
    with torch.no_grad():
        out = hf.generate(torch.tensor([prompt], device=device), attention_mask=torch.ones(1, len(prompt), dtype=torch.long,
                          device=device), max_new_tokens=new, do_sample=False, pad_token_id=0)
    return out[0, len(prompt):].tolist()


def engine_tokens(path, prompts, news, **kw):
    "The engine's greedy tokens for each prompt, and the engine (its pool checked and empty afterwards)"
    from minipaged.llm import LLM
    from minipaged.engine.sampler import SamplingParams
    llm = LLM(str(path), **kw)
    outs = llm.generate(prompts, [SamplingParams(max_tokens=n, temperature=0.0, ignore_eos=True) for n in news], use_tqdm=False)
    llm.block_manager.check()
    return [o.outputs[0].token_ids for o in outs], llm


def section_equivalence(rec: Record, cfg: dict, smoke: bool) -> None:
    "Greedy tokens of the engine against transformers on the device, float32, over the engine's paths"
    import torch
    dev, g = device_of(smoke), torch.Generator().manual_seed(0)
    lens = [1, 7, 16, 33, 64, 100] if not smoke else [1, 7, 33]
    prompts = [torch.randint(0, 256, (n,), generator=g).tolist() for n in lens]
    shared = torch.randint(0, 256, (70,), generator=g).tolist()
    prompts += [shared + [1, 2, 3], shared + [9]]                                       # prefix-cache hits
    news = [int(x) for x in torch.randint(20, 41 if not smoke else 25, (len(prompts),), generator=g)]
    variants = [(k, v) for k, v in EQUIV.items()] + [(f'b16, {m}', kw) for m, kw in GRAPH_MODES]
    for arch in ('llama', 'qwen2'):
        path = rec.path.parent / f'tiny-{arch}'
        hf = hf_checkpoint(arch, TINY, torch.float32, dev, path)
        want = [hf_greedy(hf, p, n, dev) for p, n in zip(prompts, news)]
        del hf
        for name, kw in variants:
            kw = dict(dict(block_size=16), **kw)
            t = time.perf_counter()
            got, llm = engine_tokens(path, prompts, news, device=str(dev), dtype='float32', **kw)
            row = rec.add('rows', dict(arch=arch, variant=name, settings=kw, requests=len(prompts),
                                       identical=sum(a == b for a, b in zip(got, want)),
                                       preemptions=llm.scheduler.counters.get('preemptions'), seconds=round(time.perf_counter() - t, 2)))
            print(f"{arch:6} {name:22} {row['identical']}/{row['requests']} identical, {row['seconds']} s", flush=True)
            del llm; gc.collect()
    harness.print_table(rec['rows'], '\nengine vs transformers, greedy, float32')
    k = len(prompts) if not smoke else 2
    quantised_graphs(rec, rec.path.parent / 'tiny-llama', prompts[:k], news[:k], dev)


def quantised_graphs(rec: Record, path, prompts, news, dev) -> None:
    "An 8-bit KV cache (chapter 16) written by the fused kernel: greedy tokens with CUDA graphs on equal graphs off"
    for kv in ('int8', 'fp8'):
        got = [engine_tokens(path, prompts, news, device=str(dev), dtype='float32', block_size=16,
                             kv_cache_dtype=kv, **kw)[0] for _, kw in GRAPH_MODES]
        row = rec.add('quantised_graphs', dict(kv_cache_dtype=kv, requests=len(prompts),
                                               identical=sum(a == b for a, b in zip(*got))))
        print(f"llama  {kv} cache, graphs on vs off: {row['identical']}/{row['requests']} identical", flush=True)


def workload(n: int, prompt: tuple, out: tuple, vocab: int, seed: int) -> list:
    rng = random.Random(seed)
    return [([rng.randrange(3, vocab) for _ in range(rng.randint(*prompt))], rng.randint(*out)) for _ in range(n)]


def model_1b(rec: Record, cfg: dict, smoke: bool):
    "The Llama-3.2-1B-shaped random bfloat16 checkpoint, shared by the sections that need it; (path, hf model)"
    import torch
    path = rec.path.parent / 'llama-1b-shape'
    hf = hf_checkpoint('llama', dict(cfg['model'], initializer_range=0.02), torch.bfloat16, device_of(smoke), path)
    return path, hf


def engine(path, cfg: dict, smoke: bool, **kw):
    from minipaged.llm import LLM
    return LLM(str(path), device=str(device_of(smoke)), dtype='bfloat16', memory_bytes=cfg['memory_bytes'],
               **dict(cfg['engine'], **kw))


def run_engine(llm, reqs) -> tuple[float, float]:
    "Output tok/s and seconds of `generate` over the workload (after a short warm-up)"
    from minipaged.engine.sampler import SamplingParams
    llm.generate([reqs[0][0]], SamplingParams(max_tokens=4, temperature=0.0, ignore_eos=True), use_tqdm=False)
    sync(llm.device); t = time.perf_counter()
    outs = llm.generate([p for p, _ in reqs], [SamplingParams(max_tokens=m, temperature=0.0, ignore_eos=True) for _, m in reqs],
                        use_tqdm=False)
    sync(llm.device); dt = time.perf_counter() - t
    return sum(len(o.outputs[0].token_ids) for o in outs) / dt, dt


def run_padded(hf, reqs, batch: int, max_time: float, device) -> dict:
    "transformers on the workload's first padded batch of `batch` (left padding), stopped at `max_time`: tok/s"
    import torch
    chunk = reqs[:batch]
    L, M = max(len(p) for p, _ in chunk), max(m for _, m in chunk)
    ids = torch.tensor([[0] * (L - len(p)) + p for p, _ in chunk], device=device)
    mask = torch.tensor([[0] * (L - len(p)) + [1] * len(p) for p, _ in chunk], device=device)
    with torch.no_grad():
        hf.generate(ids[:, -8:], attention_mask=mask[:, -8:], max_new_tokens=2, do_sample=False, pad_token_id=0)   # warm-up
        sync(device); t = time.perf_counter()
        out = hf.generate(ids, attention_mask=mask, max_new_tokens=M, min_new_tokens=M, do_sample=False, pad_token_id=0,
                          max_time=max_time)
        sync(device); dt = time.perf_counter() - t
    made = out.shape[1] - L
    produced = sum(min(m, made) for _, m in chunk)                  # only the tokens each request asked for
    return dict(batch=len(chunk), seconds=dt, tok_s=produced / dt, stopped_at_max_time=made < M)


def section_throughput(rec: Record, cfg: dict, smoke: bool) -> None:
    "The engine against transformers' padded batches on both workloads"
    path, hf = model_1b(rec, cfg, smoke)
    rec.put('model', dict(cfg['model'], dtype='bfloat16', params=sum(p.numel() for p in hf.parameters())))
    rec.put('settings', dict(cfg['engine'], memory_bytes=cfg['memory_bytes'], hf_batches=cfg['hf_batches'],
                             hf_max_time_s=cfg['hf_max_time'], hf_rule='first batch of each size only; best of the sizes'))
    llm = engine(path, cfg, smoke)
    for name, (n, prompt, out) in cfg['workloads'].items():
        reqs = workload(n, prompt, out, cfg['model']['vocab_size'], seed=1)
        tok_s, dt = run_engine(llm, reqs)
        padded = [run_padded(hf, reqs, b, cfg['hf_max_time'], llm.device) for b in cfg['hf_batches']]
        best = max(p['tok_s'] for p in padded)
        rec.put(name, dict(requests=n, prompt=prompt, output=out, engine_tok_s=tok_s, engine_s=dt, padded=padded,
                           vs_best_padded=tok_s / best))
        harness.print_table([dict(system='minipaged LLM.generate', tok_s=round(tok_s), seconds=round(dt, 2))] +
                            [dict(system=f"transformers padded batch of {p['batch']}" + ' (max_time)' * p['stopped_at_max_time'],
                                  tok_s=round(p['tok_s']), seconds=round(p['seconds'], 2)) for p in padded],
                            f"\n{name}: {n} requests, prompts {prompt[0]}-{prompt[1]}, outputs {out[0]}-{out[1]}: "
                            f"{tok_s / best:.2f}x the best padded batch")


def fill(llm, cfg: dict, batch: int) -> list:
    "Add `batch` requests and step until all have finished their prompts: every further step is decode only"
    from minipaged.engine.sampler import SamplingParams
    rng, vocab, n = random.Random(2), cfg['model']['vocab_size'], cfg['decode_prompt']
    params = SamplingParams(max_tokens=llm.engine_config.max_model_len - n, temperature=0.0, ignore_eos=True)
    ids = [llm.add_request([rng.randrange(3, vocab) for _ in range(n)], params) for _ in range(batch)]
    while llm.scheduler.waiting or any(r.num_computed_tokens < len(r.prompt_token_ids) for r in llm.scheduler.running.values()):
        llm.step()
    for _ in range(3): llm.step()                                   # warm: graphs captured, kernels compiled
    return ids


def drain(llm, ids: list) -> None:
    "Abort the requests `fill` added, and collect their outputs: the engine is empty again"
    for rid in ids: llm.abort(rid)
    while llm.has_unfinished_requests(): llm.step()
    gc.collect()


def section_decode(rec: Record, cfg: dict, smoke: bool) -> None:
    "Decode step wall time at each batch against its byte floor, graphs on and off"
    from minipaged.accounting.budget import weight_bytes          # the floor: every weight, the batch's KV
    import attention_gpu
    dev = device_of(smoke)
    copy = rec.put('copy', attention_gpu.copy_bandwidth(cfg['copy_bytes'], dev))
    path = rec.path.parent / 'llama-1b-shape'
    if not (path / 'config.json').exists(): model_1b(rec, cfg, smoke)
    for mode, kw in GRAPH_MODES:
        llm = engine(path, cfg, smoke, **kw)
        for batch in cfg['decode_batches']:
            ids, times = fill(llm, cfg, batch), []
            for _ in range(cfg['decode_steps']):
                sync(dev); t = time.perf_counter(); llm.step(); sync(dev); times.append(time.perf_counter() - t)
            ctx = sum(r.num_computed_tokens for r in llm.scheduler.running.values())
            floor = (weight_bytes(llm.config.shape) + ctx * llm.config.shape.kv_bytes_per_token) / copy['bytes_per_s']
            step = statistics.median(times)
            row = rec.add('rows', dict(mode=mode, batch=batch, step_ms=step * 1e3, floor_ms=floor * 1e3, over_floor=step / floor,
                                       context_tokens=ctx, note='cpu-smoke' if smoke else ''))
            print(f"decode {mode:10} batch {batch:>3}: {row['step_ms']:.2f} ms, floor {row['floor_ms']:.3f} ms, "
                  f"{row['over_floor']:.1f}x", flush=True)
            drain(llm, ids)
        del llm; gc.collect()
    harness.print_table([{k: round(v, 3) if isinstance(v, float) else v for k, v in r.items()} for r in rec['rows']],
                        '\ndecode step against its byte floor')


LAUNCHES = ('cudaLaunchKernel', 'cuLaunchKernel', 'cudaLaunchKernelExC', 'cuLaunchKernelEx', 'cudaGraphLaunch')


def section_profile(rec: Record, cfg: dict, smoke: bool) -> None:
    "torch.profiler over decode steps: kernels (smoke: CPU operators) per step and the GPU-busy share"
    from torch.profiler import profile, ProfilerActivity
    dev, n = device_of(smoke), cfg['profile_steps']
    path = rec.path.parent / 'llama-1b-shape'
    if not (path / 'config.json').exists(): model_1b(rec, cfg, smoke)
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev.type == 'cuda' else [])
    from minipaged.model.ops import TORCH_OPS
    modes = GRAPH_MODES + [('graphs off, unfused ops', dict(enforce_eager=True))]
    for mode, kw in modes:                                   # the last: chapter 07a's plain ops, before chapter 14
        llm = engine(path, cfg, smoke, **kw)
        if 'unfused' in mode: llm.model.ops = TORCH_OPS
        ids = fill(llm, cfg, cfg['profile_batch'])
        with profile(activities=acts) as prof:
            sync(dev); t = time.perf_counter()
            for _ in range(n): llm.step()
            sync(dev); wall = time.perf_counter() - t
        ev = prof.events()
        if dev.type == 'cuda':
            kernels = [e for e in ev if e.device_type.name == 'CUDA' and not e.name.startswith(('Memcpy', 'Memset'))]
            busy_us = sum(e.time_range.elapsed_us() for e in kernels)
            row = dict(mode=mode, batch=cfg['profile_batch'], steps=n, kernels_per_step=len(kernels) / n,
                       launches_per_step=sum(e.name in LAUNCHES for e in ev) / n, step_ms=wall / n * 1e3,
                       kernel_ms_per_step=busy_us / n / 1e3, gpu_busy=busy_us / 1e6 / wall)
        else:
            ops = [e for e in ev if e.name.startswith('aten::') and (e.cpu_parent is None or not e.cpu_parent.name.startswith('aten::'))]
            row = dict(mode=mode, batch=cfg['profile_batch'], steps=n, kernels_per_step=len(ops) / n, launches_per_step=None,
                       step_ms=wall / n * 1e3, kernel_ms_per_step=None, gpu_busy=None,
                       note='cpu-smoke: top-level aten operators per step, no GPU-busy share')
        rec.add('rows', row)
        drain(llm, ids)
        del llm, prof; gc.collect()
    harness.print_table([{k: round(v, 3) if isinstance(v, float) else v for k, v in r.items()} for r in rec['rows']],
                        '\ndecode steps under torch.profiler')


def child(args) -> int:
    cfg, workdir = (SMOKE if args.smoke else FULL), Path(args.workdir)
    rec = Record(workdir / f'{args.section}.json', mode='cpu-smoke' if args.smoke else 'gpu')
    globals()[f'section_{args.section}'](rec, cfg, args.smoke)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--json', help='write the whole record here (benchmarks/results/gpu_check.json on a GPU)')
    ap.add_argument('--smoke', action='store_true', help="no GPU: the same code on the CPU at toy sizes (Triton's interpreter)")
    ap.add_argument('--only', nargs='+', choices=SECTIONS, help='run these sections only')
    ap.add_argument('--commit', help="the commit measured, where git cannot tell (a copy of the tree on a device)")
    ap.add_argument('--section', choices=SECTIONS, help=argparse.SUPPRESS)      # the child process of one section
    ap.add_argument('--workdir', help=argparse.SUPPRESS)
    ap.add_argument('--probe', nargs=3, help=argparse.SUPPRESS)                  # the compile probe's process
    a = ap.parse_args(argv)
    if a.smoke: os.environ.setdefault('TRITON_INTERPRET', '1') if not a.probe else None
    if a.probe: return probe_main(a.probe[0], int(a.probe[1]), a.probe[2], a.smoke) or 0
    return child(a) if a.section else parent(a)


if __name__ == '__main__':
    sys.exit(main())
