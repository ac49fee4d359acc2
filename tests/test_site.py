"""The rendered course (tools/build_site.py): two small notebooks executed and written as linked HTML pages."""
import re, subprocess, sys
from pathlib import Path
import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
pytest.importorskip('nbclient'); pytest.importorskip('nbconvert')

@pytest.fixture(scope='module')
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp('site')
    r = subprocess.run([sys.executable, str(ROOT / 'tools' / 'build_site.py'), '--out', str(out), '--only', 'index', '01_paging'],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f'build_site failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}'
    return out

def code_blocks(page: str) -> list[str]:
    "The text of the code cells' inputs on a page (nbconvert's lab template: highlighted ipython3 blocks)"
    return [re.sub(r'<[^>]+>', '', b) for b in re.findall(r'<div class="highlight hl-ipython3"><pre>(.*?)</pre>', page, re.DOTALL)]

def test_pages_exist_and_link_each_other(site):
    index, ch = (site / 'index.html').read_text(), (site / '01_paging.html').read_text()
    assert "href='01_paging.html'" in index                         # the next link and the chapter list
    assert "href='index.html'" in ch                                # back to the course map
    assert 'href="00a_kv_budget.html"' in index and '.ipynb"' not in index   # the course map's links point at pages
    assert 'course map' in index.lower() and '<table' in index

def test_figures_are_embedded(site):
    ch = (site / '01_paging.html').read_text()
    assert 'data:image/png;base64,' in ch
    assert not re.search(r'<img[^>]+src="(?!data:)', ch), 'an image that is not embedded'

def test_no_directives_and_hidden_cells_hidden(site):
    ch = (site / '01_paging.html').read_text()
    blocks = code_blocks(ch)
    assert blocks and not [b for b in blocks if re.search(r'^\s*#\|', b, re.MULTILINE)]
    nb = nbformat.read(ROOT / 'nbs' / '01_paging.ipynb', as_version=4)
    shown = '\n'.join(c.source for c in nb.cells if c.cell_type == 'code' and not re.search(r'^#\|\s*hide', c.source, re.MULTILINE))
    hidden = [l for c in nb.cells if c.cell_type == 'code' and re.search(r'^#\|\s*hide', c.source, re.MULTILINE)
              for l in c.source.splitlines() if l.strip() and not l.startswith('#|') and l not in shown]
    assert hidden, 'the chapter should have a hidden cell to test with'
    text = '\n'.join(blocks)
    assert not [l for l in hidden if l in text], 'a `#| hide` cell is on the page'

def test_widgets_are_a_static_snapshot(site):
    ch = (site / '01_paging.html').read_text()
    assert re.search(r'class=["\']mp-widget', ch) and 'unpkg.com/@jupyter-widgets' not in ch
