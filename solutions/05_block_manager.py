"Worked solutions to the exercises of chapter 05 (the block manager)."
from minipaged.engine.blocks import _free    # exercise 1 (build it): the library's own `free` is the worked solution


def refcounts(bm, seq_ids) -> dict[int, int]:
    "For every block the tables of `seq_ids` hold, how many of those tables hold it"
    # A reference count *is* the number of tables holding a block: count each table's blocks once.
    # A table never lists a block twice (check() verifies it), so no de-duplication is needed.
    counts = {}
    for sid in seq_ids:
        for b in bm.block_table(sid): counts[b] = counts.get(b, 0) + 1
    return counts

