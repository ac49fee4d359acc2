"""Oracles the chapters and the tests share: paged attention batches, allocator random walks, engine isolation."""
