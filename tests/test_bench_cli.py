"""`minipaged bench` end to end through `run_bench_cli`: tiny workloads served into a temporary folder, every output parsed back."""
import argparse, csv, json
from dataclasses import replace
import pytest
from minipaged.bench import (DEFAULT_WORKLOAD, STATUSES, LengthDist, Workload, add_bench_arguments, run_bench_cli, workload_from_json,
                             workload_to_json)

def args(*argv, **extra):
    p = argparse.ArgumentParser(); add_bench_arguments(p)
    a = p.parse_args(['--threads', '1', '--no-progress', *map(str, argv)])
    for k, v in extra.items(): setattr(a, k, v)
    return a

def rows(path):
    with open(path, newline='') as f: return list(csv.DictReader(f))

def test_tiny_run_writes_a_results_folder_that_parses(tmp_path, capsys):
    out = tmp_path / 'results'
    res = run_bench_cli(args('--num-requests', 6, '--rate', 30, '--num-blocks', 128, '--max-model-len', 1024,
                             '--max-num-batched-tokens', 256, '--repetitions', 2, '--out', out))
    printed = capsys.readouterr().out
    assert 'ttft_median_ms' in printed and 'KV high-water mark' in printed and 'wrote' in printed
    assert workload_from_json(out / 'workload.json') == replace(DEFAULT_WORKLOAD, num_requests=6, rate=30.0)
    summary = json.loads((out / 'summary.json').read_text())
    assert [s['submitted'] for s in summary['summaries']] == [6, 6]
    for s in summary['summaries']: assert sum(s[k] for k in STATUSES) == 6
    assert summary['config']['num_blocks'] == 128 and summary['config']['block_size'] == 16
    assert {r['metric'] for r in summary['spread']} >= {'ttft_median_ms', 'output_throughput'}
    for r in summary['chapter01_agreement']: assert r['measured'] == r['chapter01'], r
    metrics = rows(out / 'metrics.csv')
    assert len(metrics) == 2 and {'ttft_p99_ms', 'tpot_median_ms', 'itl_p99_ms', 'e2e_p90_ms', 'goodput', 'limited_by'} <= set(metrics[0])
    reqs = rows(out / 'requests.csv')
    assert len(reqs) == 12 and {r['status'] for r in reqs} <= set(STATUSES)
    for r in reqs:
        if r['status'] == 'completed': assert float(r['ttft_ms']) <= float(r['e2e_ms'])
    for s in rows(out / 'steps.csv'):
        assert sum(int(s[k]) for k in ('useful', 'wasted', 'cached', 'free', 'stranded')) == 128 * 16       # the memory identity
    for stem in ('latency_cdf', 'kv_memory', 'throughput'):
        assert (out / f'{stem}.png').read_bytes()[:8] == b'\x89PNG\r\n\x1a\n' and rows(out / f'{stem}.csv')
    assert json.loads(json.dumps(res, default=str))['files']['summary'] == str(out / 'summary.json')

def test_a_saved_workload_repeats_exactly_and_json_mode_prints_nothing(tmp_path, capsys):
    w = Workload(num_requests=5, arrival='all_at_once', prompt_len=LengthDist('fixed', value=20), output_len=LengthDist('trace', values=(3, 5, 8)),
                 stop_token_id=7, seed=11)
    (tmp_path / 'w.json').write_text(workload_to_json(w))
    res = run_bench_cli(args('--workload', tmp_path / 'w.json', '--num-blocks', 32, '--out', tmp_path / 'a', json=True))
    assert capsys.readouterr().out == ''
    assert workload_from_json(tmp_path / 'a' / 'workload.json') == w
    again = run_bench_cli(args('--workload', tmp_path / 'a' / 'workload.json', '--num-blocks', 32, '--out', tmp_path / 'b', json=True))
    key = lambda res: [(r['index'], r['prompt_len'], r['output_len'], r['status']) for r in rows(res['files']['requests_csv'])]
    assert key(res) == key(again)
    assert all(int(r['output_len']) <= m for r, m in zip(rows(res['files']['requests_csv']), (3, 5, 8, 3, 5)))   # the trace caps each output

def test_ablations_table(tmp_path):
    res = run_bench_cli(args('--num-requests', 4, '--ablations', '--ablation-requests', 4, '--max-model-len', 256,
                             '--max-num-batched-tokens', 64, '--out', tmp_path, json=True))
    table = res['ablations']['table']
    assert [r['config'] for r in table][:2] == ['baseline (paged B=16)', 'reserved B=16'] and len(table) == 8
    assert res['ablations']['pool_slots'] == 4 * 256
    assert next(r for r in table if r['config'] == 'reserved B=16')['max_running'] <= 4
    assert len(rows(tmp_path / 'ablations.csv')) == 8 and (tmp_path / 'ablations.png').exists()

@pytest.mark.parametrize('extra,msg', [
    (('--num-requests', 0), '--num-requests must be a positive integer'), (('--rate', -2), '--rate must be > 0'),
    (('--arrival', 'bursty'), '--arrival must be one of all_at_once, poisson, gamma'), (('--allocator', 'buddy'), '--allocator must be one of paged, reserved'),
    (('--batching', 'dynamic'), '--batching must be one of continuous, static'), (('--block-size', 0), '--block-size must be a positive integer'),
    (('--repetitions', 0), '--repetitions must be a positive integer'), (('--model', '/no/such/dir'), '--model must be a checkpoint directory'),
    (('--workload', '/no/such/workload.json'), '--workload: workload: no such file'), (('--slo-tpot-ms', 0), '--slo-tpot-ms must be > 0'),
    (('--device', 'tpu'), '--device must be one of cpu, cuda')])
def test_bad_options_raise_a_value_error_naming_the_option(tmp_path, extra, msg):
    with pytest.raises(ValueError, match=msg.replace('(', r'\(').replace('.', r'\.')):
        run_bench_cli(args(*extra, '--out', tmp_path))
