"""`minipaged bench` end to end through `run_bench_cli`: tiny workloads served into a temporary folder, every output parsed back."""
import argparse, csv, json
from dataclasses import replace
import pytest
from minipaged.bench.cli import run_bench_cli
from minipaged.bench.options import DEFAULT_WORKLOAD, add_bench_arguments
from minipaged.bench.metrics import STATUSES
from minipaged.bench.workload import LengthDist, Workload, workload_from_json, workload_to_json

def args(*argv, **extra):
    "The options of a run; chapter 07a's tiny random model and random token ids unless a --model is named"
    p = argparse.ArgumentParser(); add_bench_arguments(p)
    model = [] if '--model' in argv else ['--model', 'tiny-random']
    a = p.parse_args(['--threads', '1', '--no-progress', *model, *map(str, argv)])
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
    (('--device', 'tpu'), '--device must be one of auto, cpu, cuda, cuda:N'), (('--rate', 'nan'), '--rate must be > 0 and finite, got nan'),
    (('--rate', 'inf'), '--rate must be > 0 and finite, got inf'), (('--arrival', 'gamma', '--burstiness', 'inf'), '--burstiness must be > 0 and finite'),
    (('--slo-ttft-ms', 'nan'), '--slo-ttft-ms must be > 0 and finite'), (('--seed', -1), '--seed must be a non-negative integer, got -1'),
    (('--threads', 10**6), '--threads must be at most'), (('--num-blocks', 10**12), '--num-blocks: num_blocks 1000000000000: a KV pool of'),
    (('--allocator', 'reserved', '--num-blocks', 1), '--num-blocks: num_blocks 1 cannot hold'),
    (('--num-blocks', 1, '--ablations'), "--ablations, row 'reserved B=16': --num-blocks:")])
def test_bad_options_raise_a_value_error_naming_the_option(tmp_path, extra, msg):
    with pytest.raises(ValueError, match=msg.replace('(', r'\(').replace('.', r'\.')):
        run_bench_cli(args(*extra, '--out', tmp_path))

def test_bad_options_write_nothing(tmp_path):
    for extra in (('--rate', 'nan'), ('--num-blocks', 10**12), ('--allocator', 'reserved', '--num-blocks', 1)):
        with pytest.raises(ValueError): run_bench_cli(args(*extra, '--out', tmp_path / 'o'))
    assert not (tmp_path / 'o').exists()

@pytest.mark.parametrize('text,msg', [
    ('null', 'workload must be a JSON object of fields, got null'), ('[1]', 'workload must be a JSON object of fields, got [1]'), ('"w"', 'got "w"'),
    ('{"rate": "2"}', 'workload: rate must be a finite number, got "2"'), ('{"rate": Infinity}', 'rate must be a finite number, got Infinity'),
    ('{"num_requests": 2.0}', 'num_requests must be an integer, got 2.0'), ('{"num_requests": true}', 'num_requests must be an integer, got true'),
    ('{"stop_token_id": [1]}', 'stop_token_id must be an integer or null'), ('{"cancel_after": null}', 'cancel_after must be a finite number, got null'),
    ('{"output_len": {"kind": "trace", "values": [1, "2"]}}', 'workload: output_len: values must be a list of integers'),
    ('{"output_len": {"kind": "uniform", "lo": 1}}', 'workload: output_len: unknown fields lo'),
    ('{"output_len": {"kind": "uniform", "low": 9, "high": 3}}', 'workload: output_len: low must be <= high'),
    ('{"arrival": "gamma", "burstiness": 0}', 'workload: burstiness must be > 0'), ('{"seed": -2}', 'workload: seed must be a non-negative integer')])
def test_workload_from_json_names_the_bad_field(tmp_path, text, msg):
    (tmp_path / 'w.json').write_text(text)
    with pytest.raises(ValueError, match=msg.replace('[', r'\[').replace('(', r'\(')): workload_from_json(tmp_path / 'w.json')

def test_unreadable_workload_is_a_value_error(tmp_path):
    (tmp_path / 'bin.json').write_bytes(b'\xff\xfe\x00')
    with pytest.raises(ValueError, match='is not a text file'): workload_from_json(tmp_path / 'bin.json')
    with pytest.raises(ValueError, match=r'cannot read .* \(Is a directory\)'): workload_from_json(tmp_path)

def test_every_request_rejected_still_writes_results_and_says_so(tmp_path, capsys):
    out = tmp_path / 'o'
    res = run_bench_cli(args('--num-requests', 4, '--num-blocks', 1, '--repetitions', 2, '--out', out))
    printed = capsys.readouterr()
    assert res['error'].startswith('every request was rejected (') and res['error'].endswith(f'; results written to {out}')
    assert 'ttft_median_ms' in printed.out and 'skipped latency_cdf.png (no request completed)' in printed.out and printed.err == ''
    assert res['skipped'] == {'latency_cdf': 'no request completed'} and res['chapter01_agreement'] == []
    assert [s['rejected'] for s in res['summaries']] == [4, 4] and len(rows(out / 'requests.csv')) == 8
    assert all(r['status'] == 'rejected' and r['reason'] for r in rows(out / 'requests.csv'))
    assert json.loads((out / 'summary.json').read_text())['error'] == res['error']
    assert {p.name for p in out.iterdir()} >= {'workload.json', 'metrics.csv', 'steps.csv', 'kv_memory.png', 'throughput.png', 'summary.json'}

def test_failed_at_submission_counts_as_rejected_and_no_step_ran(tmp_path):
    res = run_bench_cli(args('--num-requests', 3, '--max-model-len', 5, '--out', tmp_path, json=True))
    assert res['error'].startswith('every request was rejected (prompt (') and [s['failed'] for s in res['summaries']] == [3]
    assert res['skipped'] == {'latency_cdf': 'no request completed', 'kv_memory': 'no engine step ran'}
    assert all(r['slots'] == 0 for r in res['kv_high_water'])

def test_a_run_that_served_some_has_no_error(tmp_path):
    res = run_bench_cli(args('--num-requests', 8, '--rate', 20, '--max-model-len', 128, '--num-blocks', 64, '--out', tmp_path, json=True))
    assert 'error' not in res and res['skipped'] == {} and res['summaries'][0]['completed'] > 0


def test_the_default_serves_the_trained_model_on_code_and_prints_its_text(tmp_path, capsys):
    """No --model: the course's trained model (chapter 07d), its held-out function headers as prompts, requests
    ending at EOS; the summary prints what the model wrote"""
    p = argparse.ArgumentParser(); add_bench_arguments(p)
    res = run_bench_cli(p.parse_args(['--num-requests', '6', '--rate', '30', '--no-progress', '--out', str(tmp_path)]))
    printed = capsys.readouterr().out
    assert res['model'].endswith('models/pylm') and res['workload']['ignore_eos'] is False
    assert res['workload']['prompt_file'].endswith('models/pylm/prompts.jsonl')
    assert res['samples'] and all(s['prompt'].startswith(('def ', 'async def ')) and s['completion'] for s in res['samples'])
    assert 'samples (prompt, then what the model wrote):' in printed and res['samples'][0]['prompt'] in printed
