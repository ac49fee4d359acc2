"""Every chapter as a learner meets it: JupyterLab in headless Chromium, Run All, no errors, widgets answer.

One JupyterLab server (127.0.0.1, a free port, a random token, its own config/settings/workspace dirs)
serves a copy of the course in a temp dir that is a git repository of its own: `nbs/`, `pyproject.toml` and
`.gitignore`, with `#| notest` cells dropped and saved outputs and widget state cleared (committed), so what
the browser shows is this run's. Slow and GPU cells stay: a learner's Run All runs them too, and they must do
nothing unless asked (`minipaged.utils.opted_in`, a CUDA check). For each chapter a fresh Chromium (Debian's
`chromium`, driven by the `playwright` Python package through `executable_path`; no browser is ever
downloaded) opens the notebook, runs JupyterLab's `notebook:run-all-cells` command, waits for the kernel to go
idle with every code cell numbered, and checks the notebook model and the rendered page for errors. Where a
chapter displays ipywidgets, their views must render and answer one interaction (a click, a slider key, a
dropdown or a text edit) by changing a readout. A screenshot per chapter goes to `$MINIPAGED_SCREENSHOTS`,
else to pytest's temp dir (`browser_screenshots/`).

Two more tests: the course map's links and a chapter's "next" link open their notebooks when clicked; and
after every chapter has run (autosave off: a notebook file changes only when the learner saves it), `git
status` in the copy is clean: running the course writes no tracked file and nothing git does not ignore.

Skips, saying why, where the `playwright` package or a Chromium binary is missing
(`apt-get install chromium`, `pip install playwright`; set `MINIPAGED_CHROMIUM` to use another binary)."""
import json, os, re, secrets, shutil, socket, subprocess, sys, time, urllib.request
from pathlib import Path
import pytest
import nbformat

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / 'nbs').glob('*.ipynb'))
CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
                 '--disable-background-networking', '--disable-component-update', '--disable-sync']
RUN_TIMEOUT_S = float(os.environ.get('MINIPAGED_BROWSER_TIMEOUT', 300))   # per chapter: kernel start + run all
WIDGET_MIME = 'application/vnd.jupyter.widget-view+json'
# a cell's top-level output holding a widget view (JupyterLab gives it no data-mime-type attribute)
WIDGET_VIEWS = '.jp-Cell-outputArea > .jp-OutputArea-child > .jp-OutputArea-output:has(> .jupyter-widgets)'

pytestmark = [pytest.mark.xdist_group('browser')]   # with `--dist loadgroup` all chapters share one server

def _chromium() -> str | None:
    "MINIPAGED_CHROMIUM if set, else Debian's chromium"
    if os.environ.get('MINIPAGED_CHROMIUM'): cands = [os.environ['MINIPAGED_CHROMIUM']]
    else: cands = ['/usr/bin/chromium', shutil.which('chromium'), shutil.which('chromium-browser')]
    return next((c for c in cands if c and Path(c).is_file() and os.access(c, os.X_OK)), None)

def _requirements():
    "Skip, with the fix in the message, where this machine cannot run a browser test"
    try: from playwright.sync_api import sync_playwright  # noqa: F401
    except ImportError: pytest.skip("browser test skipped: the `playwright` Python package is not installed "
                                    "(pip install 'playwright>=1.40'; never `playwright install`)")
    chromium = _chromium()
    if not chromium: pytest.skip("browser test skipped: no Chromium binary found (apt-get install chromium, or set MINIPAGED_CHROMIUM "
                                 f"to one; tried {os.environ.get('MINIPAGED_CHROMIUM') or '/usr/bin/chromium and PATH'})")
    try: import jupyterlab  # noqa: F401
    except ImportError: pytest.skip("browser test skipped: jupyterlab is not installed")
    return chromium

# ---------------------------------------------------------------- the copy of the course the browser opens
NOTEST = re.compile(r'^\s*#\|\s*(?:notest|eval:\s*false)\s*$', re.MULTILINE)

def _git(repo: Path, *args) -> str:
    return subprocess.run(['git', '-C', str(repo), *args], check=True, capture_output=True, text=True).stdout

def copy_course(dest: Path) -> Path:
    """Copy nbs/, pyproject.toml, .gitignore and benchmarks/results into `dest`, a new git repository: `notest`
    and empty code cells dropped, outputs and widget state cleared, all of it committed; return `dest/nbs`"""
    nbs = dest / 'nbs'
    shutil.copytree(ROOT / 'nbs', nbs, ignore=shutil.ignore_patterns('.ipynb_checkpoints', '_proc', '__pycache__', '_scratch'))
    for f in ('pyproject.toml', '.gitignore'): shutil.copy(ROOT / f, dest / f)   # nbdev's config lookup walks up from nbs/
    shutil.copytree(ROOT / 'benchmarks' / 'results', dest / 'benchmarks' / 'results')   # measured data chapters read
    for p in nbs.glob('*.ipynb'):
        nb = nbformat.read(p, as_version=4)
        nb.cells = [c for c in nb.cells if c.cell_type != 'code' or (c.source.strip() and not NOTEST.search(c.source))]
        for c in nb.cells:
            if c.cell_type == 'code': c.outputs, c.execution_count = [], None
        nb.metadata.pop('widgets', None)
        nb.metadata['kernelspec'] = {'display_name': 'Python 3 (ipykernel)', 'language': 'python', 'name': 'python3'}
        nbformat.write(nb, p)
    _git(dest, 'init', '-q'); _git(dest, 'add', '-A')
    _git(dest, '-c', 'user.name=test', '-c', 'user.email=test@localhost', 'commit', '-qm', 'the course as the browser gets it')
    return nbs

# ---------------------------------------------------------------- the JupyterLab server
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0)); return s.getsockname()[1]

def _lab_settings(settings: Path):
    "User settings: render every cell (no windowing, so the DOM holds the whole notebook), no autosave, no news, no update check"
    for ext, body in {'@jupyterlab/notebook-extension/tracker': {'windowingMode': 'none', 'recordTiming': True},
                      '@jupyterlab/docmanager-extension/plugin': {'autosave': False},
                      '@jupyterlab/apputils-extension/notification': {'fetchNews': 'false', 'checkForUpdates': False}}.items():
        f = settings / f'{ext}.jupyterlab-settings'
        f.parent.mkdir(parents=True, exist_ok=True); f.write_text(json.dumps(body))

def _api(base, token, path, method='GET'):
    req = urllib.request.Request(f'{base}{path}', method=method, headers={'Authorization': f'token {token}'})
    with urllib.request.urlopen(req, timeout=10) as r: return json.loads(r.read() or b'null')

@pytest.fixture(scope='session')
def lab(tmp_path_factory):
    "A JupyterLab server on 127.0.0.1 over a fresh copy of the course; yields its URL, token, folders and the Chromium to use"
    chromium = _requirements()
    tmp = tmp_path_factory.mktemp('browser_lab')
    nbs = copy_course(tmp / 'repo')
    home = {k: tmp / v for k, v in dict(JUPYTER_CONFIG_DIR='config', JUPYTER_DATA_DIR='data', JUPYTER_RUNTIME_DIR='runtime',
                                         JUPYTERLAB_SETTINGS_DIR='settings', JUPYTERLAB_WORKSPACES_DIR='workspaces', IPYTHONDIR='ipython').items()}
    for d in home.values(): d.mkdir(parents=True, exist_ok=True)
    _lab_settings(home['JUPYTERLAB_SETTINGS_DIR'])
    env = {**os.environ, **{k: str(v) for k, v in home.items()}, 'PYTHONPATH': os.pathsep.join(filter(None, [str(ROOT), os.environ.get('PYTHONPATH')]))}
    for k in ('MPLBACKEND', 'MINIPAGED_SLOW', 'MINIPAGED_SOLUTIONS', 'MINIPAGED_FIGURE_DIR'): env.pop(k, None)   # a learner's environment: the kernel's inline backend draws
    if os.environ.get('PYTEST_XDIST_WORKER'):   # beside another worker: one torch thread per kernel, as each worker has,
        env.update(OMP_NUM_THREADS='1', MKL_NUM_THREADS='1')   # or both oversubscribe the cores (steps of small ops slow ~5x)
    port, token = _free_port(), secrets.token_hex(16)
    base = f'http://127.0.0.1:{port}'
    log = open(tmp / 'jupyterlab.log', 'wb')
    proc = subprocess.Popen([sys.executable, '-m', 'jupyterlab', '--no-browser', '--ServerApp.ip=127.0.0.1', f'--ServerApp.port={port}',
                             '--ServerApp.port_retries=0', f'--IdentityProvider.token={token}', f'--ServerApp.root_dir={nbs}',
                             '--LabApp.expose_app_in_browser=True', '--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate',
                             '--LabApp.extension_manager=readonly', '--ServerApp.terminals_enabled=False', '--allow-root',
                             '--ServerApp.shutdown_no_activity_timeout=3600'],   # an orphan (pytest killed) exits by itself
                            cwd=nbs, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None: pytest.fail(f'JupyterLab exited with {proc.returncode}:\n{(tmp / "jupyterlab.log").read_text()[-3000:]}')
            try:
                _api(base, token, '/api/status'); break
            except Exception:
                if time.monotonic() > deadline: pytest.fail(f'JupyterLab did not answer on {base} within 90 s:\n{(tmp / "jupyterlab.log").read_text()[-3000:]}')
                time.sleep(0.5)
        shots = Path(os.environ.get('MINIPAGED_SCREENSHOTS') or tmp_path_factory.getbasetemp() / 'browser_screenshots')
        shots.mkdir(parents=True, exist_ok=True)
        yield dict(base=base, token=token, nbs=nbs, repo=nbs.parent, chromium=chromium, shots=shots, log=tmp / 'jupyterlab.log')
    finally:
        try:
            for s in _api(base, token, '/api/sessions'): _api(base, token, f"/api/sessions/{s['id']}", 'DELETE')
        except Exception: pass
        proc.terminate()
        try: proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9); proc.wait(10)
        log.close()

# ---------------------------------------------------------------- what the page is asked (window.jupyterapp, exposed above)
JS_READY = """name => { const app = window.jupyterapp; if (!app || !app.shell) return false;
  const w = app.shell.currentWidget;
  if (!w || !w.context || w.context.path !== name || !w.context.isReady || !w.sessionContext) return false;
  const k = w.sessionContext.session && w.sessionContext.session.kernel;
  return !!k && k.status === 'idle' && k.connectionStatus === 'connected'; }"""

JS_RUN_ALL = """() => { const app = window.jupyterapp; window.__runAll = {done: false};
  app.shell.activateById(app.shell.currentWidget.id);
  app.commands.execute('notebook:run-all-cells').then(
      r => { window.__runAll = {done: true, result: r}; },
      e => { window.__runAll = {done: true, error: String(e)}; });
  return true; }"""

JS_IDLE = """() => { if (!window.__runAll || !window.__runAll.done) return false;
  const w = window.jupyterapp.shell.currentWidget, k = w.sessionContext.session && w.sessionContext.session.kernel;
  if (k && (k.status === 'dead' || k.status === 'autorestarting')) return 'the kernel died (' + k.status + ')';
  if (!k || k.status !== 'idle') return false;
  return !Array.from(document.querySelectorAll('.jp-InputArea-prompt')).some(e => e.textContent.includes('[*]')); }"""

JS_MODEL = """() => { const w = window.jupyterapp.shell.currentWidget, cells = w.content.model.cells, rows = [];
  for (let i = 0; i < cells.length; i++) { const c = cells.get(i); if (c.type !== 'code') continue;
    const outs = [];
    for (let j = 0; j < c.outputs.length; j++) { const o = c.outputs.get(j).toJSON();
      outs.push({type: o.output_type, name: o.name || null, text: o.output_type === 'stream' ? String(o.text).slice(0, 4000) : null,
                 ename: o.ename || null, evalue: o.evalue || null, traceback: o.traceback ? o.traceback.join('\\n').slice(-4000) : null,
                 mimes: o.data ? Object.keys(o.data) : []}); }
    const t = c.getMetadata ? c.getMetadata('execution') : null;
    const secs = t && t['iopub.execute_input'] && t['shell.execute_reply'] ? (Date.parse(t['shell.execute_reply']) - Date.parse(t['iopub.execute_input'])) / 1000 : null;
    rows.push({index: i, count: c.executionCount, source: c.sharedModel.getSource().slice(0, 160), outputs: outs, secs: secs}); }
  return {rows: rows, run: window.__runAll, status: w.sessionContext.session.kernel.status}; }"""

JS_DOM_ERRORS = """() => {
  const stderr = Array.from(document.querySelectorAll('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'))
    .map(e => e.innerText).filter(t => /Traceback|^\\w*Error\\b/m.test(t));
  const widget = Array.from(document.querySelectorAll('.jp-OutputArea-output'))
    .map(e => e.innerText).filter(t => t.includes('Error displaying widget'));
  return stderr.concat(widget).map(t => t.slice(0, 1500)); }"""

# What the kernel shows through one widget view: the text of its HTML and Output parts (an Output widget's
# figure by its image), and which of its buttons are enabled. A slider's own number is left out: the page
# changes it without the kernel.
JS_READOUT = """e => Array.from(e.querySelectorAll('.widget-html-content, .widget-output, button.jupyter-button'))
  .map(x => x.tagName === 'BUTTON' ? (x.disabled ? 'disabled:' : 'enabled:') + x.textContent
          : x.innerText + Array.from(x.querySelectorAll('img')).map(i => i.src.slice(-120)).join(',')).join('|')"""

CONTROLS = ('button.jupyter-button:not([disabled])', '.noUi-handle', '.widget-dropdown select', '.widget-text input')

def _interactions(view):
    "What a learner would do with a widget view, one at a time: click a button, nudge a slider, pick an option, type in a box"
    for sel in CONTROLS:
        for k in range(min(view.locator(sel).count(), 3)):
            ctl = view.locator(sel).nth(k)
            def act(ctl=ctl, sel=sel):
                ctl.scroll_into_view_if_needed()
                if sel.startswith('button'): label = ctl.inner_text(); ctl.click(); return f'clicked the button {label!r}'
                if sel == '.noUi-handle': ctl.focus(); ctl.press('ArrowRight'); return 'pressed ArrowRight on a slider'
                if sel.endswith('select'):
                    cur, values = ctl.input_value(), ctl.locator('option').evaluate_all('os => os.map(o => o.value)')
                    new = next(v for v in values if v != cur); ctl.select_option(new); return f'chose option {new!r} in a dropdown'
                ctl.fill('100'); ctl.press('Enter'); return "typed '100' in a text box"
            yield act

# ---------------------------------------------------------------- one test per chapter
def _check_run(page, name) -> list:
    "Assert that Run All left no error in the notebook model or on the page and numbered every code cell"
    state = page.evaluate(JS_MODEL)
    rows = state['rows']
    errors = [f"cell {r['index']} ({r['source'][:60]!r}): {o['ename']}: {o['evalue']}" for r in rows for o in r['outputs'] if o['type'] == 'error']
    errors += [f"cell {r['index']}: stderr traceback\n{o['text'][-800:]}" for r in rows for o in r['outputs']
               if o['type'] == 'stream' and o['name'] == 'stderr' and 'Traceback' in (o['text'] or '')]
    shown = page.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')
    if errors and shown.count(): shown.first.scroll_into_view_if_needed()   # the failure screenshot shows the first error
    assert not errors, f'{name}: error output in the browser run:\n' + '\n'.join(errors)
    dom_errors = page.evaluate(JS_DOM_ERRORS)
    assert not dom_errors, f'{name}: the page shows an error:\n' + '\n---\n'.join(dom_errors)
    unrun = [r['index'] for r in rows if r['count'] is None]
    assert not unrun, f"{name}: code cells without an execution count after Run All: {unrun} (run-all: {state['run']})"
    return rows

def _check_widgets(page, name, rows) -> str:
    "Assert that every widget view rendered and that one of them answers an interaction; say what was done"
    expected = sum(WIDGET_MIME in o['mimes'] for r in rows for o in r['outputs'])
    views = page.locator(WIDGET_VIEWS)
    n = views.count()
    if not expected and not n: return 'no widgets'
    assert n >= expected, f'{name}: {expected} widget outputs in the notebook model, {n} rendered on the page'
    rendered = views.evaluate_all("vs => vs.map(v => v.firstElementChild.getBoundingClientRect().height > 0)")
    assert all(rendered), f'{name}: widget views that rendered empty: {[i for i, ok in enumerate(rendered) if not ok]}'
    controls = ', '.join(CONTROLS)
    interactive = [i for i in range(n) if views.nth(i).locator(controls).count()]
    if not interactive and views.locator('.widget-hprogress, progress').count():
        return f'{n} display-only widget view(s) rendered (progress bars)'
    assert interactive, f'{name}: widgets rendered, but none has a control to interact with'
    view = views.nth(interactive[0])
    view.scroll_into_view_if_needed()
    tried = []
    for act in _interactions(view):     # the first control whose use changes what the kernel shows
        before = view.evaluate(JS_READOUT)
        tried.append(act())
        try: page.wait_for_function(f'([e, b]) => ({JS_READOUT})(e) !== b', arg=[view.element_handle(), before], timeout=10_000, polling=250)
        except Exception: continue
        break
    else: raise AssertionError(f'{name}: the widget did not respond to any of: {tried}; its readout stayed {before[:300]!r}')
    page.wait_for_timeout(300)
    after = view.evaluate(JS_READOUT)
    text = lambda r: '|'.join(p for p in r.split('|') if not p.startswith(('enabled:', 'disabled:')))
    what = 'its displayed text changed' if text(after) != text(before) else 'only a button state changed (the text was already final)'
    did = '; then '.join(tried)
    raised = [o['evalue'] for r in page.evaluate(JS_MODEL)['rows'] for o in r['outputs'] if o['type'] == 'error']
    assert not raised, f'{name}: the interaction raised: {raised}'
    view.evaluate("e => e.closest('.jp-Cell').scrollIntoView({block: 'start'})")   # the screenshot shows the widget's cell
    return f'{n} widget view(s) rendered; {did}: {what}'

@pytest.mark.parametrize('nb', NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_chapter_in_browser(nb, lab):
    from playwright.sync_api import sync_playwright, TimeoutError as PWTimeout
    name, started, shot = nb.name, time.monotonic(), lab['shots'] / f'{nb.stem}.png'
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=lab['chromium'], args=CHROMIUM_ARGS, timeout=60_000)   # a fresh profile per launch
        page = browser.new_page(viewport={'width': 1400, 'height': 1000})
        page.set_default_timeout(30_000)
        console = []
        page.on('pageerror', lambda e: console.append(f'pageerror: {e}'))
        try:
            # a workspace of its own per chapter, so nothing from another chapter's page is restored
            page.goto(f"{lab['base']}/lab/workspaces/browser-{nb.stem}/tree/{name}?token={lab['token']}", wait_until='domcontentloaded', timeout=90_000)
            try: page.wait_for_function(JS_READY, arg=name, timeout=120_000, polling=500)
            except PWTimeout: raise AssertionError(f'{name}: JupyterLab did not open the notebook with an idle kernel within 120 s; {console[-5:]}') from None
            page.evaluate('() => window.jupyterapp.shell.collapseLeft()')   # the file browser off: a wider notebook in the screenshot
            page.evaluate(JS_RUN_ALL)
            try: idle = page.wait_for_function(JS_IDLE, timeout=RUN_TIMEOUT_S * 1000, polling=1000).json_value()
            except PWTimeout: raise AssertionError(f'{name}: Run All did not finish within {RUN_TIMEOUT_S:.0f} s') from None
            assert idle is True, f'{name}: {idle}'
            page.wait_for_timeout(500)   # let the last outputs and widget views render
            rows = _check_run(page, name)
            did = _check_widgets(page, name, rows)
            if did == 'no widgets':   # show the chapter's last figure, else its last cell
                page.evaluate("() => { const f = Array.from(document.querySelectorAll('.jp-OutputArea-output img')).pop();"
                              " (f ? f.closest('.jp-Cell') : Array.from(document.querySelectorAll('.jp-Cell')).pop()).scrollIntoView({block: 'start'}); }")
            page.screenshot(path=str(shot))
            slow = sorted((r for r in rows if (r.get('secs') or 0) > 5), key=lambda r: -r['secs'])[:3]
            slow = '; slowest cells: ' + ', '.join(f"#{r['index']} {r['secs']:.0f} s {r['source'][:40]!r}" for r in slow) if slow else ''
            print(f'\n[browser] {name}: {len(rows)} code cells run, {did}; {time.monotonic() - started:.1f} s{slow}; {shot}')
        except BaseException:
            try: page.screenshot(path=str(shot))
            except Exception: pass
            raise
        finally:
            try:
                for s in _api(lab['base'], lab['token'], '/api/sessions'): _api(lab['base'], lab['token'], f"/api/sessions/{s['id']}", 'DELETE')
            except Exception: pass
            browser.close()

JS_OPENED = """name => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  return !!w && !!w.context && w.context.path === name && w.context.isReady; }"""

JS_LINKS = """href => Array.from(document.querySelectorAll('.jp-RenderedMarkdown a')).map((a, i) => {
  const h = (a.getAttribute('href') || '').split('?')[0];     // JupyterLab resolves a relative link to a /files/ URL
  return (h === href || h.endsWith('/' + href)) ? i : -1; }).filter(i => i >= 0)"""

def _click_link(page, href: str, last: bool = False):
    "Click a link in a rendered markdown cell, as a learner would (the last one with this target if `last`)"
    page.wait_for_function(f'href => ({JS_LINKS})(href).length > 0', arg=href, timeout=60_000, polling=500)
    hits = page.evaluate(JS_LINKS, href)
    link = page.locator('.jp-RenderedMarkdown a').nth(hits[-1] if last else hits[0])
    link.scroll_into_view_if_needed(); link.click()

def test_links_navigate_in_jupyterlab(lab):
    "The course map's first link opens the first chapter; its closing 'next' link opens the second; the glossary link opens it"
    from playwright.sync_api import sync_playwright
    chapters = [p.name for p in NOTEBOOKS if re.match(r'\d\d', p.name)]
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=lab['chromium'], args=CHROMIUM_ARGS, timeout=60_000)
        page = browser.new_page(viewport={'width': 1400, 'height': 1000})
        page.set_default_timeout(30_000)
        try:
            page.goto(f"{lab['base']}/lab/workspaces/browser-links/tree/index.ipynb?token={lab['token']}",
                      wait_until='domcontentloaded', timeout=90_000)
            page.wait_for_function(JS_OPENED, arg='index.ipynb', timeout=120_000, polling=500)
            _click_link(page, chapters[0])
            page.wait_for_function(JS_OPENED, arg=chapters[0], timeout=60_000, polling=500)
            _click_link(page, chapters[1], last=True)             # the previous/next links close the chapter
            page.wait_for_function(JS_OPENED, arg=chapters[1], timeout=60_000, polling=500)
            _click_link(page, 'glossary.ipynb', last=True)
            page.wait_for_function(JS_OPENED, arg='glossary.ipynb', timeout=60_000, polling=500)
            page.screenshot(path=str(lab['shots'] / 'links.png'))
        finally:
            try:
                for s in _api(lab['base'], lab['token'], '/api/sessions'): _api(lab['base'], lab['token'], f"/api/sessions/{s['id']}", 'DELETE')
            except Exception: pass
            browser.close()

def test_run_all_leaves_git_status_clean(lab):
    "After the chapters' Run All (the tests above), the copy's git status is clean: no tracked file rewritten, no stray file"
    status = _git(lab['repo'], 'status', '--porcelain', '--untracked-files=all')
    assert status == '', f'running the chapters changed files git sees:\n{status[:3000]}'
