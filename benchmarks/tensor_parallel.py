#!/usr/bin/env python
"""Tensor parallelism (chapter 13): what one rank holds and how long a step takes, at each tensor_parallel_size.

Per tp: the KV pool a rank gets from chapter 00a's per-rank budget (`--memory-bytes` per device), in blocks,
tokens and bytes per token; the weight bytes rank 0 holds (counted from its parameters) against the budget's;
then the step time, with every engine built first and the sizes taking turns for `--repeats` rounds (these
machines are noisy; each reports its median): one prefill step of `--batch` prompts of `--prompt-len` tokens,
and the median decode step of that batch. Greedy tokens are compared with tp = 1 (`identical`).

On a CPU the ranks share the machine's cores: each rank gets `threads / tp` torch threads, so the sizes
compare on the same cores, and tp > 1 is slower here (two all-reduces per layer through loopback, no extra
compute). On a machine with several GPUs, `--device cuda` puts rank r on GPU r and the collectives on NCCL.

    python benchmarks/tensor_parallel.py --json benchmarks/results/tensor_parallel.json
    python benchmarks/tensor_parallel.py --device cuda --tp 1 2 4 8 --model DIR --batch 64 --prompt-len 512
"""
import argparse, statistics, time
import harness
import torch
from minipaged import LLM, SamplingParams
from minipaged.accounting.budget import weight_bytes
from minipaged.utils import format_rows, MiB


def engine(a, tp: int) -> LLM:
    return LLM(a.model, tensor_parallel_size=tp, device=a.device, block_size=a.block_size,
               memory_bytes=a.memory_bytes, max_num_seqs=max(a.batch, 1), max_num_batched_tokens=a.batch * a.prompt_len)


def capacity_row(llm: LLM) -> dict:
    "What one rank holds: weights (counted on rank 0, and the budget's), the KV pool in blocks, tokens, bytes"
    cfg, s = llm.engine_config, llm.rank_shape
    params = sum(p.numel() * p.element_size() for p in llm.model.parameters())
    return dict(tp=cfg.tensor_parallel_size, kv_heads_per_rank=s.num_kv_heads, weights_per_rank_mib=params / MiB,
                budget_weights_mib=weight_bytes(s) / MiB, kv_bytes_per_token_per_rank=s.kv_bytes_per_token,
                num_blocks=cfg.num_blocks, kv_tokens_per_rank=cfg.num_blocks * cfg.block_size,
                kv_pool_mib_per_rank=cfg.num_blocks * cfg.block_size * s.kv_bytes_per_token / MiB)


def one_round(llm: LLM, prompts: list, new: int) -> tuple[float, list[float], list]:
    "One prefill step of every prompt (seconds), then each decode step of the batch (seconds), and the tokens"
    sp = SamplingParams(max_tokens=new, temperature=0.0, ignore_eos=True)
    ids = [llm.add_request(p, sp) for p in prompts]
    t = time.perf_counter(); llm.step(); prefill = time.perf_counter() - t
    assert all(len(r.output_token_ids) == 1 for g in llm.core.groups.values() for r in g.samples), 'prefill in one step'
    decode, done = [], {}
    while llm.has_unfinished_requests():
        t = time.perf_counter(); outs = llm.step(partial=False); decode.append(time.perf_counter() - t)
        done |= {o.request_id: o.outputs[0].token_ids for o in outs}
    return prefill, decode, [done[i] for i in ids]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--model', default='pylm', help="a checkpoint directory or a shipped model (default pylm)")
    p.add_argument('--tp', type=int, nargs='+', default=[1, 2], help='tensor_parallel_size values (default 1 2)')
    p.add_argument('--device', default='cpu')
    p.add_argument('--memory-bytes', type=int, default=256 * MiB, help='memory of each device (default 256 MiB)')
    p.add_argument('--block-size', type=int, default=16)
    p.add_argument('--batch', type=int, default=16)
    p.add_argument('--prompt-len', type=int, default=128)
    p.add_argument('--new', type=int, default=32, help='tokens generated per request')
    p.add_argument('--repeats', type=int, default=3)
    p.add_argument('--json', help='write the results here')
    a = p.parse_args(argv)
    threads = torch.get_num_threads()
    g = torch.Generator().manual_seed(0)
    llms = {tp: engine(a, tp) for tp in a.tp}
    V = llms[a.tp[0]].config.shape.vocab_size
    prompts = [torch.randint(0, V, (a.prompt_len,), generator=g).tolist() for _ in range(a.batch)]
    caps = [capacity_row(llm) for llm in llms.values()]
    print(format_rows([{k: round(v, 2) if isinstance(v, float) else v for k, v in r.items()} for r in caps]), flush=True)
    timings = {tp: dict(prefill=[], decode=[]) for tp in a.tp}
    tokens = {}
    for rnd in range(a.repeats + 1):                      # round 0 warms every engine up, and is not kept
        for tp, llm in llms.items():
            if a.device == 'cpu': torch.set_num_threads(max(1, threads // tp))   # this rank's share of the cores
            pre, dec, toks = one_round(llm, prompts, a.new)
            torch.set_num_threads(threads)
            tokens[tp] = toks
            if rnd: timings[tp]['prefill'].append(pre); timings[tp]['decode'].append(statistics.median(dec))
    rows = []
    for tp in a.tp:
        pre, dec = statistics.median(timings[tp]['prefill']), statistics.median(timings[tp]['decode'])
        rows.append(dict(tp=tp, threads_per_rank=max(1, threads // tp) if a.device == 'cpu' else None,
                         prefill_step_ms=round(pre * 1e3, 2), prefill_tok_s=round(a.batch * a.prompt_len / pre, 1),
                         decode_step_ms=round(dec * 1e3, 2), decode_tok_s=round(a.batch / dec, 1),
                         identical_to_tp1=tokens[tp] == tokens[a.tp[0]]))
    base = rows[0]
    for r in rows: r['decode_vs_first'] = round(r['decode_step_ms'] / base['decode_step_ms'], 2)
    for llm in llms.values(): llm.shutdown()
    print(harness.header_line())
    print(format_rows(rows))
    if a.json:
        harness.write_json(a.json, dict(model=a.model, device=a.device, memory_bytes=a.memory_bytes,
                                        block_size=a.block_size, batch=a.batch, prompt_len=a.prompt_len, new=a.new,
                                        repeats=a.repeats, threads=threads, capacity=caps, timing=rows))


if __name__ == '__main__':
    main()
