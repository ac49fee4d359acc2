"Worked solutions to the exercises of chapter 10 (isolation, lifetimes and faults)."
from minipaged.engine.blocks import BlockManager
from minipaged.testing.engine import RefuseBlocks


def check_pool_back(llm, baseline: int) -> None:
    "Assert that `llm`'s pool is back at `baseline`: nothing used, nothing in flight, nothing lost"
    bm = llm.block_manager
    # Three separate questions, each with its own message: a block still referenced (a request not
    # finished, or a reference leaked), a copy-on-write window never closed, and a block that is neither
    # free nor cached nor used (lost). Cached blocks count as available: the prefix cache may keep them.
    assert bm.num_used_blocks == 0, f'{bm.num_used_blocks} blocks still used'
    assert bm.num_copies_in_flight == 0, f'{bm.num_copies_in_flight} copies still in flight'
    available = bm.num_free_blocks + bm.num_cached_blocks
    assert available == baseline, f'{available} blocks free or cached, {baseline} before the run'


class _RefuseAfter(RefuseBlocks):
    "RefuseBlocks that lets the request's first `k` calls through"
    def __init__(self, bm, request_id, error, k: int):
        super().__init__(bm, request_id, error)
        self._left = k

    def _refusing(self, f):
        # The same wrapper as RefuseBlocks', with a counter shared by `allocate` and `append` (both go
        # through here), so the count is of the request's block-manager calls, in order.
        def call(seq_id, *a, **kw):
            if seq_id[0] == self._rid:
                if self._left <= 0: raise self._error
                self._left -= 1
            return f(seq_id, *a, **kw)
        return call


def refuse_after(llm, request_id, k: int, error=None) -> None:
    "From its (k+1)-th allocation or append on, every block `request_id` asks for raises `error`"
    # The scheduler holds the block manager it calls as `bm`: replacing it there is enough, as in
    # `refuse_blocks`. The scheduler's `_fail` turns the error into an `aborted` end for this request only.
    llm.scheduler.bm = _RefuseAfter(llm.block_manager, request_id, error or RuntimeError('injected: refused'), k)


class Mutant(BlockManager):
    "A block manager whose invariants hold but whose engine's tokens are wrong: it hides its copies"
    __slots__ = ()

    def append(self, seq_id, token_ids):
        # The block manager does everything right — the new block, the reference counts, the reclamation
        # window — and returns the copy-on-write copies the engine must run before the step. Returning none
        # means the engine never copies the shared half-full block into the writer's new one: the writer
        # reads a zeroed block where its context should be. Every invariant of `check_engine` is about the
        # bookkeeping, which is sound; only the tokens show it. Catching it would take checking the cache's
        # contents (that a copy target holds its source's KV), which costs a pass over the cache per step.
        super().append(seq_id, token_ids)
        return []
