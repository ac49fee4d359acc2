"""Chapters 12 and 12a's server, tested through the official `openai` client on a real socket: every endpoint and option
the acceptance list names, concurrency, disconnects (blocks counted), refusals, and the `minipaged serve` and
`minipaged bench --url` commands as a user runs them.

The server runs on 127.0.0.1 on a free port: a uvicorn thread in this process for most tests (so a test can
read the engine's block counts directly as well as through /metrics), and `minipaged serve` in a subprocess for
the command's own tests. Each is stopped when its tests end."""
import asyncio, contextlib, io, json, os, signal, subprocess, sys, time
from pathlib import Path
import httpx, openai, pytest
from prometheus_client.parser import text_string_to_metric_families
from minipaged.llm import LLM
from minipaged.engine.sampler import SamplingParams
from minipaged.serve.api import build_app, ServerThread
from minipaged.bench.http import read_metrics
from minipaged.serve.worker import AsyncEngine
from minipaged.model.fetch import shipped_model

PYLM = shipped_model('pylm')
KEY = 'sk-test'
TEMPLATE = ("{% for m in messages %}# {{ m.role }}: {{ m.content }}\n{% endfor %}"
            "{% if add_generation_prompt %}# assistant:{% endif %}")
PROMPTS = [p['prompt'] for p in map(json.loads, (PYLM / 'prompts.jsonl').read_text().splitlines()[:64])]


@pytest.fixture(scope='module')
def server():
    "One server for the module: pylm, an API key, a chat template"
    engine = AsyncEngine(LLM(PYLM, max_num_batched_tokens=256), max_waiting=64)
    with ServerThread(build_app(engine, 'pylm', api_key=KEY, chat_template=TEMPLATE)) as s:
        s.engine = engine
        yield s
    assert not engine.alive                                    # the worker stops with the server


@pytest.fixture(scope='module')
def client(server):
    return openai.OpenAI(base_url=server.url + '/v1', api_key=KEY, max_retries=0)


@pytest.fixture(scope='module')
def reference():
    "The in-process engine the server's answers must match"
    return LLM(PYLM, max_num_batched_tokens=256)


def metrics(server) -> dict:
    "The /metrics page, parsed by Prometheus' own parser: {sample name with labels: value}"
    page = httpx.get(server.url + '/metrics').text
    return {s.name + (json.dumps(s.labels, sort_keys=True) if s.labels else ''): s.value
            for f in text_string_to_metric_families(page) for s in f.samples}


def settled(server, timeout=10.0) -> dict:
    "The metrics once nothing runs or waits and no block is referenced (or the last ones seen)"
    deadline = time.time() + timeout
    while True:
        m = metrics(server)
        idle = not (m['minipaged_num_requests_running'] or m['minipaged_num_requests_waiting']
                    or m['minipaged_kv_blocks_used'])
        if idle or time.time() > deadline: return m
        time.sleep(0.02)


def greedy_text(reference, prompt, n=12) -> str:
    return reference.generate([prompt], SamplingParams(max_tokens=n, temperature=0))[0].outputs[0].text


def test_completion_is_llm_generate(client, reference):
    got = client.completions.create(model='pylm', prompt=PROMPTS[0], max_tokens=12, temperature=0)
    want = reference.generate([PROMPTS[0]], SamplingParams(max_tokens=12, temperature=0))[0]
    assert got.choices[0].text == want.outputs[0].text
    assert (got.usage.prompt_tokens, got.usage.completion_tokens) == (len(want.prompt_token_ids),
                                                                      len(want.outputs[0].token_ids))
    assert got.choices[0].finish_reason in ('stop', 'length') and got.object == 'text_completion'


def test_token_id_and_batched_prompts(client, reference):
    ids = reference.tokenizer.encode(PROMPTS[1])
    got = client.completions.create(model='pylm', prompt=[PROMPTS[2], ids], max_tokens=6, temperature=0, n=2)
    assert [c.index for c in got.choices] == [0, 1, 2, 3]                    # choice i * n + j
    assert got.choices[0].text == got.choices[1].text == greedy_text(reference, PROMPTS[2], 6)
    assert got.choices[2].text == greedy_text(reference, PROMPTS[1], 6)


def test_chat_and_streaming_chat(client, reference):
    messages = [{'role': 'user', 'content': 'a function that adds two numbers'}]
    whole = client.chat.completions.create(model='pylm', messages=messages, max_tokens=10, temperature=0)
    rendered = reference.chat_prompt(messages, TEMPLATE)
    want = reference.generate([rendered], SamplingParams(max_tokens=10, temperature=0))[0].outputs[0].text
    assert whole.choices[0].message.content == want and whole.choices[0].message.role == 'assistant'
    chunks = list(client.chat.completions.create(model='pylm', messages=messages, max_tokens=10, temperature=0,
                                                 stream=True, stream_options={'include_usage': True}))
    assert chunks[0].choices[0].delta.role == 'assistant'
    assert ''.join(c.choices[0].delta.content or '' for c in chunks if c.choices) == want
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == whole.usage.completion_tokens
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == whole.choices[0].finish_reason


def test_n_seed_and_logprobs(client):
    ask = lambda: client.completions.create(model='pylm', prompt='def ', max_tokens=8, n=4, seed=11,
                                            temperature=1.0, logprobs=3)
    one, again = ask(), ask()
    assert [c.text for c in one.choices] == [c.text for c in again.choices]     # seeded: reproducible
    assert len({c.text for c in one.choices}) > 1                                  # the samples differ
    for c in one.choices:
        lp = c.logprobs
        assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == len(lp.text_offset) > 0
        assert all(v <= 0 for v in lp.token_logprobs) and all(len(t) >= 3 for t in lp.top_logprobs)
        assert ''.join(lp.tokens).replace('<|endoftext|>', '') == c.text     # EOS has a logprob, not text
    chat = client.chat.completions.create(model='pylm', messages=[{'role': 'user', 'content': 'hi'}],
                                          max_tokens=4, temperature=0, logprobs=True, top_logprobs=2)
    content = chat.choices[0].logprobs.content
    assert len(content) == chat.usage.completion_tokens and all(len(t.top_logprobs) == 2 for t in content)
    assert all(t.top_logprobs[0].logprob >= t.logprob for t in content)        # greedy: the best is chosen


def test_stop_string(client, reference):
    text = greedy_text(reference, PROMPTS[3], 16)
    cut = text[len(text) // 2:len(text) // 2 + 3]
    got = client.completions.create(model='pylm', prompt=PROMPTS[3], max_tokens=16, temperature=0, stop=[cut])
    assert (got.choices[0].text, got.choices[0].finish_reason) == (text[:text.index(cut)], 'stop')
    streamed = client.completions.create(model='pylm', prompt=PROMPTS[3], max_tokens=16, temperature=0,
                                         stop=[cut], stream=True)
    assert ''.join(c.choices[0].text for c in streamed if c.choices) == text[:text.index(cut)]


def test_64_concurrent_streams(server, reference):
    "64 streams at once, each token-identical to its own greedy run in-process; no block left behind"
    want = [o.outputs[0].text for o in reference.generate(PROMPTS, SamplingParams(max_tokens=8, temperature=0))]
    aclient = openai.AsyncOpenAI(base_url=server.url + '/v1', api_key=KEY, max_retries=0)
    async def one(prompt):
        stream = await aclient.completions.create(model='pylm', prompt=prompt, max_tokens=8, temperature=0,
                                                  stream=True)
        return ''.join([c.choices[0].text async for c in stream if c.choices])
    async def all_of_them():
        try: return await asyncio.gather(*(one(p) for p in PROMPTS))
        finally: await aclient.close()
    assert asyncio.run(all_of_them()) == want
    m = settled(server)
    assert m['minipaged_kv_blocks_used'] == 0 and server.engine.llm.block_manager.metrics()['used'] == 0


def test_disconnect_mid_stream_releases_blocks(server):
    before = metrics(server).get('minipaged_requests_finished_total{"finished_reason": "cancelled"}', 0)
    body = dict(prompt='class ', max_tokens=200, temperature=0, ignore_eos=True, stream=True)
    with httpx.stream('POST', server.url + '/v1/completions', json=body,
                      headers={'Authorization': f'Bearer {KEY}'}) as r:
        lines = r.iter_lines()
        for _ in range(6): next(lines)
        assert server.engine.llm.block_manager.metrics()['used'] > 0            # it holds blocks mid-stream
    m = settled(server)
    assert m['minipaged_kv_blocks_used'] == 0 and m['minipaged_num_requests_running'] == 0
    assert m['minipaged_requests_finished_total{"finished_reason": "cancelled"}'] == before + 1
    assert server.engine.abort_lag_steps == 0                  # no step began between the cancel and its landing


def test_disconnect_while_waiting_for_a_whole_answer(server):
    "A non-streaming client that leaves: its request is cancelled too"
    before = metrics(server).get('minipaged_requests_finished_total{"finished_reason": "cancelled"}', 0)
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(server.url + '/v1/completions', json=dict(prompt='x', max_tokens=200, ignore_eos=True),
                   headers={'Authorization': f'Bearer {KEY}'}, timeout=0.3)
    m = settled(server)
    assert m['minipaged_requests_finished_total{"finished_reason": "cancelled"}'] == before + 1
    assert m['minipaged_kv_blocks_used'] == 0


@pytest.mark.parametrize('body, param, words', [
    (dict(prompt='x', max_tokens=0), 'max_tokens', 'max_tokens must be'),
    (dict(prompt='x', max_tokens='16'), 'max_tokens', 'max_tokens must be'),
    (dict(prompt='x', temperature=-1), 'temperature', 'temperature must be'),
    (dict(prompt='x', temperature='0.7'), 'temperature', 'temperature must be'),
    (dict(prompt='x', top_p=2), 'top_p', 'top_p must be'),
    (dict(prompt='x', n=0), 'n', 'n must be'),
    (dict(prompt='x', logprobs=50), 'logprobs', 'logprobs must be'),
    (dict(prompt='x', stop=[1]), 'stop', 'stop must be'),
    (dict(prompt='x', max_token=4), 'max_token', 'Unrecognized request argument supplied: max_token'),
    (dict(prompt='x', presence_penalty=0.5), 'presence_penalty', 'does not implement'),
    (dict(prompt=[]), 'prompt', 'prompt must be'),
    (dict(prompt=[5, 10**9]), 'prompt', 'prompt token ids must be in [0, 4096)'),
    (dict(prompt='x', max_tokens=300), 'prompt', 'exceeds the model context 256'),
    (dict(prompt='x', stream_options={'include_usage': True}), 'stream_options', 'only allowed when stream'),
    (dict(messages='hi'), 'messages', 'Unrecognized request argument supplied: messages'),
])
def test_bad_requests_name_the_field(server, client, body, param, words):
    r = httpx.post(server.url + '/v1/completions', json=body, headers={'Authorization': f'Bearer {KEY}'})
    err = r.json()['error']
    assert (r.status_code, err['param'], err['code']) == (400, param, 400) and words in err['message'], err
    assert client.completions.create(model='pylm', prompt='x', max_tokens=1).usage.completion_tokens == 1


def test_bad_json_wrong_model_and_chat_errors(server):
    auth = {'Authorization': f'Bearer {KEY}'}
    r = httpx.post(server.url + '/v1/completions', content=b'{"prompt": ', headers=auth)
    assert r.status_code == 400 and 'not valid JSON' in r.json()['error']['message']
    r = httpx.post(server.url + '/v1/completions', content=b'[' * 100_000 + b']' * 100_000, headers=auth)
    assert r.status_code == 400 and 'not valid JSON' in r.json()['error']['message']      # too deep to parse
    r = httpx.post(server.url + '/v1/completions', json=['x'], headers=auth)
    assert r.status_code == 400 and 'JSON object' in r.json()['error']['message']
    r = httpx.post(server.url + '/v1/completions', json=dict(model='gpt-4', prompt='x'), headers=auth)
    assert (r.status_code, r.json()['error']['param']) == (404, 'model')
    r = httpx.post(server.url + '/v1/chat/completions', json=dict(messages=[{'content': 'no role'}]), headers=auth)
    assert (r.status_code, r.json()['error']['param']) == (400, 'messages')
    r = httpx.post(server.url + '/v1/chat/completions', headers=auth,
                   json=dict(messages=[{'role': 'user', 'content': 'x'}], max_completion_tokens=0))
    assert (r.status_code, r.json()['error']['param']) == (400, 'max_completion_tokens')


@pytest.fixture(scope='module')
def small_server():
    "A server whose engine runs two sequences at a time and lets two more wait"
    engine = AsyncEngine(LLM(PYLM, max_num_batched_tokens=256, max_num_seqs=2), max_waiting=2)
    with ServerThread(build_app(engine, 'pylm')) as s:
        s.engine = engine
        yield s


def test_overload_is_503_and_queues_nothing(small_server):
    "Two running, two waiting: a fifth request is refused at once; once the queue drains, it is served"
    url = small_server.url
    long = dict(prompt='x', max_tokens=200, ignore_eos=True, stream=True)
    async def fill_then_ask():
        async with httpx.AsyncClient(timeout=60) as c:
            streams = [c.stream('POST', url + '/v1/completions', json=long) for _ in range(4)]
            for st in streams: await st.__aenter__()
            for _ in range(500):
                m = read_metrics((await c.get(url + '/metrics')).text)
                if m['minipaged_num_requests_waiting'] == 2: break
                await asyncio.sleep(0.01)
            refused = await c.post(url + '/v1/completions', json=dict(prompt='y', max_tokens=2))
            waiting = len(small_server.engine.llm.scheduler.waiting)
            for st in streams: await st.__aexit__(None, None, None)
            return refused, waiting
    refused, waiting = asyncio.run(fill_then_ask())
    assert refused.status_code == 503 and refused.headers['retry-after'] == '1', refused.text
    assert 'server overloaded: 2 requests are waiting (at most 2)' in refused.json()['error']['message']
    assert waiting == 2                                         # the refused one was never queued
    assert settled(small_server)['minipaged_requests_refused_total'] == 1
    sync = openai.OpenAI(base_url=url + '/v1', api_key='none', max_retries=0)
    assert sync.completions.create(model='pylm', prompt='y', max_tokens=2).usage.completion_tokens == 2
    with pytest.raises(openai.BadRequestError) as e:           # never admissible: 400, not 503
        sync.completions.create(model='pylm', prompt=['a', 'b', 'c'], max_tokens=2)
    assert '3 prompts in one request, more than max_waiting (2)' in e.value.body['message']


def test_n_streams_end_each_choice_once(client):
    chunks = list(client.completions.create(model='pylm', prompt='def ', max_tokens=12, n=3, seed=3,
                                            temperature=1.0, stream=True))
    ends = [c.choices[0].index for c in chunks if c.choices and c.choices[0].finish_reason]
    assert sorted(ends) == [0, 1, 2]


def test_api_key(server):
    no_key = openai.OpenAI(base_url=server.url + '/v1', api_key='wrong', max_retries=0)
    with pytest.raises(openai.AuthenticationError) as e: no_key.models.list()
    assert e.value.status_code == 401
    assert httpx.post(server.url + '/v1/completions', json=dict(prompt='x')).status_code == 401
    assert httpx.get(server.url + '/health').status_code == 200                 # probes need no key
    assert httpx.get(server.url + '/metrics').status_code == 200


def test_models_health_and_metrics(server, client):
    (card,) = client.models.list().data
    assert (card.id, card.owned_by) == ('pylm', 'minipaged')
    m = metrics(server)
    assert m['minipaged_engine_steps_total'] > 0 and m['minipaged_time_to_first_token_seconds_count'] > 0
    assert m['minipaged_kv_blocks_free'] + m['minipaged_kv_blocks_cached'] + m['minipaged_kv_blocks_used'] \
        == server.engine.llm.engine_config.num_blocks
    assert 0 <= m['minipaged_prefix_cache_hit_rate'] <= 1 and m['process_resident_memory_bytes'] > 0


def test_request_timeout_ends_with_its_reason(server, client):
    server.engine.request_timeout = 0.3
    try: got = client.completions.create(model='pylm', prompt='x', max_tokens=250,
                                                extra_body={'ignore_eos': True})
    finally: server.engine.request_timeout = None
    assert got.choices[0].finish_reason == 'timeout' and 0 < got.usage.completion_tokens < 250
    assert settled(server)['minipaged_kv_blocks_used'] == 0


def test_engine_failure_ends_its_requests_and_serving_goes_on(server, client):
    llm = server.engine.llm
    real, calls = llm.runner.execute, []
    def fail_second(work):
        calls.append(1)
        if len(calls) == 2: raise RuntimeError('injected fault')
        return real(work)
    llm.runner.execute = fail_second
    try:
        with pytest.raises(openai.InternalServerError) as e:
            client.completions.create(model='pylm', prompt='x', max_tokens=20, extra_body={'ignore_eos': True})
    finally: llm.runner.execute = real
    assert 'engine step failed: RuntimeError: injected fault' in e.value.body['message']
    assert client.completions.create(model='pylm', prompt='x', max_tokens=3).usage.completion_tokens == 3
    assert httpx.get(server.url + '/health').status_code == 200


# `minipaged serve` and `minipaged bench --url` as a user runs them
CLI = [str(Path(sys.executable).with_name('minipaged'))]          # the installed console script


@pytest.fixture(scope='module')
def served_process():
    env = dict(os.environ, PYTHONUNBUFFERED='1')
    p = subprocess.Popen(CLI + ['serve', 'pylm', '--port', '0', '--api-key', KEY, '--log-level', 'info',
                                '--threads', '1'], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    line = p.stdout.readline()
    assert line.startswith('minipaged: serving pylm on http://127.0.0.1:'), (line, p.stderr.read())
    url = line.split(' on ')[1].split(' ')[0]
    deadline = time.time() + 60
    while time.time() < deadline:                              # up: uvicorn answers (and handles Ctrl-C)
        try:
            if httpx.get(url + '/health').status_code == 200: break
        except httpx.TransportError: time.sleep(0.05)
    yield p, url
    if p.poll() is None: p.kill(); p.wait()


def test_serve_command_serves(served_process):
    p, url = served_process
    r = httpx.post(url + '/v1/completions', json=dict(prompt='def', max_tokens=3),
                   headers={'Authorization': f'Bearer {KEY}'})
    assert r.status_code == 200 and r.json()['usage']['completion_tokens'] == 3


def test_bench_url_against_the_command(served_process, tmp_path):
    _, url = served_process
    r = subprocess.run(CLI + ['bench', '--url', url, '--api-key', KEY, '--num-requests', '8', '--rate', '16',
                              '--out', str(tmp_path), '--no-progress'], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert 'at ' + url in r.stdout and 'ttft' not in r.stderr
    summary = json.loads((tmp_path / 'summary.json').read_text())
    s = summary['summaries'][0]
    assert s['submitted'] == 8 and s['completed'] + s['cancelled'] == 8 and s['ttft_median_ms'] > 0
    assert {'requests.csv', 'latency_cdf.png', 'workload.json'} <= {f.name for f in tmp_path.iterdir()}


def test_serve_command_interrupt(served_process):
    "Ctrl-C: a graceful shutdown, a clean exit"
    p, _ = served_process
    p.send_signal(signal.SIGINT)
    assert p.wait(timeout=30) == 0
    err = p.stderr.read()
    assert 'Traceback' not in err and 'Application shutdown complete' in err


@pytest.mark.parametrize('argv, words', [
    (['serve', 'pylm', '--port', '70000'], '--port must be in [0, 65535]'),
    (['serve', '/no/such/model'], 'MODEL /no/such/model'),
    (['serve', 'pylm', '--block-size', '0'], '--block-size'),
    (['bench', '--url', 'http://127.0.0.1:9', '--num-requests', '2'], '--url http://127.0.0.1:9'),
    (['bench', '--url', 'http://127.0.0.1:9', '--block-size', '8'], '--block-size: with --url'),
])
def test_command_errors_are_one_line_and_exit_2(argv, words, tmp_path):
    "Refused before anything runs (the script's `main` in this process: the subprocess tests above start it)"
    from minipaged.cli import main
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(argv + (['--out', str(tmp_path)] if argv[0] == 'bench' else []))
    err = err.getvalue()
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1, err
