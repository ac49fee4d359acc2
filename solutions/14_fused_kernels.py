"Worked solutions to the exercises of chapter 14 (fused kernels)."
import torch
import triton
import triton.language as tl
from minipaged.fast.fused import _check, _check_runnable, _round, FUSED_DTYPES


def rms_norm_bytes(hidden: int, itemsize: int) -> int:
    "The bytes `rms_norm(x, weight, eps, residual)` reads and writes for one token"
    H, b, f = hidden, itemsize, 4                  # f: float32, in which the norm is computed
    total = 3 * b * H                              # x + residual: read two rows, write the sum
    total += 2 * f * H                             # pow(2): read the float32 row, write its squares
    total += f * H + f                             # mean: read the squares, write one number
    total += 2 * f + 2 * f                         # + eps, then rsqrt: one number in, one out, each
    total += (f * H + f) + f * H                   # h * rsqrt(...): read the row and the number, write a row
    total += 3 * b * H                             # weight * (...): read the weight and the row, write y
    if b != f: total += 2 * (b * H + f * H)        # .float() and .to(x.dtype) copy only when the dtype changes
    return total


@triton.jit
def _gelu_tanh_mul_kernel(gate_ptr, up_ptr, out_ptr, I, stride_g, stride_u, stride_o, BLOCK_I: tl.constexpr):
    "Program (row, j): columns j*BLOCK_I.. of gelu_tanh(gate) * up, the GELU rounded to the dtype first"
    row, offs = tl.program_id(0), tl.program_id(1) * BLOCK_I + tl.arange(0, BLOCK_I)
    mask = offs < I
    g = tl.load(gate_ptr + row * stride_g + offs, mask=mask, other=0.0).to(tl.float32)
    u = tl.load(up_ptr + row * stride_u + offs, mask=mask, other=0.0).to(tl.float32)
    z = 0.7978845608028654 * (g + 0.044715 * g * g * g)          # sqrt(2 / pi) * (g + 0.044715 g^3)
    # e = exp(-2|z|) lies in (0, 1]: it cannot overflow, so no inf and no NaN
    e = tl.exp(-2.0 * tl.abs(z))
    tanh = tl.where(z < 0, -1.0, 1.0) * (1.0 - e) / (1.0 + e)
    gelu = _round(0.5 * g * (1.0 + tanh), out_ptr.dtype.element_ty)
    tl.store(out_ptr + row * stride_o + offs, _round(gelu * u, out_ptr.dtype.element_ty), mask=mask)


def triton_gelu_tanh_mul(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    "`F.gelu(gate, approximate='tanh') * up`, `[T, I]`, in one Triton launch"
    _check('gate', gate, (None, None), FUSED_DTYPES)
    _check_runnable(gate.device)
    _check('up', up, tuple(gate.shape), (gate.dtype,), gate.device)
    (T, I), out = gate.shape, torch.empty_like(gate)
    block = min(triton.next_power_of_2(I), 1024)
    if T and I: _gelu_tanh_mul_kernel[(T, triton.cdiv(I, block))](gate, up, out, I, gate.stride(0), up.stride(0),
                                                                   out.stride(0), BLOCK_I=block)
    return out
