"""How attention reads a paged KV cache: online softmax, the cache layout, a reference, a CPU fast path, Triton kernels."""
