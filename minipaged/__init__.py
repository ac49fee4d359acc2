__version__ = "0.1.0"
# Written by hand, like `_nbdev.py` and the subpackages' `__init__.py` docstrings (nbdev only updates the
# version). The public API is imported lazily, so that `minipaged kv` and the accounting chapters do not load
# torch. The folders follow a request's path: accounting/ (what it costs), attention/ (how it reads its cache),
# model/ (the model: config, RoPE, the causal LM, checkpoints, tokenizers; real models converted and fetched),
# engine/ (how it is served: requests, allocators, scheduler, sampler, runner, core), speculative/ and
# parallel/ (what plugs into the engine's seams), llm.py (`LLM`, the composition), bench/ (how serving is
# measured), serve/ (the HTTP server), testing/ (the oracles chapters and tests share).
_PUBLIC = dict(LLM='llm', RequestOutput='engine.outputs', CompletionOutput='engine.outputs',
               EngineConfig='engine.config', SamplingParams='engine.sampler', Logprob='engine.sampler')
__all__ = list(_PUBLIC)

def __getattr__(name):
    if name in _PUBLIC:
        import importlib
        return getattr(importlib.import_module(f'minipaged.{_PUBLIC[name]}'), name)
    raise AttributeError(f"module 'minipaged' has no attribute {name!r}")
