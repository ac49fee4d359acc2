"""Tiny `transformers` checkpoints for the tests that compare minipaged with `transformers`: a seeded random model
saved with `save_pretrained`, and its greedy tokens. (The test modules of tests/ import it by name: pytest puts their
folder on the path.)"""
import warnings
import torch


def save_tiny(config_cls, model_cls, kw: dict, path, dtype=None):
    "A seeded random `model_cls(config_cls(**kw))` in eval mode (in `dtype` if given), saved to `path`; returns it"
    torch.manual_seed(0)
    hf = model_cls(config_cls(**kw)).eval()
    if dtype is not None: hf = hf.to(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        hf.save_pretrained(path)
    return hf


def hf_greedy(hf, prompt: list[int], new: int) -> list[int]:
    "`transformers`' greedy continuation of one prompt: `new` tokens, no EOS stop"
    with torch.no_grad():
        out = hf.generate(torch.tensor([prompt]), attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
                          max_new_tokens=new, do_sample=False, pad_token_id=0, eos_token_id=None)
    return out[0, len(prompt):].tolist()
