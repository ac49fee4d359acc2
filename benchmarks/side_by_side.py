"""Two commits side by side in one run: a benchmark script of another commit and of this checkout, in turn.

The machines are noisy (shared 2-core VMs whose speed drifts by ±10% over minutes), so figures from two
runs do not compare; figures from rounds that alternate on the same machine do. The other commit's tree is
exported with `git archive` into a temporary folder; each round runs its copy of the script and this
checkout's (which goes first alternates from round to round), each with its own `minipaged` first on
PYTHONPATH and `--json` into the temporary folder. `--field` names figures in that JSON by path
(`us_per_operation`, `rows.0.us_per_seq_step`); the table gives them per round, then their medians and the
median of the per-round ratios (this / against).

    python benchmarks/side_by_side.py --against HEAD~1 --rounds 5 --field us_per_operation -- blocks_ops.py
    python benchmarks/side_by_side.py --against HEAD~3 \\
        --field rows.0.us_per_seq_step rows.2.us_per_seq_step -- scheduler_overhead.py --repeats 1
"""
import argparse, json, os, statistics, subprocess, sys, tarfile, tempfile
from io import BytesIO
from pathlib import Path
import harness


def export_commit(commit: str, dest: Path) -> str:
    "Unpack the tree of `commit` into `dest`; return its short hash"
    def git(*args, **kw):
        cmd = ['git', '-C', str(harness.ROOT), *args]
        return subprocess.run(cmd, capture_output=True, check=True, **kw).stdout
    short = git('rev-parse', '--short', commit, text=True).strip()
    with tarfile.open(fileobj=BytesIO(git('archive', '--format=tar', short))) as tar:
        tar.extractall(dest, filter='data')
    return short


def run_script(root: Path, script: str, args: list[str], out: Path) -> dict:
    "Run `root`/benchmarks/`script` with `args` against `root`'s minipaged; return the JSON it wrote"
    env = dict(os.environ, PYTHONPATH=str(root))
    cmd = [sys.executable, str(root / 'benchmarks' / script), *args, '--json', str(out)]
    r = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True)
    if r.returncode != 0: sys.exit(f"{' '.join(cmd)} failed (exit {r.returncode}):\n{r.stderr[-3000:]}")
    return json.loads(out.read_text())


def field(record: dict, path: str) -> float:
    "The figure at a dotted `path` in a result record; list items by index (`rows.0.us_per_seq_step`)"
    value = record
    for key in path.split('.'):
        try: value = value[int(key)] if isinstance(value, list) else value[key]
        except (KeyError, IndexError, ValueError, TypeError):
            sys.exit(f"--field {path}: no '{key}' in the script's JSON")
    if not isinstance(value, (int, float)): sys.exit(f"--field {path} is {value!r}, not a number")
    return value


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--against', required=True, help='the other commit (anything git rev-parse understands)')
    ap.add_argument('--rounds', type=int, default=3, help='alternating rounds (default 3)')
    ap.add_argument('--field', nargs='+', required=True, help='figures: dotted paths into the JSON')
    ap.add_argument('--json', help='write the rounds and the medians to this path')
    ap.add_argument('script', help='a script in benchmarks/, e.g. blocks_ops.py')
    ap.add_argument('args', nargs=argparse.REMAINDER, help="the script's flags, after --")
    a = ap.parse_args(argv)
    if a.rounds < 1: ap.error(f"--rounds must be a positive integer, got {a.rounds}")
    args = a.args[1:] if a.args[:1] == ['--'] else a.args
    print(harness.header_line())
    with tempfile.TemporaryDirectory() as tmp:
        old = Path(tmp) / 'against'
        against = export_commit(a.against, old)
        sides = dict(against=old, this=harness.ROOT)
        rounds = []
        for i in range(a.rounds):
            order = list(sides) if i % 2 == 0 else list(sides)[::-1]
            got = {s: run_script(sides[s], a.script, args, Path(tmp) / f'{s}.json') for s in order}
            rounds.append({f: {side: field(got[side], f) for side in sides} for f in a.field})
            print(f"round {i + 1} of {a.rounds} done ({' then '.join(order)})", flush=True)
    table = [dict(round=i + 1, field=f, against=r[f]['against'], this=r[f]['this'],
                  ratio=r[f]['this'] / r[f]['against']) for i, r in enumerate(rounds) for f in a.field]
    med = lambda f, key: statistics.median(row[key] for row in table if row['field'] == f)
    fields = [dict(field=f, against_median=med(f, 'against'), this_median=med(f, 'this'),
                   ratio_median=med(f, 'ratio')) for f in a.field]
    harness.print_table(table, f"{a.script} {' '.join(args)}: commit {against} (against) and this checkout")
    harness.print_table(fields, f"\nmedians over {a.rounds} rounds; ratio: this / against, per round")
    if a.json:
        harness.write_json(a.json, dict(script=a.script, script_args=args, against=against, rounds=a.rounds,
                                        per_round=table, fields=fields), argv)
    return 0


if __name__ == '__main__':
    sys.exit(main())
