"""Every link of the course resolves where a learner clicks it: in JupyterLab (which opens `nbs/`), on the HTML
site and on the repository page.

Links and images in the notebooks' markdown are relative to `nbs/`; each must name a file that exists, and a
`#fragment` must name a heading of its target: JupyterLab and nbconvert make a heading's anchor from its text
with spaces replaced by `-`. README.md (rendered by tools/render_readme.py) rewrites the same links for the
repository root; they must resolve from there."""
import json, re
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parent.parent
NBS = ROOT / 'nbs'
NOTEBOOKS = sorted(NBS.glob('*.ipynb'))
LINK = re.compile(r'!?\[[^\]]*\]\(([^)\s]+)\)')
FENCE = re.compile(r'```.*?```', re.S)

def markdown(p: Path) -> list[str]:
    return [FENCE.sub('', ''.join(c['source'])) for c in json.loads(p.read_text())['cells'] if c['cell_type'] == 'markdown']

def anchor(heading: str) -> str:
    "The anchor JupyterLab gives a heading: its text (markup stripped) with spaces replaced by '-'"
    text = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', heading)      # a link keeps its text
    text = re.sub(r'[`*_]', '', text).strip()
    return text.replace(' ', '-')

def anchors(p: Path) -> set[str]:
    return {anchor(m.group(1)) for md in markdown(p) for m in re.finditer(r'^#{1,6}\s+(.+?)\s*$', md, re.M)}

def local_links(texts: list[str]) -> list[str]:
    return [t for md in texts for t in LINK.findall(md) if not re.match(r'(https?|mailto|data):', t)]

def broken(base: Path, src: Path, links: list[str]) -> list[str]:
    bad = []
    for link in links:
        target, _, frag = link.partition('#')
        path = (base / target) if target else src
        if not path.exists(): bad.append(f"{link}: no file {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
        elif frag and path.suffix == '.ipynb' and frag not in anchors(path): bad.append(f"{link}: no heading #{frag}")
    return bad

@pytest.mark.parametrize('nb', NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_links_resolve(nb):
    assert not broken(NBS, nb, local_links(markdown(nb))), broken(NBS, nb, local_links(markdown(nb)))

def test_readme_links_resolve_from_the_root():
    text = FENCE.sub('', (ROOT / 'README.md').read_text())
    links = [l for l in local_links([text]) if not l.startswith('#')]
    assert any(l.startswith('nbs/00_') for l in links), 'the course map links the first chapter'
    bad = [l for l in links if not (ROOT / l.partition('#')[0]).exists()]
    assert not bad, bad

def test_every_chapter_is_on_the_course_map_and_linked_to_its_neighbours():
    chapters = [p.name for p in NOTEBOOKS if re.match(r'\d\d', p.name)]
    index = local_links(markdown(NBS / 'index.ipynb'))
    assert not set(chapters) - {l.partition('#')[0] for l in index}, 'every chapter is on the course map'
    for i, name in enumerate(chapters):
        last = markdown(NBS / name)[-1]
        want = [chapters[i - 1] if i else 'index.ipynb', chapters[i + 1] if i + 1 < len(chapters) else 'index.ipynb']
        got = local_links([last])
        assert got[0] == want[0] and got[-1] == want[1], (name, got)

def test_anchor_rule():
    assert anchor('Chunked prefill') == 'Chunked-prefill' and anchor('`KV cache`') == 'KV-cache'

def chapter_title(p: Path) -> str:
    for md in markdown(p):
        m = re.search(r'^#\s+(.+?)\s*$', md, re.M)
        if m: return m.group(1)
    return p.stem

def test_the_course_map_names_each_chapter_by_its_title():
    "Each chapter's row of the course map's table is linked with the chapter's own first heading"
    index = '\n'.join(markdown(NBS / 'index.ipynb'))
    rows = dict((target, text) for text, target in re.findall(r'^\|\s*\[([^\]]+)\]\(([^)#\s]+)\)', index, re.M))
    chapters = [p for p in NOTEBOOKS if re.match(r'\d\d', p.name)]
    assert [p.name for p in chapters if p.name not in rows] == [], 'every chapter has a row'
    assert {p.name: rows[p.name] for p in chapters if rows[p.name] != chapter_title(p)} == {}

def test_the_run_time_table_lists_every_chapter():
    "benchmarks/results/chapter_times.json (the index's run-time table) times every chapter, and only chapters"
    times = json.loads((ROOT / 'benchmarks/results/chapter_times.json').read_text())
    timed = [c['chapter'] for c in times['chapters']]
    assert timed == [p.stem for p in NOTEBOOKS if re.match(r'\d\d', p.name)]

def glossary_terms() -> list[str]:
    return [m.group(1).strip() for md in markdown(NBS / 'glossary.ipynb') for m in re.finditer(r'^###\s+(.+)$', md, re.M)]

def first_use(term: str):
    """The first chapter cell (course order, markdown, not a heading, a chapter's one-line summary, code span or
    link target) that uses `term`"""
    rx = re.compile(r'(?<![\w#-])' + re.escape(term) + r'(?:s|es)?(?![\w-])', re.I)
    blank = lambda m: ' ' * len(m.group())
    for p in NOTEBOOKS:
        if not re.match(r'\d\d', p.name): continue
        for c in json.loads(p.read_text())['cells']:
            if c['cell_type'] != 'markdown' or c.get('id') == 'chapter-nav': continue
            s = ''.join(c['source'])
            masked = re.sub(r'\]\([^)]*\)', blank, re.sub(r'^(#|>).*$', blank, re.sub(r'`[^`\n]*`', blank, FENCE.sub(blank, s)),
                                                          flags=re.M))
            if rx.search(masked): return p.name, s
    return None

def test_every_glossary_term_is_linked_from_its_first_use():
    "The paragraph where the course first uses a glossary term links it to the glossary"
    unlinked = {}
    for term in glossary_terms():
        use = first_use(term)
        if use and f'glossary.ipynb#{anchor(term)})' not in use[1]: unlinked[term] = use[0]
    assert unlinked == {}, unlinked

def test_every_figure_is_shown_where_it_is_written():
    "A chapter cell that writes a figure (`write_figure`) shows it inline: an image in its committed output or the next"
    missing = []
    for p in NOTEBOOKS:
        if not re.match(r'\d\d', p.name) or int(p.name[:2]) >= 90: continue    # chapters; appendices test helpers
        cells = json.loads(p.read_text())['cells']
        for i, c in enumerate(cells):
            src = ''.join(c['source'])
            if c['cell_type'] != 'code' or 'write_figure(' not in src or re.search(r'^#\|\s*(export|slow|gpu)', src, re.M):
                continue
            near = [n for n in cells[i:i + 3] if n['cell_type'] == 'code']
            if not any('image/png' in o.get('data', {}) for n in near for o in n.get('outputs', [])):
                missing.append(f"{p.stem} cell {c.get('id')}")
    assert missing == [], missing
