"""How each chapter reads as a lesson, counted: the statistics gate of `make check`.

Per chapter: the exported cells (`#| export`, not counting a module's import-only cell), their median and
largest size in lines (directive lines and blank lines not counted), and the share of them followed within
two cells by a test: a code cell that is not exported and asserts something (`assert`, fastcore's `test_*`, a
`check_*` oracle). Also: the exercises at the end of the chapter (`## Exercises` and its `### Exercise` items)
whether the chapter closes with previous/next links, its cells and lines of code, and its "build it" exercises.

Fails (exit status 1, one line per problem) where a chapter's median is over MEDIAN_LINES, a cell is over
MAX_LINES (MAX_CLASS_LINES for a cell that declares one class whole), the share is under MIN_TESTED, a chapter (not an appendix, 90+) has fewer than MIN_EXERCISES exercises, a
chapter (appendices too) has over MAX_CELLS cells or MAX_CODE_LINES lines of code, a core chapter (BUILD_IT; its
first part, `NN_`) has no `### Exercise N (build it): …`, or a chapter's last cell is not its previous/next links (`tools/render_nav.py`).

    python tools/nb_stats.py            # the table, then the problems
    python tools/nb_stats.py --json F   # also write the numbers to F
"""
import argparse, ast, json, re, statistics, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MEDIAN_LINES = 12      # a chapter's median exported cell
MAX_LINES = 40         # any exported cell but a class declared whole
MAX_CLASS_LINES = 100  # a cell that declares one class whole, and nothing else
MIN_TESTED = 0.60      # exported cells with a test within two cells
MIN_EXERCISES = 2
MAX_CELLS = 150        # a chapter a learner can finish: cells of any kind...
MAX_CODE_LINES = 800   # ...and lines of code (non-blank lines of its code cells)
# The core chapters, each with a "build it" exercise: the learner writes the chapter's central mechanism
# from a stub, tested by the tests the library's version passes (that version is the worked solution)
BUILD_IT = ('01', '02', '03', '04', '05', '06', '08')
BUILD_IT_RE = re.compile(r'^###\s+Exercise\b[^\n]*\(build it\)', re.M)
TEST_RE = re.compile(r'^\s*assert\b|\btest_(?:eq|ne|close|fail|is|stdout|warns|shuffled|eq_type)\b\(|\bcheck_\w+\(',
                     re.MULTILINE)
CHAPTER_RE = re.compile(r'^\d\d[a-z]?_')

def code_lines(src: str) -> list[str]:
    "The lines a reader reads: no `#|` directives, no blank lines"
    return [l for l in src.splitlines() if l.strip() and not l.lstrip().startswith('#|')]

def is_exported(c) -> bool:
    return c['cell_type'] == 'code' and re.match(r'\s*#\|\s*exports?\b', ''.join(c['source'])) is not None

def import_only(src: str) -> bool:
    "An exported cell holding only imports and a module docstring (nothing a test could test)"
    body = [l for l in code_lines(src) if not l.lstrip().startswith('#')]
    text = '\n'.join(body)
    text = re.sub(r'("""|\'\'\')(.*?)\1', '', text, flags=re.S)
    return all(re.match(r'\s*(from\s+\S+\s+)?import\b|\s*$|\s*["\']', l) or l.startswith((' ', '\t', ')'))
               for l in text.splitlines())

def one_class(src: str) -> bool:
    "Whether a cell's code is one class declaration and nothing else"
    try: body = ast.parse('\n'.join(l for l in src.splitlines() if not l.lstrip().startswith('#|'))).body
    except SyntaxError: return False
    return len(body) == 1 and isinstance(body[0], ast.ClassDef)

def is_test(c) -> bool:
    return c['cell_type'] == 'code' and not is_exported(c) and TEST_RE.search(''.join(c['source'])) is not None

def chapter_stats(path: Path) -> dict:
    cells = json.loads(path.read_text())['cells']
    sizes, tested, over = [], 0, []
    for i, c in enumerate(cells):
        if not is_exported(c): continue
        src = ''.join(c['source'])
        if import_only(src): continue
        sizes.append(len(code_lines(src)))
        if len(code_lines(src)) > MAX_LINES and not one_class(src): over.append(len(code_lines(src)))
        if len(code_lines(src)) > MAX_CLASS_LINES: over.append(len(code_lines(src)))
        tested += any(is_test(n) for n in cells[i + 1:i + 3])
    md = [''.join(c['source']) for c in cells if c['cell_type'] == 'markdown']
    exercises = sum(len(re.findall(r'^###\s+Exercise\b', m, re.M)) for m in md)
    build_it = sum(len(BUILD_IT_RE.findall(m)) for m in md)
    code_total = sum(len([l for l in ''.join(c['source']).splitlines() if l.strip()])
                     for c in cells if c['cell_type'] == 'code')
    nav = bool(md) and bool(re.search(r'\[(?:←|Previous|Next|→)', md[-1]))
    return dict(chapter=path.stem, exported=len(sizes), median=statistics.median(sizes) if sizes else 0,
                max=max(sizes, default=0), tested=tested / len(sizes) if sizes else 1.0,
                exercises=exercises, build_it=build_it, cells=len(cells),
                code_lines=code_total, nav=nav, over=over)

def problems(s: dict) -> list[str]:
    out = []
    if s['exported'] and s['median'] > MEDIAN_LINES:
        out.append(f"{s['chapter']}: median exported cell {s['median']} lines (at most {MEDIAN_LINES})")
    for n in s['over']:
        out.append(f"{s['chapter']}: an exported cell of {n} lines (at most {MAX_LINES}; {MAX_CLASS_LINES} for a "
                   "class declared whole)")
    if s['tested'] < MIN_TESTED:
        out.append(f"{s['chapter']}: {s['tested']:.0%} of exported cells have a test within two cells "
                   f"(at least {MIN_TESTED:.0%})")
    if s['exercises'] < MIN_EXERCISES and int(s['chapter'][:2]) < 90:   # appendices (90, 91) have none
        out.append(f"{s['chapter']}: {s['exercises']} exercises (at least {MIN_EXERCISES})")
    if s['cells'] > MAX_CELLS:
        out.append(f"{s['chapter']}: {s['cells']} cells (at most {MAX_CELLS}: split it where it holds two lessons)")
    if s['code_lines'] > MAX_CODE_LINES:
        out.append(f"{s['chapter']}: {s['code_lines']} lines of code (at most {MAX_CODE_LINES})")
    if s['chapter'][:2] in BUILD_IT and s['chapter'][2] == '_' and not s['build_it']:
        out.append(f"{s['chapter']}: no '### Exercise N (build it): …' (a core chapter has one)")
    if not s['nav']: out.append(f"{s['chapter']}: no previous/next links in its last cell")
    return out

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--json', help='also write the statistics to this file')
    ap.add_argument('--no-fail', action='store_true', help='print the table only')
    a = ap.parse_args(argv)
    rows = [chapter_stats(p) for p in sorted((ROOT / 'nbs').glob('*.ipynb')) if CHAPTER_RE.match(p.name)]
    print(f"{'chapter':28} {'cells':>5} {'code':>5} {'exported':>8} {'median':>6} {'max':>4} {'tested':>6} "
          f"{'exercises':>9} {'build':>5} {'nav':>3}")
    for s in rows:
        print(f"{s['chapter']:28} {s['cells']:5d} {s['code_lines']:5d} {s['exported']:8d} {s['median']:6.1f} "
              f"{s['max']:4d} {s['tested']:6.0%} {s['exercises']:9d} {s['build_it']:5d} {'yes' if s['nav'] else 'no':>3}")
    allsizes = [s['exported'] for s in rows]
    tot = sum(allsizes)
    print(f"{'all':28} {sum(s['cells'] for s in rows):5d} {sum(s['code_lines'] for s in rows):5d} {tot:8d} {'':6} {max(s['max'] for s in rows):4d} "
          f"{sum(s['tested'] * s['exported'] for s in rows) / max(tot, 1):6.0%} {sum(s['exercises'] for s in rows):9d}")
    if a.json: Path(a.json).write_text(json.dumps(rows, indent=1) + '\n')
    found = [p for s in rows for p in problems(s)]
    for p in found: print('error:', p, file=sys.stderr)
    return 1 if found and not a.no_fail else 0

if __name__ == '__main__': sys.exit(main())
