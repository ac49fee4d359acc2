#!/usr/bin/env python
"""Render nbs/index.ipynb to README.md without Quarto (which nbdev-readme needs and these machines lack).

Cells tagged `#| hide` are left out, `#| echo: false` keeps only its output, `#|` directive lines are stripped, code and its saved
outputs are kept. Links are written relative to `nbs/` (so they work in JupyterLab, which opens `nbs/`);
here they are rewritten for the repository root (`00a_kv_budget.ipynb` becomes `nbs/00a_kv_budget.ipynb`). `--check` exits 1 if README.md differs from what would be written."""
import re, sys
from pathlib import Path
import nbformat
from nbconvert import MarkdownExporter
from nbconvert.preprocessors import TagRemovePreprocessor

ROOT = Path(__file__).resolve().parent.parent
_directive = re.compile(r'^\s*#\|.*$\n?', re.MULTILINE)

_link = re.compile(r'(\]\()(?!https?:|mailto:|#|/|nbs/)([^)\s]+)\)')

def from_root(markdown: str) -> str:
    "Relative links and images of a page in nbs/, rewritten to resolve from the repository root"
    return _link.sub(lambda m: f"{m.group(1)}nbs/{m.group(2)})", markdown)

def render(nb_path=ROOT / 'nbs' / 'index.ipynb') -> str:
    nb = nbformat.read(nb_path, as_version=4)
    cells = []
    for c in nb.cells:
        if c.cell_type == 'code' and re.search(r'^\s*#\|\s*hide\b', c.source, re.MULTILINE): continue
        if c.cell_type == 'code' and re.search(r'^\s*#\|\s*echo:\s*false\b', c.source, re.MULTILINE):
            c.metadata.setdefault('tags', []).append('readme-output-only')
        if c.cell_type == 'code': c.source = _directive.sub('', c.source)
        cells.append(c)
    nb.cells = cells
    nb.metadata['language_info'] = {'name': 'python'}       # nbdev-clean drops it; code fences keep their language
    exporter = MarkdownExporter(exclude_input_prompt=True, exclude_output_prompt=True)
    exporter.register_preprocessor(TagRemovePreprocessor(remove_input_tags={'readme-output-only'}), enabled=True)
    body, _ = exporter.from_notebook_node(nb)
    body = from_root(re.sub(r'\n{3,}', '\n\n', body).strip() + '\n')
    return '<!-- Generated from nbs/index.ipynb by tools/render_readme.py: edit the notebook, not this file. -->\n\n' + body

if __name__ == '__main__':
    text, readme = render(), ROOT / 'README.md'
    if '--check' in sys.argv:
        if not readme.exists() or readme.read_text() != text:
            sys.exit('README.md is out of sync with nbs/index.ipynb: run `make sync` (tools/render_readme.py) and commit it')
    else: readme.write_text(text)
