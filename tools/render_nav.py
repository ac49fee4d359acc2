"""Write the previous/next links that close every chapter (run by `make sync`, so `make check` fails when one is
missing or stale).

The chapters are the notebooks of `nbs/` whose names start with two digits, in name order; the course map
(`index.ipynb`) comes before the first, the glossary and references are linked from every one. Links are
relative to `nbs/`, so they work in JupyterLab (which opens `nbs/`), on the HTML site and on the repository
page. The links live in a markdown cell with the id `chapter-nav`, always the chapter's last cell.

    python tools/render_nav.py          # rewrite what is stale
    python tools/render_nav.py --check  # exit 1 where a chapter's links are missing or stale
"""
import json, re, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NBS = ROOT / 'nbs'
NAV_ID = 'chapter-nav'

def chapters() -> list[Path]:
    return sorted(p for p in NBS.glob('*.ipynb') if re.match(r'\d\d', p.name))

def title(p: Path) -> str:
    "The notebook's first level-1 heading"
    for c in json.loads(p.read_text())['cells']:
        if c['cell_type'] == 'markdown':
            m = re.search(r'^#\s+(.+)$', ''.join(c['source']), re.M)
            if m: return m.group(1).strip()
    return p.stem

def nav_source(prev: Path | None, nxt: Path | None) -> str:
    left = f"[← {title(prev)}]({prev.name})" if prev else "[← Course map](index.ipynb)"
    right = f"[{title(nxt)} →]({nxt.name})" if nxt else "[Course map →](index.ipynb)"
    middle = " · [Course map](index.ipynb)" if prev and nxt else ""      # the first and last link to it already
    return (f"---\n\n{left}{middle} · [Glossary](glossary.ipynb) · "
            f"[References](references.ipynb) · {right}")

def render(check: bool = False) -> list[str]:
    stale = []
    chs = chapters()
    for i, p in enumerate(chs):
        nb = json.loads(p.read_text())
        want = nav_source(chs[i - 1] if i else None, chs[i + 1] if i + 1 < len(chs) else None)
        cells = [c for c in nb['cells'] if c.get('id') != NAV_ID]
        old = [c for c in nb['cells'] if c.get('id') == NAV_ID]
        ok = bool(old) and nb['cells'][-1].get('id') == NAV_ID and ''.join(old[0]['source']) == want
        if ok: continue
        stale.append(p.name)
        if check: continue
        cells.append(dict(cell_type='markdown', id=NAV_ID, metadata={}, source=want.splitlines(keepends=True)))
        nb['cells'] = cells
        p.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + '\n')
    return stale

if __name__ == '__main__':
    check = '--check' in sys.argv[1:]
    stale = render(check)
    for s in stale: print(f"{'stale' if check else 'rewrote'} previous/next links: nbs/{s}", file=sys.stderr)
    sys.exit(1 if check and stale else 0)
