__version__ = "0.1.0"
# The one hand-written file of the package (nbdev only updates the version above): the public API
# of DESIGN.md, imported lazily so that `minipaged kv` and the accounting chapters do not load torch.
_ENGINE_NAMES = ('LLM', 'SamplingParams', 'RequestOutput', 'CompletionOutput')
__all__ = list(_ENGINE_NAMES)

def __getattr__(name):
    if name in _ENGINE_NAMES:
        from minipaged import engine
        return getattr(engine, name)
    raise AttributeError(f"module 'minipaged' has no attribute {name!r}")
