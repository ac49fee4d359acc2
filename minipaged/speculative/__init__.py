"""Speculative decoding (chapter 11): speculators that plug into the engine through its `Speculator` interface."""
