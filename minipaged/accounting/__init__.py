"""What a request costs before any clever allocation: its KV bytes, the whole memory budget, and what pages save."""
