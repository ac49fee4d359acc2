"""benchmarks/gpu_check.py, issue 34's prepared GPU check: its --smoke run executes every section on the CPU at toy
sizes (the same code a GPU runs), so a device session spends its minutes measuring, not debugging."""
import json, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / 'benchmarks')]
import gpu_check                                                        # noqa: E402


def test_goals_are_judged_from_the_sections_records():
    "Each goal reads its section's figure; a missing section is 'not measured', and a smoke run judges nothing"
    sections = dict(decode=dict(rows=[dict(mode='graphs on', batch=1, over_floor=2.0), dict(mode='graphs on', batch=256, over_floor=3.0)]),
                    profile=dict(rows=[dict(mode='graphs on', gpu_busy=0.9)]),
                    throughput=dict(short=dict(vs_best_padded=6.0), long=dict(vs_best_padded=4.0, engine_tok_s=25000.0)),
                    equivalence=dict(status='ok', rows=[dict(identical=11, requests=11)]))
    values = gpu_check.goal_values(sections)
    assert values['decode_1_over_floor'] == 2.0 and values['decode_256_over_floor'] == 3.0 and values['prefill_vs_sdpa'] is None
    met = {g['goal']: g['met'] for g in gpu_check.judge(values, smoke=False)}
    assert list(met.values()) == [False, True, True, False, True, True, None, True]
    assert all(g['met'] is None for g in gpu_check.judge(values, smoke=True))
    partial = dict(sections, equivalence=dict(status='timed out after 75 s', rows=[dict(identical=11, requests=11)]))
    assert gpu_check.goal_values(partial)['tokens_identical'] is None       # a section cut short measured nothing whole


def test_smoke_runs_every_section(tmp_path):
    "The whole check on the CPU: every section ok, every compile probe ok, tokens identical, GPU-only values marked"
    out = tmp_path / 'gpu_check.json'
    r = subprocess.run([sys.executable, str(ROOT / 'benchmarks' / 'gpu_check.py'), '--smoke', '--json', str(out)],
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    rec = json.loads(out.read_text())
    assert rec['mode'] == 'cpu-smoke' and rec['command'].startswith('python benchmarks/gpu_check.py --smoke')
    s = rec['sections']
    assert {k: v['status'] for k, v in s.items()} == dict.fromkeys(gpu_check.SECTIONS, 'ok'), r.stdout[-3000:]
    assert [(c['kernel'], c['page_size'], c['dtype']) for c in s['attention']['compile']] == gpu_check.PROBES
    assert all(c['status'] == 'ok' and c['compile_s'] > 0 for c in s['attention']['compile'])
    assert all(row['identical'] == row['requests'] for row in s['equivalence']['rows'])
    assert any(row['preemptions'] for row in s['equivalence']['rows'] if row['variant'] == 'starved_pool')
    assert [r['identical'] for r in s['equivalence']['quantised_graphs']] == [2, 2]   # int8, fp8: graphs on == off
    assert {'short', 'long'} <= set(s['throughput']) and all(r['note'] == 'cpu-smoke' for r in s['decode']['rows'])
    assert all(r['gpu_busy'] is None and r['note'].startswith('cpu-smoke') for r in s['profile']['rows'])
    assert all(g['met'] is None for g in rec['goals']) and 'goals (issue 34)' in r.stdout
