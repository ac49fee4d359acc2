"""How requests are served: the allocators, the scheduler, the model on the paged cache, the sampler and `LLM`."""
