__version__ = "0.1.0"
# Written by hand, like `_nbdev.py` and the subpackages' `__init__.py` docstrings (nbdev only updates the
# version). The public API is imported lazily, so that `minipaged kv` and the accounting chapters do not load
# torch. The folders follow a request's path: accounting/ (what it costs), attention/ (how it reads its cache),
# model/ (real models: a GGUF file converted, fetched by name),
# engine/ (how it is served), bench/ (how serving is measured), testing/ (the oracles chapters and tests share).
_PUBLIC = dict(LLM='llm', RequestOutput='llm', CompletionOutput='llm', EngineConfig='config',
               SamplingParams='sampler', Logprob='sampler')
__all__ = list(_PUBLIC)

def __getattr__(name):
    if name in _PUBLIC:
        import importlib
        return getattr(importlib.import_module(f'minipaged.engine.{_PUBLIC[name]}'), name)
    raise AttributeError(f"module 'minipaged' has no attribute {name!r}")
