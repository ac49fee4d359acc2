"""How long each chapter takes to run as a learner's "Run All" does it (slow cells not opted in), on this machine.

Runs every chapter notebook of `nbs/` one after another with nbdev's runner (the cells a plain run executes,
figures to a temp folder, exercises as stubs) and prints seconds per chapter. The course map
(`nbs/index.ipynb`) reads the JSON to say how long each chapter takes on a laptop-class CPU. A benchmark, not
a test: nothing is asserted about the times.

    python benchmarks/chapter_times.py --json benchmarks/results/chapter_times.json
    python benchmarks/chapter_times.py --only 00a_kv_budget 01_paging
"""
import argparse, os, sys, tempfile, time
from pathlib import Path
import harness                                  # first: it puts this checkout's minipaged on the path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--only', nargs='*', help='chapter stems to time (default: every chapter)')
    ap.add_argument('--json', help='write the times here')
    a = ap.parse_args(argv)
    root = Path(__file__).resolve().parent.parent
    os.environ.setdefault('MINIPAGED_FIGURE_DIR', tempfile.mkdtemp(prefix='minipaged-figures-'))
    os.environ.setdefault('MPLBACKEND', 'Agg')
    for k in ('MINIPAGED_SLOW', 'MINIPAGED_SOLUTIONS'): os.environ.pop(k, None)   # what a learner runs
    import torch
    if not torch.cuda.is_available(): os.environ.setdefault('TRITON_INTERPRET', '1')
    from nbdev.config import get_config
    from nbdev.test import test_nb
    skip = get_config(root).tst_flags.split()
    rows = []
    for p in sorted((root / 'nbs').glob('[0-9]*.ipynb')):
        if a.only and p.stem not in a.only: continue
        t0 = time.perf_counter()
        ok, _ = test_nb(p, skip_flags=skip, basepath=root, cell_timeout=900)
        rows.append(dict(chapter=p.stem, seconds=round(time.perf_counter() - t0, 1), ok=ok))
    print(harness.header_line())
    harness.print_table(rows)
    if a.json:
        harness.write_json(a.json, dict(chapters=rows), argv)
        print(f"wrote {a.json}")
    return 0 if all(r['ok'] for r in rows) else 1

if __name__ == '__main__': sys.exit(main())
