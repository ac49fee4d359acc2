"Worked solutions to the exercises of chapter 07 (the model's configuration)."
import torch


def rotary_frequencies(head_dim: int, theta: float) -> torch.Tensor:
    "float32 `[head_dim / 2]`, theta^(-2i/head_dim) for pair i"
    # the exponents 0, 2, 4, ... over head_dim: pair i's frequency falls geometrically from 1 towards 1/theta
    exponents = torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim
    return 1.0 / (theta ** exponents)


def rotate_head(x: torch.Tensor, position: int, theta: float) -> torch.Tensor:
    "`x [head_dim]` rotated to `position`, pairs (i, i + head_dim/2)"
    half = x.shape[-1] // 2
    angles = position * rotary_frequencies(x.shape[-1], theta)
    cos, sin = angles.cos(), angles.sin()
    # the first half holds each pair's a, the second half its b (the layout of the Llama checkpoints)
    a, b = x[:half], x[half:]
    return torch.cat([a * cos - b * sin, a * sin + b * cos])
