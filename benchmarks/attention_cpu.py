"""Decode attention on the CPU: minipaged's paged reference and its whole-page SDPA path against SDPA on contiguous K/V.

One decode step per sequence (one query token), every sequence at the same context length, its
K/V in a paged cache reached through a block table of shuffled physical blocks. The baseline is
`torch.nn.functional.scaled_dot_product_attention` on the same keys and values already laid out
densely as `[num_seqs, Hkv, context, d]` (what a contiguous, reserve-the-maximum cache would
give it), with `enable_gqa=True`. The reference's time includes its validation, slot computation and
gather. The whole-page path (`sdpa_decode_attention`, the engine's CPU backend) is timed as a model layer
runs it: planned once (`plan_pages`, with a workspace), then one call per layer, so the plan is not in its
time. The three alternate call by call, `--reps` rounds after `--warmup`; the table gives medians (and the
slowdowns as medians of the per-round ratios), the JSON minima too.

    python benchmarks/attention_cpu.py --json attention_cpu.json
"""
from __future__ import annotations
import argparse, statistics
import harness                                  # first: it puts this checkout's minipaged on the path
import torch
import torch.nn.functional as F
from minipaged.attention.cpu import PageWorkspace, plan_pages, sdpa_paged_attention
from minipaged.attention.cache import allocate_kv_cache
from minipaged.attention.reference import paged_decode_attention


def bench_case(num_seqs: int, context: int, num_q_heads: int, num_kv_heads: int, head_dim: int, block_size: int,
               dtype: torch.dtype, warmup: int, reps: int, seed: int = 0) -> dict:
    "Time one decode step of the paged reference and of SDPA on contiguous K/V; check they agree"
    gen = torch.Generator().manual_seed(seed)
    blocks_per_seq = -(-context // block_size)
    num_blocks = num_seqs * blocks_per_seq
    k_cache, v_cache = allocate_kv_cache(num_blocks, block_size, num_kv_heads, head_dim, dtype)
    k_cache.copy_(torch.randn(k_cache.shape, generator=gen)); v_cache.copy_(torch.randn(v_cache.shape, generator=gen))
    block_tables = torch.randperm(num_blocks, generator=gen).view(num_seqs, blocks_per_seq).to(torch.int32)
    context_lens = torch.full((num_seqs,), context, dtype=torch.int32)
    q = torch.randn(num_seqs, num_q_heads, head_dim, generator=gen).to(dtype)
    # the same keys and values, laid out densely [S, Hkv, context, d]: the contiguous baseline
    slots = (block_tables.long()[:, :, None] * block_size + torch.arange(block_size)).view(num_seqs, -1)[:, :context]
    k_dense = k_cache.view(-1, num_kv_heads, head_dim)[slots].transpose(1, 2).contiguous()
    v_dense = v_cache.view(-1, num_kv_heads, head_dim)[slots].transpose(1, 2).contiguous()
    paged = lambda: paged_decode_attention(q, k_cache, v_cache, block_tables, context_lens)
    plan = plan_pages(block_tables, context_lens, k_cache, workspace=PageWorkspace())
    pages = lambda: sdpa_paged_attention(q, k_cache, v_cache, plan)
    sdpa = lambda: F.scaled_dot_product_attention(q[:, :, None], k_dense, v_dense, enable_gqa=True)[:, :, 0]
    err = float((paged().double() - sdpa().double()).abs().max())
    err_pages = float((pages().double() - sdpa().double()).abs().max())
    paged_times, pages_times, sdpa_times = harness.interleaved_seconds([paged, pages, sdpa], warmup, reps)
    t_paged, t_pages, t_sdpa = statistics.median(paged_times), statistics.median(pages_times), statistics.median(sdpa_times)
    kv_bytes = 2 * num_seqs * context * num_kv_heads * head_dim * k_cache.element_size()
    return dict(batch=num_seqs, context=context, kv_mib=kv_bytes / 2**20, paged_ms=t_paged * 1e3, pages_ms=t_pages * 1e3, sdpa_ms=t_sdpa * 1e3,
                paged_min_ms=min(paged_times) * 1e3, pages_min_ms=min(pages_times) * 1e3, sdpa_min_ms=min(sdpa_times) * 1e3,
                slowdown=statistics.median(p / q for p, q in zip(paged_times, sdpa_times)),
                pages_slowdown=statistics.median(p / q for p, q in zip(pages_times, sdpa_times)),
                paged_gib_s=kv_bytes / t_paged / 2**30, pages_gib_s=kv_bytes / t_pages / 2**30, sdpa_gib_s=kv_bytes / t_sdpa / 2**30,
                max_abs_err=err, pages_max_abs_err=err_pages)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--batch', type=int, nargs='+', default=[1, 8, 32], help='sequences per decode step')
    p.add_argument('--context', type=int, nargs='+', default=[128, 1024, 4096], help='cached tokens per sequence')
    p.add_argument('--q-heads', type=int, default=32); p.add_argument('--kv-heads', type=int, default=8)
    p.add_argument('--head-dim', type=int, default=128); p.add_argument('--block-size', type=int, default=16)
    p.add_argument('--dtype', default='float32', choices=['float32', 'bfloat16', 'float16'])
    p.add_argument('--warmup', type=int, default=2); p.add_argument('--reps', type=int, default=15)
    p.add_argument('--threads', type=int, default=None, help='torch intra-op threads (default: torch\'s choice)')
    p.add_argument('--json', default=None, help='write the rows and the setup to this path')
    args = p.parse_args(argv)
    if args.threads: torch.set_num_threads(args.threads)
    dtype = getattr(torch, args.dtype)
    setup = dict(threads=torch.get_num_threads(), num_q_heads=args.q_heads, num_kv_heads=args.kv_heads,
                 head_dim=args.head_dim, block_size=args.block_size, dtype=args.dtype, warmup=args.warmup,
                 reps=args.reps)
    rows = [bench_case(b, c, args.q_heads, args.kv_heads, args.head_dim, args.block_size, dtype, args.warmup, args.reps)
            for b in args.batch for c in args.context]
    print(harness.header_line())
    print(f"decode attention, one step; Hq={args.q_heads} Hkv={args.kv_heads} d={args.head_dim} {args.dtype} "
          f"block_size={args.block_size}; torch {torch.__version__}, {setup['threads']} threads; "
          f"median of {args.reps} interleaved rounds after {args.warmup} warm-up")
    shown = [dict(batch=r['batch'], context=r['context'], kv_mib=f"{r['kv_mib']:.1f}", reference_ms=f"{r['paged_ms']:.3f}",
                  pages_sdpa_ms=f"{r['pages_ms']:.3f}", contiguous_sdpa_ms=f"{r['sdpa_ms']:.3f}", reference_slowdown=f"{r['slowdown']:.2f}x",
                  pages_slowdown=f"{r['pages_slowdown']:.2f}x", max_abs_err=f"{max(r['max_abs_err'], r['pages_max_abs_err']):.1e}") for r in rows]
    harness.print_table(shown)
    if args.json: harness.write_json(args.json, dict(setup=setup, rows=rows), argv)
    return rows


if __name__ == '__main__':
    main()
