"""The server: an OpenAI-compatible HTTP API over the engine, its worker thread, metrics, and the benchmark client."""
