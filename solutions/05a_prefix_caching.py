"Worked solutions to the exercises of chapter 05a (prefix caching)."
from minipaged.engine.blocks import BlockManager, NoFreeBlocksError, _reclaim, _take
from minipaged.engine.prefix_cache import PrefixCache
from minipaged.utils import cdiv, check_count


class LFUCache(PrefixCache):
    """A `PrefixCache` that evicts the cached block with the fewest prefix-cache hits (the least recently used
    among equals) and keeps every invariant"""
    # PrefixCache declares __slots__; a subclass that adds state declares its own, or gets a __dict__.
    __slots__ = ('hits',)

    def __init__(self, num_blocks: int, block_size: int, *args, **kwargs):
        super().__init__(num_blocks, block_size, *args, **kwargs)
        self.hits = [0] * num_blocks              # prefix-cache hits of each block since it was registered

    def revive(self, hits: list[int]) -> int:
        # `allocate` passes every cached block of a new table through here, referenced or not: one hit each.
        for b in hits: self.hits[b] += 1
        return super().revive(hits)

    def evict(self) -> int:
        # `min` returns the *first* smallest in iteration order, and the evictable queue iterates least
        # recently used first: ties go to LRU for free. A scan of the queue is O(cached blocks); a real
        # engine would keep buckets by count, but the exercise is about the invariants, not the constant.
        b = min(self.evictable, key=self.hits.__getitem__)
        # Everything the original `evict` does, for the chosen block: out of the queue, out of the index,
        # no key and no content left (check() verifies that no key points at a reused block), one eviction.
        del self.evictable[b]
        del self.index[self.key[b]]
        self.key[b] = self.content[b] = None
        self.evictions += 1
        self.hits[b] = 0                          # its next content starts with no hits
        return b


class LFUBlockManager(BlockManager):
    "A `BlockManager` whose prefix cache is an `LFUCache`"
    __slots__ = ()

    def __init__(self, num_blocks: int, block_size: int, **kwargs):
        super().__init__(num_blocks, block_size, **kwargs)
        self.cache = LFUCache(num_blocks, block_size, self.context, kwargs.get('key_hash', hash))


def rollback(bm, seq_id, num_tokens: int) -> list[tuple[int, int]]:
    "Drop the last `num_tokens` tokens of `seq_id`; return the block copies the engine must run"
    seq = bm._get(seq_id)
    n = len(seq.tokens) - check_count('num_tokens', num_tokens)
    if n < 1: raise ValueError(f"num_tokens must leave at least one token of {len(seq.tokens)}, got {num_tokens}")
    pool, cache = bm.pool, bm.cache
    B, keep = bm.block_size, cdiv(n, bm.block_size)
    last = seq.blocks[keep - 1]
    # The new last block is partly filled again. If it is registered, its cached content (a full block) would
    # change at the next write: shared, it needs a copy, so check for a block *before* changing anything
    # (all or nothing, like every other operation).
    reopened = n % B != 0 and cache.key[last] is not None
    if reopened and pool.ref[last] > 1 and not bm.num_available_blocks:
        raise NoFreeBlocksError('rollback needs 1 block for a copy, 0 available', needed=1, available=0)
    # Release the blocks past the new end, tail first, exactly as `free` does: a block goes back to the pool
    # only when no table holds it and no copy in flight uses it.
    for b in reversed(seq.blocks[keep:]):
        if pool.unref(b) and not bm._in_flight.pins[b]: _reclaim(bm, b)
    del seq.blocks[keep:], seq.tokens[n:]
    # What is computed stays computed, up to the new end; keys exist only for computed full blocks.
    seq.num_computed = min(seq.num_computed, n)
    full = seq.num_computed // B
    del seq.hashes[full:], seq.uids[full:]
    if bm.enable_prefix_caching: seq.register_at = (full + 1) * B
    copies = []
    if reopened:
        if pool.ref[last] > 1:                    # a private copy; the shared one stays cached
            [dst] = _take(bm, 1)
            pool.ref[last] -= 1
            seq.blocks[-1] = dst
            bm._in_flight.hold(last, dst, pool.gen)
            bm._stats['cow_copies'] += 1
            copies.append((last, dst))
        else:                                     # ours alone: it leaves the cache
            del cache.index[cache.key[last]]
            cache.key[last] = cache.content[last] = None
    # `room` may only permit writes into a private last block.
    seq.room = len(seq.blocks) * B - n if pool.ref[seq.blocks[-1]] == 1 else 0
    return copies
