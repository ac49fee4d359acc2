"Worked solutions to chapter 13's exercises"
import torch.nn.functional as F
from minipaged.accounting.budget import dtype_bytes


def allreduce_bytes_per_token(shape, tp: int) -> float:
    "Two all-reduces per layer and the embedding's, each one token's hidden state, 2(tp-1)/tp of it sent"
    per = shape.hidden_size * dtype_bytes(shape.dtype)
    return (2 * shape.num_layers + 1) * per * 2 * (tp - 1) / tp


def mlp_partial(x, gate_w, up_w, down_w, rank: int, tp: int):
    "Gate and up by output rows, down by input columns: the silu and the product stay inside one rank"
    k = gate_w.shape[0] // tp
    cols = slice(rank * k, (rank + 1) * k)
    h = F.silu(x @ gate_w[cols].T) * (x @ up_w[cols].T)
    return h @ down_w[:, cols].T
