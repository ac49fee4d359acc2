"""Chapter 03c's refusals at the door: a KV format the device cannot store, or that the Triton kernels cannot read
there, is one ValueError naming `kv_cache_dtype` — raised before anything is allocated."""
import pytest
import torch
from minipaged.attention.kv_format import check_kv_storable
from minipaged.model.config import tiny_config
from minipaged import LLM


def test_fp8_on_a_gpu_older_than_sm89_is_refused(monkeypatch):
    monkeypatch.setattr(torch.cuda, 'get_device_capability', lambda device=None: (8, 0))
    with pytest.raises(ValueError, match=r"^kv_cache_dtype 'fp8' cannot be read by the Triton kernels on cuda "
                                         r"\(compute capability 8\.0; float8 e4m3 needs 8\.9 or newer\)"):
        check_kv_storable('float8_e4m3', 'cuda', 'triton')


def test_a_device_that_cannot_hold_the_codes_is_refused(monkeypatch):
    real = torch.Tensor.to
    def to(self, *args, **kw):
        if torch.float8_e4m3fn in args or kw.get('dtype') is torch.float8_e4m3fn:
            raise RuntimeError('"copy_" not implemented for Float8_e4m3fn')
        return real(self, *args, **kw)
    monkeypatch.setattr(torch.Tensor, 'to', to)
    with pytest.raises(ValueError, match=r"^kv_cache_dtype 'fp8' cannot be stored on cpu: "):
        check_kv_storable('float8_e4m3', 'cpu')
    with pytest.raises(ValueError, match=r"^kv_cache_dtype 'fp8' cannot be stored on cpu: "):
        LLM(tiny_config(num_layers=1), kv_cache_dtype='fp8', num_blocks=8)
    check_kv_storable('int8', 'cpu')                      # int8 is unaffected


def test_unknown_format_names_the_setting():
    with pytest.raises(ValueError, match=r"kv_cache_dtype must be one of 'auto', 'fp8', 'int8', got 'fp4'"):
        LLM(tiny_config(num_layers=1), kv_cache_dtype='fp4')
