#!/usr/bin/env python
"""Execute every chapter and write the course as a static HTML site, without Quarto.

    python tools/build_site.py                     # every notebook in nbs/ -> _site/
    python tools/build_site.py --out /tmp/site --only index 01_paging
    python tools/build_site.py --jobs 2            # execute two chapters at a time

Each notebook runs in a fresh kernel inside a temp copy of `nbs/` (the kernel's cwd is that copy, so
figures a chapter writes and reads resolve), with the cells flagged by `[tool.nbdev] tst_flags`
(`slow`, `gpu`, `notest`) left out. Then, for the page: cells tagged `#| hide` go, `#| echo: false`
keeps only the output, `#| output: false` only the input, and every `#|` directive line is stripped.
Output figures are embedded by nbconvert as base64, markdown images too (`embed_images`); widget
views become a static HTML snapshot of their final state (the interactive version is the notebook in
JupyterLab). `index.ipynb` becomes `index.html` with the course map; every page gets prev / course
map / next links, and links to `*.ipynb` chapters point at their pages.

Exits 1, after writing every page it could, if a chapter failed to execute (the page shows the error).
Where Quarto is installed, `nbdev-docs` renders the nbdev site instead; this does not touch it."""
import argparse, html, os, re, shutil, sys, tempfile, time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
import nbformat

ROOT = Path(__file__).resolve().parent.parent
DIRECTIVE = re.compile(r'^\s*#\|\s*(.*?)\s*$')
WIDGET_VIEW, WIDGET_STATE = 'application/vnd.jupyter.widget-view+json', 'application/vnd.jupyter.widget-state+json'

def skip_flags() -> list[str]:
    "The nbdev test flags whose cells are not run (`[tool.nbdev] tst_flags` in pyproject.toml)"
    text = (ROOT / 'pyproject.toml').read_text()
    try:
        import tomllib
        return tomllib.loads(text).get('tool', {}).get('nbdev', {}).get('tst_flags', 'notest gpu slow').split()
    except ImportError:
        m = re.search(r'^tst_flags\s*=\s*"([^"]*)"', text, re.MULTILINE)
        return (m.group(1) if m else 'notest gpu slow').split()

def directives(cell) -> dict[str, str]:
    "A cell's `#| name [value]` / `#| name: value` lines, as {name: value}"
    out = {}
    for line in cell.source.splitlines():
        m = DIRECTIVE.match(line)
        if m:
            name, _, value = m.group(1).replace(':', ' ', 1).partition(' ')
            out[name.strip()] = value.strip()
    return out

def strip_directives(src: str) -> str:
    return '\n'.join(l for l in src.splitlines() if not DIRECTIVE.match(l)).strip('\n')

# ---------------------------------------------------------------- which notebooks, in what order
def chapters(nbs: Path, only=None) -> list[Path]:
    "index first, then the chapters in file-name order; `only` keeps those named by stem, file name or number"
    paths = sorted(nbs.glob('*.ipynb'), key=lambda p: (p.stem != 'index', p.name))
    if only:
        want = set(only)
        paths = [p for p in paths if {p.stem, p.name, p.stem.split('_')[0]} & want]
        missing = want - {k for p in paths for k in (p.stem, p.name, p.stem.split('_')[0])}
        if missing: sys.exit(f'build_site: no notebook in {nbs} matches {sorted(missing)}')
    return paths

def title_of(nb, fallback: str) -> str:
    for c in nb.cells:
        if c.cell_type == 'markdown':
            m = re.search(r'^#\s+(.+)$', c.source, re.MULTILINE)
            if m: return m.group(1).strip()
    return fallback

def module_of(nb) -> str | None:
    for c in nb.cells:
        if c.cell_type == 'code' and 'default_exp' in directives(c): return 'minipaged.' + directives(c)['default_exp']
    return None

# ---------------------------------------------------------------- execution
def execute(path: str, timeout: int) -> tuple[str, str | None, float]:
    "Run one notebook of the temp copy in place, in a fresh kernel; return (path, error or None, seconds)"
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError
    path, t0 = Path(path), time.monotonic()
    nb = nbformat.read(path, as_version=4)
    flags = skip_flags()
    nb.cells = [c for c in nb.cells if c.cell_type != 'code' or not (set(directives(c)) & set(flags) or directives(c).get('eval') == 'false')]
    env = {k: v for k, v in os.environ.items() if k != 'MPLBACKEND'}   # let ipykernel pick its inline backend: figures as PNG outputs
    env['PYTHONPATH'] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get('PYTHONPATH')]))
    client = NotebookClient(nb, timeout=timeout, kernel_name='python3', store_widget_state=True,
                            resources={'metadata': {'path': str(path.parent)}})
    error = None
    try: client.execute(env=env, cwd=str(path.parent))
    except (CellExecutionError, CellTimeoutError) as e:
        msg = re.sub(r'\x1b\[[0-9;]*m', '', str(e)).strip()
        error = msg.splitlines()[-1][:300] if msg else type(e).__name__
    except Exception as e: error = f'{type(e).__name__}: {e}'[:300]
    nbformat.write(nb, path)
    return str(path), error, time.monotonic() - t0

# ---------------------------------------------------------------- widgets as static HTML
def _render_outputs(outputs) -> str:
    parts = []
    for o in outputs:
        data = o.get('data', {})
        if o.get('output_type') == 'stream': parts.append(f"<pre>{html.escape(o.get('text', ''))}</pre>")
        elif 'image/png' in data: parts.append(f'<img src="data:image/png;base64,{data["image/png"].strip()}">')
        elif 'image/svg+xml' in data: parts.append(data['image/svg+xml'])
        elif 'text/html' in data: parts.append(data['text/html'] if isinstance(data['text/html'], str) else ''.join(data['text/html']))
        elif 'text/plain' in data: parts.append(f"<pre>{html.escape(data['text/plain'])}</pre>")
    return ''.join(parts)

def widget_html(model_id: str, state: dict, depth: int = 0) -> str:
    "A static HTML rendering of widget `model_id` in its final state (boxes, HTML, labels, controls with their values, Output)"
    m = state.get(model_id)
    if not m or depth > 20: return ''
    s, kind = m.get('state', {}), m.get('model_name', '')
    desc = f"<span class='mp-w-desc'>{html.escape(str(s.get('description') or ''))}</span> " if s.get('description') else ''
    child = lambda ref: widget_html(ref.removeprefix('IPY_MODEL_'), state, depth + 1)
    if kind in ('VBoxModel', 'BoxModel', 'GridBoxModel', 'AccordionModel', 'TabModel', 'StackModel'):
        return "<div class='mp-w mp-w-vbox'>" + ''.join(child(c) for c in s.get('children', [])) + '</div>'
    if kind == 'HBoxModel':
        return "<div class='mp-w mp-w-hbox'>" + ''.join(child(c) for c in s.get('children', [])) + '</div>'
    if kind in ('HTMLModel', 'HTMLMathModel'): return f"<div class='mp-w'>{desc}{s.get('value', '')}</div>"
    if kind == 'LabelModel': return f"<div class='mp-w'>{html.escape(str(s.get('value', '')))}</div>"
    if kind in ('ButtonModel', 'ToggleButtonModel'): return f"<button class='mp-w' disabled>{html.escape(str(s.get('description', '')))}</button>"
    if kind == 'OutputModel': return f"<div class='mp-w mp-w-output'>{_render_outputs(s.get('outputs', []))}</div>"
    if '_options_labels' in s:
        idx = s.get('index')
        labels = s['_options_labels']
        pick = ', '.join(labels[i] for i in idx) if isinstance(idx, list) else (labels[idx] if isinstance(idx, int) and 0 <= idx < len(labels) else '')
        return f"<div class='mp-w mp-w-control'>{desc}<b>{html.escape(str(pick))}</b></div>"
    if 'value' in s:
        return f"<div class='mp-w mp-w-control'>{desc}<b>{html.escape(str(s['value']))}</b></div>"
    return ''

def staticize_widgets(nb):
    "Replace widget views by a static snapshot and drop the widget state (no widget manager, no CDN script)"
    state = nb.metadata.get('widgets', {}).get(WIDGET_STATE, {}).get('state', {})
    for c in nb.cells:
        for o in c.get('outputs', []):
            view = o.get('data', {}).get(WIDGET_VIEW)
            if view is None: continue
            body = widget_html(view.get('model_id', ''), state)
            o['data'] = {'text/html': (f"<div class='mp-widget'>{body}<div class='mp-w-note'>A snapshot of the widget's last state: "
                                       f"open the chapter in JupyterLab to use it.</div></div>") if body else "<div class='mp-w-note'>(an interactive widget: open the chapter in JupyterLab)</div>"}
    nb.metadata.pop('widgets', None)

# ---------------------------------------------------------------- the page
def prepare_for_page(nb):
    "Hide `#| hide` cells, apply `echo: false` / `output: false`, strip directive lines, drop what is left empty"
    cells = []
    for c in nb.cells:
        if c.cell_type == 'markdown' and re.match(r'^\s*<!--\s*#\|\s*hide\s*-->', c.source): continue
        if c.cell_type != 'code': cells.append(c); continue
        d = directives(c)
        if 'hide' in d or d.get('include') == 'false': continue
        tags = set(c.metadata.get('tags', []))
        if d.get('echo') == 'false': tags.add('remove_input')
        if d.get('output') == 'false': tags.add('remove_output')
        c.source = strip_directives(c.source)
        if not c.source.strip() and not c.get('outputs'): continue
        if not c.source.strip(): tags.add('remove_input')
        c.metadata['tags'] = sorted(tags)
        cells.append(c)
    nb.cells = cells
    staticize_widgets(nb)

CSS = """<style>
.mp-nav{font:14px/1.4 system-ui,sans-serif;display:flex;gap:1.2em;justify-content:space-between;align-items:center;
  padding:.6em 1.2em;border-bottom:1px solid #ddd;background:#f7f7f7;position:sticky;top:0;z-index:10}
.mp-nav.mp-bottom{border-top:1px solid #ddd;border-bottom:none;position:static;margin-top:2em}
.mp-nav a{text-decoration:none;color:#1a5fb4}.mp-nav .mp-mid{font-weight:600}
.mp-widget{border-left:3px solid #9ecae1;padding:.3em .8em}.mp-w-hbox{display:flex;gap:1.5em;flex-wrap:wrap}
.mp-w-note{font:12px system-ui,sans-serif;color:#777;margin-top:.3em}.mp-w-desc{color:#555}
.mp-chapters{margin-left:0}.mp-chapters td,.mp-chapters th{padding:.2em .8em;text-align:left}
</style>"""

def nav(pages, i, bottom=False) -> str:
    prev = f"<a href='{pages[i - 1]['html']}'>&larr; {html.escape(pages[i - 1]['title'])}</a>" if i > 0 else '<span></span>'
    nxt = f"<a href='{pages[i + 1]['html']}'>{html.escape(pages[i + 1]['title'])} &rarr;</a>" if i + 1 < len(pages) else '<span></span>'
    mid = "<a class='mp-mid' href='index.html'>minipaged &middot; course map</a>"
    return f"<nav class='mp-nav{' mp-bottom' if bottom else ''}'>{prev}{mid}{nxt}</nav>"

def chapter_list(pages) -> str:
    rows = ''.join(f"<tr><td><a href='{p['html']}'>{html.escape(p['title'])}</a></td><td><code>{p['module'] or ''}</code></td>"
                   f"<td>{'' if p['ok'] else 'failed to execute in this build'}</td></tr>" for p in pages if p['stem'] != 'index')
    return (f"<div class='jp-Cell jp-MarkdownCell'><div class='jp-RenderedHTMLCommon jp-RenderedMarkdown' style='padding:0 1em'>"
            f"<h2>Chapters on this site</h2><table class='mp-chapters'><tr><th>chapter</th><th>module</th><th></th></tr>{rows}</table></div></div>")

def render(nb, page, pages, i, nbs_dir: Path) -> str:
    from nbconvert import HTMLExporter
    from nbconvert.preprocessors import TagRemovePreprocessor
    exporter = HTMLExporter(template_name='lab', embed_images=True, exclude_input_prompt=True, exclude_output_prompt=True)
    exporter.register_preprocessor(TagRemovePreprocessor(remove_cell_tags={'remove_cell'}, remove_input_tags={'remove_input'},
                                                         remove_all_outputs_tags={'remove_output'}, enabled=True), enabled=True)
    body, _ = exporter.from_notebook_node(nb, resources={'metadata': {'name': f"{page['title']} · minipaged", 'path': str(nbs_dir)}})
    known = {p['stem'] for p in pages} | {p.stem for p in nbs_dir.glob('*.ipynb')}
    # links between chapters: `nbs/01_paging.ipynb`, `01_paging.ipynb#anchor` -> `01_paging.html#anchor`
    body = re.sub(r'href="(?:[^"#]*/)?([^"/#]+)\.ipynb(#[^"]*)?"',
                  lambda m: f'href="{m.group(1)}.html{m.group(2) or ""}"' if m.group(1) in known else m.group(0), body)
    body = body.replace('</head>', CSS + '\n</head>', 1)
    body = re.sub(r'(<body[^>]*>)', lambda m: m.group(1) + '\n' + nav(pages, i), body, count=1)
    extra = chapter_list(pages) if page['stem'] == 'index' else ''
    return body.replace('</body>', extra + nav(pages, i, bottom=True) + '\n</body>', 1)

# ---------------------------------------------------------------- the command
def build(out: Path, only=None, jobs: int = 1, timeout: int = 600, quiet=False) -> list[dict]:
    say = (lambda *a: None) if quiet else (lambda *a: print(*a, flush=True))
    with tempfile.TemporaryDirectory(prefix='minipaged_site_') as tmp:
        work = Path(tmp) / 'nbs'
        shutil.copytree(ROOT / 'nbs', work, ignore=shutil.ignore_patterns('.ipynb_checkpoints', '_proc', '__pycache__'))
        shutil.copy(ROOT / 'pyproject.toml', Path(tmp) / 'pyproject.toml')
        paths = chapters(work, only)
        say(f'build_site: executing {len(paths)} notebook(s) in {work} ({jobs} at a time)')
        if jobs > 1:
            with ProcessPoolExecutor(jobs) as pool: results = list(pool.map(execute, [str(p) for p in paths], [timeout] * len(paths)))
        else: results = [execute(str(p), timeout) for p in paths]
        errors = {Path(p).stem: e for p, e, _ in results if e}
        for p, e, secs in results: say(f"  {Path(p).name:28s} {secs:6.1f} s  {'FAILED: ' + e if e else 'ok'}")
        nbs = {p.stem: nbformat.read(p, as_version=4) for p in paths}
        pages = [dict(stem=p.stem, html=f'{p.stem}.html', title=title_of(nbs[p.stem], p.stem), module=module_of(nbs[p.stem]),
                      ok=p.stem not in errors) for p in paths]
        out.mkdir(parents=True, exist_ok=True)
        for i, page in enumerate(pages):
            nb = nbs[page['stem']]
            prepare_for_page(nb)
            (out / page['html']).write_text(render(nb, page, pages, i, work), encoding='utf-8')
        (out / '.nojekyll').write_text('')
    say(f'build_site: wrote {len(pages)} page(s) to {out}/' + (f'; FAILED to execute: {", ".join(errors)}' if errors else ''))
    return pages

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--out', default=str(ROOT / '_site'), help='output folder (default: _site/)')
    ap.add_argument('--only', nargs='+', metavar='NB', help='notebooks to build, by stem, file name or number (e.g. index 01_paging 05)')
    ap.add_argument('--jobs', type=int, default=1, help='notebooks executed at a time')
    ap.add_argument('--timeout', type=int, default=600, help='seconds a cell may run')
    a = ap.parse_args(argv)
    pages = build(Path(a.out), a.only, a.jobs, a.timeout)
    return 0 if all(p['ok'] for p in pages) else 1

if __name__ == '__main__': sys.exit(main())
