"""The `minipaged` console script as a user runs it: a real subprocess, exit codes, one-line errors."""
import json, subprocess, sys
from pathlib import Path
import pytest

MINIPAGED = Path(sys.executable).with_name('minipaged')   # the installed console script

def run(*args):
    p = subprocess.run([str(MINIPAGED), *args], capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr

@pytest.mark.parametrize('sub', ['kv', 'paging', 'report'])
def test_help(sub):
    code, out, _ = run(sub, '--help')
    assert code == 0 and '--json' in out

def test_top_level_help_lists_subcommands():
    code, out, _ = run('--help')
    assert code == 0 and all(s in out for s in ('kv', 'paging', 'report'))

def test_kv_from_config_file(tmp_path):
    cfg = dict(num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8, hidden_size=4096,
               intermediate_size=14336, vocab_size=128256, torch_dtype='bfloat16')
    (tmp_path / 'config.json').write_text(json.dumps(cfg))
    code, out, err = run('kv', '--config', str(tmp_path / 'config.json'), '--context', '4096', '--batch', '8', '--json')
    assert code == 0, err
    r = json.loads(out)
    assert (r['kv_bytes_per_token'], r['kv_bytes_per_request'], r['kv_bytes_total']) == (131072, 2**29, 2**32)
    assert r['params'] == 8_030_261_248

def test_paging_seed_example():
    code, out, _ = run('paging', '--lengths', '37', '91', '128', '201', '511', '--page-sizes', '16', '32', '--reserve', '512')
    assert code == 0
    assert '37.81%' in out and '97.58%' in out and '94.53%' in out

@pytest.mark.parametrize('args,msg', [
    (('kv', '--layers', '-2', '--kv-heads', '8', '--head-dim', '128'), 'num_layers must be a positive integer'),
    (('kv', '--layers', '32', '--kv-heads', '5', '--q-heads', '32', '--head-dim', '128'), 'num_kv_heads must divide'),
    (('kv', '--preset', 'llama-3-8b', '--context', '0'), '--context must be a positive integer'),
    (('kv', '--layers', '32', '--kv-heads', '8', '--head-dim', '128', '--dtype', 'float7'), '--dtype must be one of'),
    (('paging', '--lengths', '0', '5'), 'length must be a positive integer'),
    (('paging', '--lengths', '600', '--reserve', '512'), 'exceeds the fixed reservation'),
    (('paging',), 'the following arguments are required: --lengths'),
    (('kv', '--head-dim', 'x'), "invalid int value"),
])
def test_bad_input_exits_2_with_one_line(args, msg):
    code, out, err = run(*args)
    assert code == 2 and msg in err
    assert err.count('\n') == 1 and 'Traceback' not in err

def test_malformed_config(tmp_path):
    (tmp_path / 'config.json').write_text('{"num_hidden_layers": 4')
    code, _, err = run('kv', '--config', str(tmp_path))
    assert code == 2 and 'not valid JSON' in err and err.count('\n') == 1

def test_report_writes_figures_and_data(tmp_path):
    code, out, err = run('report', '--out', str(tmp_path / 'r'))
    assert code == 0, err
    files = {p.name for p in (tmp_path / 'r').iterdir()}
    assert files == {'fig1_kv_vs_context.png', 'fig1_kv_vs_context.csv', 'fig2_tail_waste.png', 'fig2_tail_waste.csv', 'summary.json'}
    s = json.loads((tmp_path / 'r' / 'summary.json').read_text())
    assert s['paging']['mean_reservation_waste_uniform_1_512'] == 255.5
    assert 'utilization' in out
