"""The real model (chapter 07b) against the outside reference, `transformers` reading the same GGUF file:
the converter's tensors equal its dequantised ones bit for bit; the engine's greedy tokens equal its `generate`
on a dozen chat and completion prompts of 100 new tokens, under default settings, tiny pages in a starved pool,
chunked prefill and parallel sampling; `LLM.chat`'s prompt ids equal `apply_chat_template`'s. Then the model as a
user meets it: `minipaged chat` on a pseudo-terminal (two turns, Ctrl-C), `minipaged generate`, `minipaged serve`
answering the `openai` client.

The model must have been fetched (`minipaged fetch smollm2-135m-instruct`; `make test` does it first): these tests
skip without it, and fail instead under MINIPAGED_REQUIRE_MODELS=1 (as `make test` sets), so CI cannot pass by
skipping them."""
import os, re, subprocess, sys
from pathlib import Path
import pytest, torch
from minipaged.llm import LLM
from minipaged.engine.sampler import SamplingParams
from minipaged.model.convert import gguf_metadata, hf_tokenizer, read_gguf
from minipaged.model.fetch import fetched_path

NAME = 'smollm2-135m-instruct'
GGUF = 'SmolLM2-135M-Instruct.Q4_1.gguf'
MINIPAGED = Path(sys.executable).with_name('minipaged')
CHATS = [[{'role': 'user', 'content': q}] for q in (
    'What is the capital of France, and what is it famous for?', 'What is a KV cache in LLM serving?',
    'Write a haiku about memory.', 'Give me three tips for writing clean Python code.')] + [
    [{'role': 'system', 'content': 'You are a terse assistant.'}, {'role': 'user', 'content': 'Name two planets.'}],
    [{'role': 'user', 'content': 'Hi!'}, {'role': 'assistant', 'content': 'Hello! How can I help?'},
     {'role': 'user', 'content': 'Count from 1 to 12, please.'}]]
COMPLETIONS = ['def fibonacci(n):', 'import os\n', 'The capital of France is', 'Once upon a time,',
               'SELECT name FROM users WHERE', '1, 2, 3, 5, 8, 13,']
NEW_TOKENS = 100


@pytest.fixture(scope='module')
def smol() -> Path:
    path = fetched_path(NAME)
    if not (path / GGUF).is_file():
        why = f"{NAME} is not fetched: run `minipaged fetch {NAME}`"
        if os.environ.get('MINIPAGED_REQUIRE_MODELS') == '1': pytest.fail(why)
        pytest.skip(why)
    return path


@pytest.fixture(scope='module')
def reference(smol):
    "transformers' model of the same file, dequantised by its own GGUF loader, in float32"
    from transformers import AutoModelForCausalLM
    return AutoModelForCausalLM.from_pretrained(smol, gguf_file=GGUF, dtype=torch.float32).eval()


def hf_greedy(model, prompts: list[list[int]], new: int) -> list[list[int]]:
    """transformers' greedy tokens, `new` of each prompt whatever EOS says, the prompts as one left-padded batch
    (fast; a prompt the engine then disagrees with is run again alone by `hf_alone`, the reference proper)"""
    L, pad = max(map(len, prompts)), model.config.pad_token_id or 0
    ids = torch.tensor([[pad] * (L - len(p)) + p for p in prompts])
    mask = torch.tensor([[0] * (L - len(p)) + [1] * len(p) for p in prompts])
    with torch.no_grad():
        out = model.generate(ids, attention_mask=mask, max_new_tokens=new, do_sample=False,
                             eos_token_id=None, pad_token_id=pad)
    return [o[L:].tolist() for o in out]


def hf_alone(model, prompt: list[int], new: int) -> list[int]:
    with torch.no_grad():
        out = model.generate(torch.tensor([prompt]), attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
                             max_new_tokens=new, do_sample=False, eos_token_id=None, pad_token_id=0)
    return out[0, len(prompt):].tolist()


@pytest.fixture(scope='module')
def engine(smol):
    return LLM(NAME)


def prompts(engine) -> list[list[int]]:
    "The dozen prompts as token ids: six conversations through the chat template, six completions"
    return [engine.chat_prompt(c)['prompt_token_ids'] for c in CHATS] + [engine.tokenizer.encode(t) for t in COMPLETIONS]


def test_tensors_and_greedy_tokens_equal_transformers_in_every_setting(engine, reference, smol):
    "One test, so that one process loads transformers' model: first the converter's tensors, then the tokens"
    from safetensors.torch import load_file
    ours, theirs = load_file(str(smol / 'model.safetensors')), reference.state_dict()
    assert set(ours) | {'lm_head.weight'} == set(theirs)                    # the LM head: tied, not stored
    for k, v in ours.items(): assert v.dtype == torch.float32 and torch.equal(v, theirs[k]), k
    assert torch.equal(theirs['lm_head.weight'], ours['model.embed_tokens.weight'])
    ids = prompts(engine)
    want = hf_greedy(reference, ids, NEW_TOKENS)
    assert all(len(w) == NEW_TOKENS for w in want)
    greedy = lambda n: SamplingParams(n=n, max_tokens=NEW_TOKENS, temperature=0.0, ignore_eos=True)
    # default settings, half the prompts with n = 2 (forked, copy-on-write); then all three stresses at once, in
    # one run (one run's CPU time, not three): pages of two tokens, in a pool that holds about two of the dozen
    # (preempted and recomputed), each prompt prefilled 16 tokens a step (chunked)
    settings = {'default, n = 1 and 2': (engine, [greedy(1 + i % 2) for i in range(len(ids))]),
                'pages of 2, a starved pool, chunks of 16': (
                    LLM(NAME, block_size=2, num_blocks=200, max_num_batched_tokens=16), greedy(1))}
    for name, (llm, params) in settings.items():
        outs = llm.generate(ids, params, use_tqdm=False)
        for i, o in enumerate(outs):
            for c in o.outputs:
                if c.token_ids != want[i]: want[i] = hf_alone(reference, ids[i], NEW_TOKENS)  # padding's doing?
                assert c.token_ids == want[i], (name, i)
        llm.block_manager.check(); assert llm.block_manager.num_used_blocks == 0
    assert sum(o.metrics['num_preemptions'] for o in outs) > 0 and sum(len(o.outputs) for o in
                                                                         engine.generate(ids[:1], greedy(2))) == 2


def test_chat_prompt_ids_equal_apply_chat_template(engine, smol, tmp_path):
    "transformers' own reading of the GGUF file (its tokenizer and chat template), and of the files we wrote"
    from transformers import AutoTokenizer
    alone = tmp_path / 'gguf-only'; alone.mkdir(); (alone / GGUF).symlink_to(smol / GGUF)   # none of our files
    for tok in (AutoTokenizer.from_pretrained(alone, gguf_file=GGUF), AutoTokenizer.from_pretrained(smol)):
        for conv in CHATS:                                          # none has a run of spaces before a digit
            theirs = tok.apply_chat_template(conv, add_generation_prompt=True, tokenize=True)
            theirs = theirs['input_ids'] if hasattr(theirs, 'keys') else theirs
            assert engine.chat_prompt(conv)['prompt_token_ids'] == list(theirs), (conv, tok)


# llama.cpp's splits for `smollm` (llama-vocab.cpp, LLAMA_VOCAB_PRE_TYPE_SMOLLM), as it writes them
LLAMA_CPP_SMOLLM = [r"\p{N}", r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"]

def llama_cpp_pieces(text: str) -> list[str]:
    "llama.cpp's pre-tokenization: each regex in turn splits every piece into its matches and what lies between"
    import regex
    pieces = [text]
    for rx in LLAMA_CPP_SMOLLM:
        out = []
        for p in pieces:
            at = 0
            for m in regex.finditer(rx, p):
                out += [p[at:m.start()], m.group()]; at = m.end()
            out.append(p[at:])
        pieces = [x for x in out if x]
    return pieces


TEXTS = ['Hello world', 'In 2024, 3.14159 and 1,000,000 people', 'def fibonacci(n):\n    if n < 2:\n        return n\n',
         '  leading spaces\t\ttabs\n\n\nnewlines   ', 'café naïve 日本語 😀 emoji', "What's the KV cache? It's a cache they'll use.",
         'x=12345;y=007', 'a\u00a0b\u2003c', 'x = 12  34', 'version 2.0  and  3']


def test_the_tokenizer_is_llama_cpps_and_transformers_but_where_spaces_meet_digits(smol):
    from transformers import AutoTokenizer
    ours = hf_tokenizer(gguf_metadata(read_gguf(smol / GGUF)))
    theirs = AutoTokenizer.from_pretrained(smol, gguf_file=GGUF)
    from tokenizers.pre_tokenizers import ByteLevel
    byte_level = lambda w: ByteLevel(add_prefix_space=False, use_regex=False).pre_tokenize_str(w)[0][0]
    for t in TEXTS:
        got = [w for w, _ in ours.pre_tokenizer.pre_tokenize_str(t)]
        assert got == [byte_level(w) for w in llama_cpp_pieces(t)], t          # llama.cpp's pieces, every text
        assert ours.decode(ours.encode(t).ids) == t
        if not re.search(r' {2,}\d', t):                                        # transformers' fallback agrees
            assert ours.encode(t).ids == theirs(t, add_special_tokens=False)['input_ids'], t


def test_generate_command_answers(smol):
    p = subprocess.run([str(MINIPAGED), 'generate', NAME, 'What is the capital of France?', '--chat',
                        '--temperature', '0', '--max-tokens', '30'], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and 'Paris' in p.stdout, p.stderr
    assert re.match(r'\[\d+ tokens, (stop|length), TTFT', p.stderr), p.stderr


def test_chat_on_a_terminal_holds_a_conversation_and_survives_ctrl_c(smol):
    import pexpect
    child = pexpect.spawn(str(MINIPAGED), ['chat', NAME, '--temperature', '0', '--max-tokens', '60'],
                          encoding='utf-8', timeout=180, env=os.environ | {'TERM': 'dumb'})
    try:
        child.expect('>>> ')
        child.sendline('Tell me a long story about a cat who learns to fly.')
        child.expect(r'fly\.\r?\n')                                   # the terminal's echo of the line
        child.expect(r'\w+')                                           # the reply is streaming
        child.sendintr()                                               # Ctrl-C: this reply only
        child.expect(r'\[interrupted after \d+ tokens?: not kept\]')
        child.expect('>>> ')
        child.sendline('/kv')
        child.expect(r'\[KV cache: 0 of \d+ blocks of 16 tokens held by requests')   # its blocks came back
        child.expect('>>> ')
        child.sendline('What is the capital of France?')
        child.expect('Paris')
        child.expect(r'\[\d+ tokens?, stop, \d+ of \d+ prompt tokens from the prefix cache')
        child.expect('>>> ')
        child.sendline('And what is it famous for?')                 # the second turn sees the first
        child.expect(r'\[\d+ tokens?, (stop|length), (\d+) of (\d+) prompt tokens from the prefix cache')
        assert int(child.match.group(2)) >= 16                          # the first turn's blocks, reused
        child.expect('>>> ')
        child.sendeof()                                                 # Ctrl-D leaves
        child.expect(pexpect.EOF)
    finally: child.close()
    assert child.exitstatus == 0, (child.exitstatus, child.signalstatus)


def test_serve_answers_the_openai_client_as_llm_chat_does(smol, engine):
    import openai
    server = subprocess.Popen([str(MINIPAGED), 'serve', NAME, '--port', '0', '--log-level', 'warning'],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()
        port = re.search(r'http://127.0.0.1:(\d+)', line).group(1)
        client = openai.OpenAI(base_url=f'http://127.0.0.1:{port}/v1', api_key='unused', max_retries=0)
        conv = CHATS[0]
        got = client.chat.completions.create(model=NAME, messages=conv, max_tokens=40, temperature=0)
        want = engine.chat(conv, SamplingParams(max_tokens=40, temperature=0.0), use_tqdm=False)[0].outputs[0]
        assert got.choices[0].message.content == want.text and 'Paris' in want.text
    finally:
        server.terminate(); server.wait(timeout=60)
