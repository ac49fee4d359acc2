"Worked solutions to the exercises of chapter 03b (the fast CPU path)."
import torch
import torch.nn.functional as F
from minipaged.utils import cdiv
from minipaged.attention.cache import check_paged_inputs
from minipaged.attention.cpu import gather_rows_bound


def workspace_bytes(max_num_seqs: int, max_num_batched_tokens: int, max_model_len: int, block_size: int,
                    num_kv_heads: int, head_dim: int, dtype: torch.dtype) -> int:
    "Bytes a `PageWorkspace` holds at most in an engine with these limits and this KV shape"
    # The workspace grows to the largest single gather (every call of a step reuses it), and
    # `gather_rows_bound` gives that in token rows: the largest bucket times the longest
    # sequence in whole pages. Each row is one token's K (or V): num_kv_heads * head_dim numbers.
    rows = gather_rows_bound(max_num_seqs, max_num_batched_tokens, max_model_len, block_size)
    itemsize = torch.empty(0, dtype=dtype).element_size()
    return 2 * rows * num_kv_heads * head_dim * itemsize          # a K buffer and a V buffer


def sequence_pages(k_cache: torch.Tensor, v_cache: torch.Tensor, block_table_row: torch.Tensor,
                   length: int) -> tuple[torch.Tensor, torch.Tensor]:
    "One sequence's whole pages `[pages · B, Hkv, d]` for K and V, in logical order, zero from `length` on"
    B = k_cache.shape[1]
    blocks = block_table_row[:cdiv(length, B)].long()          # only the pages in use: padding is never read
    # Indexing the block axis copies whole pages ([pages, B, Hkv, d]); flatten pages and offsets.
    k, v = k_cache[blocks].flatten(0, 1), v_cache[blocks].flatten(0, 1)
    # The last page's tail holds whatever was there (NaN in the tests): zero it, so that a
    # weight of 0 times it is 0.
    k[length:], v[length:] = 0, 0
    return k, v


def sdpa_decode_per_sequence(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                             block_tables: torch.Tensor, context_lens, scale: float | None = None) -> torch.Tensor:
    "Chapter 03's decode contract with one fused SDPA call per sequence over its whole pages"
    # The contract's checks and messages (the empty context among them) come from chapter 03.
    lens, _, scale = check_paged_inputs(q, k_cache, v_cache, block_tables, context_lens, None, scale)
    acc = torch.float64 if q.dtype == torch.float64 else torch.float32    # half types computed in float32
    B, out = k_cache.shape[1], torch.empty_like(q)
    for i, n in enumerate(lens.tolist()):
        blocks = block_tables[i, :cdiv(n, B)].long()
        # Whole pages, then cut at the length: with no positions past the end there is no mask
        # to build and nothing to zero.
        k = k_cache[blocks].flatten(0, 1)[:n].transpose(0, 1).to(acc)    # [Hkv, n, d]
        v = v_cache[blocks].flatten(0, 1)[:n].transpose(0, 1).to(acc)
        qi = q[i][:, None].to(acc)                                         # [Hq, 1, d]: one query
        o = F.scaled_dot_product_attention(qi, k, v, scale=scale, enable_gqa=True)   # query head h reads h // g
        out[i] = o[:, 0].to(q.dtype)
    return out
