"""Every chapter notebook is a test: one pytest test per notebook, run with nbdev's notebook runner.

Cells tagged with a flag in `[tool.nbdev] tst_flags` (`gpu`, `slow`) are skipped unless the flag is
named in MINIPAGED_TEST_FLAGS, e.g. `MINIPAGED_TEST_FLAGS="slow gpu" make test`; forcing `slow` also sets
MINIPAGED_SLOW=1, the opt-in a slow cell checks (`minipaged.utils.opted_in`). Every exercise is checked
against its worked solution in `solutions/` (MINIPAGED_SOLUTIONS=1)."""
import os
from pathlib import Path
import pytest
from nbdev.config import get_config
from nbdev import test as nbdev_test   # not `import test_nb`: pytest would collect it

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / 'nbs').glob('*.ipynb'))
FORCE = os.environ.get('MINIPAGED_TEST_FLAGS', '').split()
os.environ['MINIPAGED_SOLUTIONS'] = '1'
if 'slow' in FORCE: os.environ['MINIPAGED_SLOW'] = '1'

def test_every_chapter_is_collected():
    assert len(NOTEBOOKS) >= 4 and all(p.name[:2].isdigit() or p.stem in ('index', 'glossary', 'references') for p in NOTEBOOKS)

@pytest.mark.parametrize('nb', NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook(nb):
    skip = get_config(ROOT).tst_flags.split()
    ok, secs = nbdev_test.test_nb(nb, skip_flags=skip, force_flags=FORCE, basepath=ROOT, cell_timeout=600)
    assert ok, f"{nb.name} failed (see the cell traceback above)"
