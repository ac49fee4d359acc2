"Worked solutions to the exercises of chapter 05 (the block manager)."
from minipaged.engine.blocks import BlockManager, NoFreeBlocksError
from minipaged.utils import cdiv, check_count


def refcounts(bm, seq_ids) -> dict[int, int]:
    "For every block the tables of `seq_ids` hold, how many of those tables hold it"
    # A reference count *is* the number of tables holding a block: count each table's blocks once.
    # A table never lists a block twice (check() verifies it), so no de-duplication is needed.
    counts = {}
    for sid in seq_ids:
        for b in bm.block_table(sid): counts[b] = counts.get(b, 0) + 1
    return counts


class LFUBlockManager(BlockManager):
    """A `BlockManager` that evicts the cached block with the fewest prefix-cache hits (the least recently used
    among equals) and keeps every invariant"""
    # BlockManager declares __slots__; a subclass that adds state declares its own, or gets a __dict__.
    __slots__ = ('hits',)

    def __init__(self, num_blocks: int, block_size: int, **kwargs):
        super().__init__(num_blocks, block_size, **kwargs)
        self.hits = [0] * num_blocks              # prefix-cache hits of each block since it was registered

    def allocate(self, seq_id, token_ids, salt=None) -> int:
        # `allocate` returns the tokens the cache supplied: its first `cached // B` blocks are the hits.
        cached = super().allocate(seq_id, token_ids, salt)
        for b in self.block_table(seq_id)[:cached // self.block_size]: self.hits[b] += 1
        return cached

    def _evict(self) -> int:
        # `min` returns the *first* smallest in iteration order, and the evictable queue iterates least
        # recently used first: ties go to LRU for free. A scan of the queue is O(cached blocks); a real
        # engine would keep buckets by count, but the exercise is about the invariants, not the constant.
        b = min(self._evictable, key=self.hits.__getitem__)
        # Everything the original `_evict` does, for the chosen block: out of the queue, out of the index,
        # no key and no content left (check() verifies that no key points at a reused block), one eviction.
        del self._evictable[b]
        del self._index[self._key[b]]
        self._key[b] = self._content[b] = None
        self._stats['evictions'] += 1
        self.hits[b] = 0                          # its next content starts with no hits
        return b


def rollback(bm, seq_id, num_tokens: int) -> list[tuple[int, int]]:
    "Drop the last `num_tokens` tokens of `seq_id`; return the block copies the engine must run"
    seq = bm._get(seq_id)
    n = len(seq.tokens) - check_count('num_tokens', num_tokens)
    if n < 1: raise ValueError(f"num_tokens must leave at least one token of {len(seq.tokens)}, got {num_tokens}")
    B, keep = bm.block_size, cdiv(n, bm.block_size)
    last = seq.blocks[keep - 1]
    # The new last block is partly filled again. If it is registered, its cached content (a full block) would
    # change at the next write: shared, it needs a copy, so check for a block *before* changing anything
    # (all or nothing, like every other operation).
    reopened = n % B != 0 and bm._key[last] is not None
    if reopened and bm._ref[last] > 1 and not (bm._free or bm._evictable):
        raise NoFreeBlocksError('rollback needs 1 block for a copy, 0 available', needed=1, available=0)
    # Release the blocks past the new end, tail first, exactly as `free` does: a block goes back to the pool
    # only when no table holds it and no copy in flight uses it.
    for b in reversed(seq.blocks[keep:]):
        bm._ref[b] -= 1
        if bm._ref[b] == 0 and not bm._pins[b]: bm._reclaim(b)
    del seq.blocks[keep:], seq.tokens[n:]
    # What is computed stays computed, up to the new end; keys exist only for computed full blocks.
    seq.num_computed = min(seq.num_computed, n)
    full = seq.num_computed // B
    del seq.hashes[full:], seq.uids[full:]
    if bm.enable_prefix_caching: seq.register_at = (full + 1) * B
    copies = []
    if reopened:
        if bm._ref[last] > 1: copies.append(bm._copy_on_write(seq))   # a private copy; the shared one stays cached
        else:                                                           # ours alone: it leaves the cache
            del bm._index[bm._key[last]]
            bm._key[last] = bm._content[last] = None
    # `room` may only permit writes into a private last block.
    last = seq.blocks[-1]
    seq.room = len(seq.blocks) * B - n if bm._ref[last] == 1 else 0
    return copies
