"Worked solutions to the exercises of chapter 04a (checking the kernels)."
import torch
import triton
import triton.language as tl
from minipaged.attention.triton import decode_kv_bytes
from minipaged.attention.triton_kernels import _load_rows, _tile_blocks


def decode_floor_ms(num_layers: int, num_kv_heads: int, head_dim: int, batch: int, context: int,
                    hbm_bytes_per_s: float, dtype: str = 'bfloat16') -> float:
    "The memory floor of one decode step over all layers, in milliseconds"
    # One layer reads every cached token of every sequence once: batch x context tokens of K and V.
    per_layer = decode_kv_bytes(batch * context, num_kv_heads, head_dim, dtype)
    # All layers run one after another, each bound by the same bandwidth; seconds -> milliseconds.
    return num_layers * per_layer / hbm_bytes_per_s * 1e3


@triton.jit
def _gather_kernel(cache_ptr, table_ptr, out_ptr, n, kv_head, stride_b, stride_t, stride_h,
                   PAGE_SIZE: tl.constexpr, HEAD_DIM: tl.constexpr, HEAD_DIM_PAD: tl.constexpr,
                   BLOCK_N: tl.constexpr):
    "Program i copies positions i*BLOCK_N .. i*BLOCK_N+BLOCK_N-1 (those < n) of one KV head into `out [n, d]`"
    offs_n = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM_PAD)
    live = offs_n < n
    # the tail of the context and the padding of the head dimension are masked: no NaN slot, no padding entry
    mask = live[:, None] & (offs_d < HEAD_DIM)[None, :]
    block = _tile_blocks(table_ptr, offs_n, live, PAGE_SIZE)
    rows = _load_rows(cache_ptr, block, offs_n, offs_d, kv_head, stride_b, stride_t, stride_h, mask, PAGE_SIZE,
                      cache_ptr.dtype.element_ty)
    # the same mask on the store: out has exactly n rows of HEAD_DIM
    tl.store(out_ptr + offs_n[:, None] * HEAD_DIM + offs_d[None, :], rows, mask=mask)


def gather_rows(cache, block_table_row, n: int, kv_head: int):
    "The `[n, head_dim]` rows of `kv_head` at positions 0..n-1 through `block_table_row`, by a Triton kernel"
    _, block_size, _, head_dim = cache.shape
    out = torch.empty((n, head_dim), dtype=cache.dtype, device=cache.device)
    BLOCK_N = 16                                           # a power of two, as tl.arange needs
    _gather_kernel[(triton.cdiv(n, BLOCK_N),)](cache, block_table_row, out, n, kv_head, *cache.stride()[:3],
                                               PAGE_SIZE=block_size, HEAD_DIM=head_dim,
                                               HEAD_DIM_PAD=triton.next_power_of_2(head_dim), BLOCK_N=BLOCK_N)
    return out
