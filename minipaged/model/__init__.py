"""The model the engine serves: its config, RoPE, the causal LM on the paged cache, checkpoints and tokenizers
(chapter 07); a GGUF file turned into a Hugging Face checkpoint and fetched by name (chapter 07a)."""
