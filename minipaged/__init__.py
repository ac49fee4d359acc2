__version__ = "0.1.0"
# Written by hand, like `_nbdev.py` and the subpackages' `__init__.py` docstrings (nbdev only updates the version).
# The public API (`LLM`, `SamplingParams`, `RequestOutput`, `CompletionOutput`) is imported lazily, so that
# `minipaged kv` and the accounting chapters do not load torch. The folders follow a request's path:
# accounting/ (what it costs), attention/ (how it reads its cache), engine/ (how it is served),
# bench/ (how serving is measured), and testing/ (the oracles the chapters and tests share).
_ENGINE_NAMES = ('LLM', 'SamplingParams', 'RequestOutput', 'CompletionOutput')
__all__ = list(_ENGINE_NAMES)

def __getattr__(name):
    if name in _ENGINE_NAMES:
        from minipaged.engine import llm, sampler
        return getattr(sampler if name == 'SamplingParams' else llm, name)
    raise AttributeError(f"module 'minipaged' has no attribute {name!r}")
