"""Stateful property tests of the block manager (chapter 05) with hypothesis.

A `RuleBasedStateMachine` drives allocate (with prefix hits), append, compute, fork, free (finish or cancel)
and bad calls against a model of the expected state: each live sequence's token ids and salt, and a
simulated KV cache, a dict slot -> (salt, token id) written by "the engine" at the slots the manager
returns, with every block the manager reports fresh (`pop_fresh_blocks`) zeroed as it is handed out, and the
copy-on-write copies run late, as the engine runs them: they wait (`pending`) while other operations go on -- frees,
allocations, appends: the scheduler's planning of a step -- and run, followed by `copies_done()`, before the next
write or when a rule says so. Reads see a pending copy's target through its source, as they will once it runs. After every step: `check()`, and the
isolation property -- every computed position of every live sequence reads back its own (salt, token)
from its slot -- which fails if a write ever lands in a block another sequence reads, if a prefix hit
hands out wrong or uncomputed KV (or KV zeroed as fresh), if a stale key survives a block's reuse, or if
salts share; and past its computed tokens, every page of a sequence holds zeros only, which fails if a
block reaches a new owner unreported."""
import subprocess, sys, json
from pathlib import Path
from hypothesis import HealthCheck, event, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from minipaged.engine.allocator import blocks_held_at_most
from minipaged.engine.blocks import NO_BLOCK, BlockManager, NoFreeBlocksError
from minipaged.engine.reservation import ReservationManager

B = 4
# Prompts are cut from a few fixed token strings, so that prefixes (and hits) are common.
PREFIXES = [tuple(range(1, 13)), (1, 2, 3, 4, 7, 7, 7, 7, 5, 6, 7, 8), (1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0), (9,) * 12]
SALTS = [None, 'tenant-a', 'tenant-b']


class BlockMachine(RuleBasedStateMachine):
    "The model: live sequences' tokens and salts, and the KV content of every slot"
    def make(self): return BlockManager(12, B, record_fresh=True)

    def __init__(self):
        super().__init__()
        self.bm = self.make()
        self.kv, self.tokens, self.salt, self.awaiting, self.pending = {}, {}, {}, set(), []
        self.next_id, self.gone, self.recent = 0, [], []
        self.B = self.bm.block_size
        self.deferred = self.bm.defers_fork_copies   # the baseline's fork copies arrive with the child's first append

    # ---- helpers -------------------------------------------------------------------------------
    def snapshot(self):
        bm = self.bm
        seqs = {s: (bm.block_table(s), bm.num_tokens(s), bm.num_computed(s)) for s in self.tokens}
        return (bm.metrics(), seqs, bm.num_free_blocks, bm.num_available_blocks, bm.snapshot(), bm.copies_in_flight)

    def zero_fresh(self):
        "The engine zeroes the blocks handed out without cached content, before any copy or write"
        for b in self.bm.pop_fresh_blocks():
            for o in range(self.B): self.kv.pop(b * self.B + o, None)

    def run_copies(self):
        "The engine runs the step's copies (after zeroing fresh blocks), then tells the manager"
        for src, dst in self.pending:
            for o in range(self.B): self.kv[dst * self.B + o] = self.kv.get(src * self.B + o)
        self.pending = []
        self.bm.copies_done()

    def read(self, slot):
        "What a slot will hold once the pending copies have run"
        for src, dst in reversed(self.pending):
            if slot // self.B == dst: slot = src * self.B + slot % self.B
        return self.kv.get(slot)

    def write(self, sid, start, end):
        "The engine computes positions [start, end) of `sid`: K/V lands in their slots, then mark_computed"
        self.run_copies()
        tables = {o: set(self.bm.block_table(o)) - {NO_BLOCK} for o in self.tokens}
        for p, slot in zip(range(start, end), self.bm.slots(sid, start, end)):
            block = slot // self.B
            assert block in tables[sid], 'a slot outside the sequence\'s own blocks'
            assert sum(block in t for t in tables.values()) == 1, f'a write into block {block}, which another sequence reads'
            self.kv[slot] = (self.salt[sid], self.tokens[sid][p])
        self.bm.mark_computed(sid, end)

    def first_held(self, sid):
        "The first position whose block the sequence still holds: 0, or past the blocks a window released"
        return self.bm.block_table(sid).count(NO_BLOCK) * self.B

    def pick(self, data, only=None):
        live = [s for s in sorted(self.tokens) if only is None or only(s)]
        return data.draw(st.sampled_from(live)) if live else None

    # ---- rules ---------------------------------------------------------------------------------
    @rule(data=st.data(), n=st.integers(1, 12), tail=st.lists(st.integers(0, 3), max_size=6), salt=st.sampled_from(SALTS),
          compute=st.sampled_from(['all', 'some', 'none']))
    def allocate(self, data, n, tail, salt, compute):
        if self.recent and data.draw(st.booleans()):           # an earlier prompt again: a likely prefix hit
            prompt, salt = data.draw(st.sampled_from(self.recent))
            prompt = list(prompt)
        else: prompt = list(data.draw(st.sampled_from(PREFIXES))[:n]) + tail
        sid, before, can = self.next_id, self.snapshot(), self.bm.can_allocate(prompt, salt)
        try: cached = self.bm.allocate(sid, prompt, salt)
        except (NoFreeBlocksError, ValueError) as e:
            assert not can, f'can_allocate promised success, allocate raised {e!r}'
            assert self.snapshot() == before, 'a failed allocate changed the pool'
            event(f'allocate refused: {type(e).__name__}'); return
        assert can, 'can_allocate said no, allocate succeeded'
        self.zero_fresh()
        self.next_id += 1
        self.tokens[sid], self.salt[sid] = prompt, salt
        self.recent = (self.recent + [(tuple(prompt), salt)])[-6:]
        assert 0 <= cached < len(prompt) and cached % self.B == 0, f'{cached} cached tokens of a {len(prompt)}-token prompt'
        assert self.bm.num_computed(sid) == cached
        if cached: event('prefix hit')
        lo = min(self.first_held(sid), cached)
        for p, slot in zip(range(lo, cached), self.bm.slots(sid, lo, cached)):   # the reused KV is this prefix's, this salt's
            assert self.kv.get(slot) == (salt, prompt[p]), f'prefix hit at position {p} reads {self.kv.get(slot)}'
        if compute == 'all': self.write(sid, cached, len(prompt))
        elif compute == 'some': self.write(sid, cached, data.draw(st.integers(cached, len(prompt))))

    @rule(data=st.data())
    def compute(self, data):
        "A (possibly chunked) forward pass over some uncomputed positions"
        sid = self.pick(data, lambda s: self.bm.num_computed(s) < len(self.tokens[s]))
        if sid is None: return
        start = self.bm.num_computed(sid)
        self.write(sid, start, data.draw(st.integers(start + 1, len(self.tokens[sid]))))

    @rule(data=st.data(), new=st.lists(st.integers(0, 3), min_size=1, max_size=5), compute=st.booleans())
    def append(self, data, new, compute):
        sid = self.pick(data)
        if sid is None: return
        if data.draw(st.integers(0, 3)): new = new[:1]                 # mostly one token: decoding
        before, can = self.snapshot(), self.bm.can_append(sid, len(new))
        try: copies = self.bm.append(sid, new)
        except (NoFreeBlocksError, ValueError) as e:
            assert not can, f'can_append promised success, append raised {e!r}'
            assert self.snapshot() == before, 'a failed append changed the pool'
            event('append refused'); return
        assert can, 'can_append said no, append succeeded'
        self.zero_fresh()
        if copies: event('copy-on-write')
        self.pending += copies                                         # run later, before the next write
        self.awaiting.discard(sid)
        self.tokens[sid] = self.tokens[sid] + list(new)
        if compute: self.write(sid, self.bm.num_computed(sid), len(self.tokens[sid]))

    @rule()
    def engine_step(self):
        "The planned step runs: its copies first"
        self.run_copies()

    @rule(data=st.data())
    def fork(self, data):
        sid = self.pick(data)
        if sid is None: return
        child, before = self.next_id, self.snapshot()
        computed = self.bm.num_computed(sid) == len(self.tokens[sid])
        try: self.bm.fork(sid, child)
        except ValueError as e:
            assert not computed and 'uncomputed' in str(e), e
            assert self.snapshot() == before; return
        except NoFreeBlocksError:
            assert self.deferred and self.snapshot() == before; return      # only the baseline needs blocks to fork
        assert computed, 'fork of a partly computed sequence succeeded'
        self.zero_fresh()
        self.next_id += 1
        self.tokens[child], self.salt[child] = list(self.tokens[sid]), self.salt[sid]
        if self.deferred: self.awaiting.add(child)
        else: assert self.bm.block_table(child) == self.bm.block_table(sid)

    @rule(data=st.data())
    def free(self, data):
        "A request finishes or is cancelled (mid-prefill or mid-decode): the same release"
        sid = self.pick(data)
        if sid is None: return
        self.bm.free(sid)
        del self.tokens[sid], self.salt[sid]
        self.awaiting.discard(sid); self.gone.append(sid)

    @rule(data=st.data(), what=st.sampled_from(['free', 'append', 'mark', 'fork', 'slots', 'allocate', 'count']))
    def bad_call(self, data, what):
        "Unknown or freed ids, an existing id, negative counts: a ValueError naming the argument, and no change"
        before = self.snapshot()
        gone = data.draw(st.sampled_from(self.gone + [10_000, 'nobody']))
        live = self.pick(data)
        calls = dict(free=(lambda: self.bm.free(gone), 'seq_id'), append=(lambda: self.bm.append(gone, [1]), 'seq_id'),
                     mark=(lambda: self.bm.mark_computed(gone, 0), 'seq_id'), fork=(lambda: self.bm.fork(gone, 'x'), 'parent_id'),
                     slots=(lambda: self.bm.slots(gone, 0, 0), 'seq_id'),
                     allocate=(lambda: self.bm.allocate(live, [1]), 'seq_id'), count=(lambda: self.bm.can_append(live, -1), 'num_tokens'))
        if live is None and what in ('allocate', 'count'): return
        call, name = calls[what]
        try: call()
        except ValueError as e: assert name in str(e), f'{e!r} does not name {name}'
        else: raise AssertionError(f'{what} with a bad argument did not raise')
        assert self.snapshot() == before, f'a failed {what} changed the pool'

    # ---- invariants ----------------------------------------------------------------------------
    @invariant()
    def pool_is_consistent(self):
        self.bm.check()
        m = self.bm.metrics()
        if m['evictions']: event('evictions happened')
        if not self.deferred: assert m['used'] + m['cached'] + m['free'] == self.bm.num_blocks

    @invariant()
    def every_sequence_reads_its_own_tokens(self):
        tables = {}
        for sid, toks in self.tokens.items():
            assert self.bm.num_tokens(sid) == len(toks)
            tables[sid] = set(self.bm.block_table(sid)) - {NO_BLOCK}
            if sid in self.awaiting: continue
            n = self.bm.num_computed(sid)
            lo = min(self.first_held(sid), n)                            # a window released what lies before
            got = [self.read(s) for s in self.bm.slots(sid, lo, n)]
            assert got == [(self.salt[sid], t) for t in toks[lo:n]], f'seq {sid} reads {got}, wrote {toks[lo:n]}'
        for a in tables:                                               # different salts never share a block
            for b in tables:
                if a < b and self.salt[a] != self.salt[b]: assert not tables[a] & tables[b], f'salts share: {a}, {b}'


    @invariant()
    def pages_hold_zeros_past_computed_tokens(self):
        "What the engine's CPU backend relies on to skip its padding fill (the baseline's deferred fork copies carry the parent's later tokens: exempt)"
        if self.deferred: return
        for sid in self.tokens:
            table, n = self.bm.block_table(sid), self.bm.num_computed(sid)
            stale = [q for q in range(n, len(table) * self.B) if table[q // self.B] != NO_BLOCK and self.read(table[q // self.B] * self.B + q % self.B) is not None]
            assert not stale, f'seq {sid}: positions {stale} past its {n} computed tokens hold stale KV'


class WindowMachine(BlockMachine):
    "A sliding window of 1-9 keys: blocks behind it go back as tokens are computed, and no sequence holds more"
    window = 5
    def make(self): return BlockManager(12, B, record_fresh=True, window=self.window)

    @initialize(window=st.integers(1, 9))
    def pick_window(self, window):
        "Each example its window (before any operation: the manager is still empty)"
        self.window = window; self.bm = self.make()

    @invariant()
    def a_sequence_holds_at_most_its_window(self):
        for sid, toks in self.tokens.items():
            held, n = len(set(self.bm.block_table(sid)) - {NO_BLOCK}), self.bm.num_computed(sid)
            bound = blocks_held_at_most(0, len(toks), self.B, self.window, max(len(toks) - n, 1))
            assert held <= bound, f'seq {sid}: {held} blocks held, the window of {self.window} bounds it at {bound}'
            if held < len(self.bm.block_table(sid)): event('a window released blocks')


class NoCacheMachine(BlockMachine):
    def make(self): return BlockManager(12, B, enable_prefix_caching=False, record_fresh=True)

class ReservationMachine(BlockMachine):
    def make(self): return ReservationManager(12, B, max_model_len=16, record_fresh=True)

class CollidingHashMachine(BlockMachine):
    "A hash with three values: keys collide all the time, and a hit must still never alias another prefix or salt"
    def make(self):
        return BlockManager(12, B, record_fresh=True, key_hash=lambda key: hash(key) % 3)

class TinyPoolMachine(BlockMachine):
    "Three blocks of 2: every operation runs into the pool's edges, evictions everywhere"
    def make(self): return BlockManager(3, 2, record_fresh=True)


_fast = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
TestBlockManager = BlockMachine.TestCase
TestBlockManager.settings = settings(max_examples=500, stateful_step_count=60, **_fast)
TestBlockManagerNoCache = NoCacheMachine.TestCase
TestBlockManagerNoCache.settings = settings(max_examples=100, stateful_step_count=40, **_fast)
TestReservationManager = ReservationMachine.TestCase
TestReservationManager.settings = settings(max_examples=100, stateful_step_count=40, **_fast)
TestCollidingHash = CollidingHashMachine.TestCase
TestCollidingHash.settings = settings(max_examples=150, stateful_step_count=40, **_fast)
TestWindow = WindowMachine.TestCase
TestWindow.settings = settings(max_examples=300, stateful_step_count=60, **_fast)
TestTinyPool = TinyPoolMachine.TestCase
TestTinyPool.settings = settings(max_examples=100, stateful_step_count=40, **_fast)


def test_benchmark_runs_and_writes_json(tmp_path):
    "The benchmark script's small version: it runs, checks the pool, prints a table and writes its JSON"
    out = tmp_path / 'ops.json'
    root = Path(__file__).resolve().parent.parent
    r = subprocess.run([sys.executable, str(root / 'benchmarks' / 'blocks_ops.py'), '--seqs', '60', '--repeat', '1', '--check',
                        '--num-blocks', '600', '--max-running', '16', '--json', str(out)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    res = json.loads(out.read_text())
    assert 'us per operation' in r.stdout and res['operations'] == res['rows'][-1]['calls']
    assert res['metrics']['used'] == 0 and res['metrics']['prefix_hit_tokens'] > 0 and res['metrics']['cow_copies'] > 0
