"""The benchmark harness and BENCHMARKS.md: a result file carries its command and machine, and the committed
BENCHMARKS.md is what tools/render_benchmarks.py makes of benchmarks/results/."""
import json, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / 'benchmarks'), str(ROOT / 'tools')]
import harness, render_benchmarks                                       # noqa: E402


def test_write_json_round_trips_the_header_the_command_and_the_results(tmp_path):
    "What write_json stores reads back: the command line, every header field, the results untouched"
    results = dict(rows=[dict(case='a', us=1.5)], us_per_operation=0.8)
    argv = ['--seqs', '10', '--json', 'r.json']
    written = harness.write_json(tmp_path / 'sub' / 'r.json', results, argv)
    back = json.loads((tmp_path / 'sub' / 'r.json').read_text())
    assert back == written and back['rows'] == results['rows'] and back['us_per_operation'] == 0.8
    assert back['command'].endswith(' --seqs 10 --json r.json') and back['command'].startswith('python ')
    h = back['header']
    assert {'cpu', 'cores', 'python', 'torch', 'triton', 'torch_threads', 'gpu', 'commit', 'date'} <= set(h)
    assert h['cores'] >= 1 and h['torch_threads'] >= 1 and h['date'][:2] == '20'
    assert h['cpu'] in harness.header_line(h) and str(h['torch_threads']) in harness.header_line(h)


def test_spread_and_repeat():
    "Repetitions: k calls in order, and the median and range of what they measured"
    calls = iter(range(5))
    assert harness.repeat(lambda: next(calls), 3) == [0, 1, 2]
    assert harness.spread([3.0, 1.0, 2.0, 10.0]) == dict(median=2.5, min=1.0, max=10.0, n=4)
    times = harness.interleaved_seconds([lambda: None, lambda: None], warmup=1, reps=4)
    assert [len(t) for t in times] == [4, 4] and all(x >= 0 for t in times for x in t)


def test_a_script_run_becomes_a_row_with_its_command_and_machine(tmp_path):
    "A smoke run of a script through the harness renders as one row: its command, its figure, this machine"
    out = tmp_path / 'blocks_ops.json'
    script = ROOT / 'benchmarks' / 'blocks_ops.py'
    r = subprocess.run([sys.executable, str(script), '--seqs', '20', '--repeat', '1', '--json', str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith('machine: ')
    record = json.loads(out.read_text())
    assert record['command'].startswith('python benchmarks/blocks_ops.py --seqs 20')
    row = render_benchmarks.table_row(out)
    assert record['command'] in row and record['header']['cpu'] in row
    assert f"{record['us_per_operation']:.3f} µs" in row


def test_benchmarks_md_is_the_rendered_results():
    "BENCHMARKS.md is generated: `make sync` (tools/render_benchmarks.py) would not change it"
    text = render_benchmarks.render()
    assert (ROOT / 'BENCHMARKS.md').read_text() == text, 'run tools/render_benchmarks.py; commit the file'
    for path in sorted((ROOT / 'benchmarks' / 'results').glob('*.json')):
        assert f"(benchmarks/results/{path.name})" in text          # one row per result file
