"""A first engine: one request, a contiguous KV cache and a plain generate loop (chapter 00)."""
