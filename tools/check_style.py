"""The style gate of `make check`: what a reader of the library can rely on, checked on every run.

- ruff: no unused imports or undefined names (pyflakes, `F`) in the library;
- no line of an exported notebook cell over MAX_LINE characters (what nbdev adds, `__all__` and the module
  docstring from the chapter title, is nbdev's), and no exported cell over MAX_CELL_LINES lines: one idea,
  next to the prose that explains it; a cell that declares one class whole (and nothing else) may run to
  MAX_CLASS_LINES, so a class's every member is read in one place;
- no method is attached by assignment (`Cls.name = f`, or `name = Other.name` in a class body): methods are
  defined in the class or attached with `minipaged.utils.patch_to`, so each module's `__all__` is its real API.

Exit status 1 and one line per problem when something fails."""
import ast, json, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_CELL_LINES = 40
MAX_CLASS_LINES = 100
MAX_LINE = 110
RUFF = [sys.executable, '-m', 'ruff']

def ruff_problems() -> list[str]:
    "pyflakes over the exported modules"
    r = subprocess.run(RUFF + ['check', '--quiet', '--output-format', 'concise', '--select', 'F', 'minipaged',
                               '--exclude', 'minipaged/_modidx.py'], cwd=ROOT, capture_output=True, text=True)
    found = [l for l in r.stdout.splitlines() if l.strip()]
    if r.returncode != 0 and not found:                # ruff itself failed (not installed, a bad option)
        found = [f"ruff could not run (exit {r.returncode}): {r.stderr.strip()[-300:] or 'no output'}"]
    return found

def exported_cells():
    "(notebook, cell number, source without its directive line) of every exported code cell"
    for p in sorted((ROOT / 'nbs').glob('*.ipynb')):
        for i, c in enumerate(json.loads(p.read_text())['cells']):
            s = ''.join(c['source'])
            if c['cell_type'] == 'code' and s.startswith('#| export'): yield p.name, i, s.split('\n', 1)[1]

def one_class(src: str) -> bool:
    "Whether a cell's code is one class declaration and nothing else (comments and blank lines aside)"
    try: body = ast.parse(src).body
    except SyntaxError: return False
    return len(body) == 1 and isinstance(body[0], ast.ClassDef)

def cell_limit(src: str) -> int: return MAX_CLASS_LINES if one_class(src) else MAX_CELL_LINES

def long_cells() -> list[str]:
    "Exported cells longer than their limit: MAX_CELL_LINES, or MAX_CLASS_LINES for a class declared whole"
    return [f"{nb} cell {i}: {len(src.splitlines())} lines (at most {cell_limit(src)})"
            for nb, i, src in exported_cells() if len(src.splitlines()) > cell_limit(src)]

def long_lines() -> list[str]:
    "Lines of exported cells longer than MAX_LINE"
    return [f"{nb} cell {i} line {k}: {len(l)} characters (at most {MAX_LINE})"
            for nb, i, src in exported_cells() for k, l in enumerate(src.splitlines(), 2) if len(l) > MAX_LINE]

def attached_by_assignment(tree: ast.Module, where: str) -> list[str]:
    "Top-level `Cls.attr = value` and class-body `name = Other.attr` statements of one module"
    bad = []
    classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
    for n in tree.body:
        if isinstance(n, ast.Assign):
            for t in n.targets:
                for e in (t.elts if isinstance(t, ast.Tuple) else [t]):
                    if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id[:1].isupper():
                        bad.append(f"{where}:{n.lineno}: {e.value.id}.{e.attr} attached by assignment (use patch_to)")
        if isinstance(n, ast.ClassDef):
            for m in n.body:
                vals = m.value.elts if isinstance(m, ast.Assign) and isinstance(m.value, ast.Tuple) else \
                    [m.value] if isinstance(m, ast.Assign) else []
                for v in vals:
                    if isinstance(v, ast.Attribute) and isinstance(v.value, ast.Name) and v.value.id in classes:
                        bad.append(f"{where}:{m.lineno}: {n.name} copies {v.value.id}.{v.attr} (share it by declaration)")
    return bad

def assignment_attachments() -> list[str]:
    out = []
    for p in sorted((ROOT / 'minipaged').rglob('*.py')):
        if p.name != '_modidx.py': out += attached_by_assignment(ast.parse(p.read_text()), str(p.relative_to(ROOT)))
    return out

if __name__ == '__main__':
    problems = ruff_problems() + long_lines() + long_cells() + assignment_attachments()
    for p in problems: print(p)
    print(f"style check: {len(problems)} problem(s)" if problems else "style check: ruff, line and cell length, method attachment pass")
    sys.exit(1 if problems else 0)
