"Making it fast on a GPU: fused kernels (chapter 14) and a decode step captured as CUDA graphs (chapter 15)"
