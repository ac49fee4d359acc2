"""Text in, text out, against the outside references.

A tiny random Llama is built by `transformers` and saved with `save_pretrained`, beside a byte-level BPE
tokenizer trained by `tokenizers` on a text with accents, Chinese and emoji (so characters split across
tokens), wrapped in `PreTrainedTokenizerFast` with a chat template and saved the same way: the directory
looks like a real checkpoint. Checked here: incremental detokenization while streaming, stop strings,
logprobs against `transformers`' logits, chat token ids against `apply_chat_template`, prompt dicts, and
every bad input's error."""
import json, shutil, warnings
import pytest
import torch

transformers = pytest.importorskip('transformers')
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
from minipaged import LLM, SamplingParams
from minipaged.model.causal_lm import contiguous_forward
from minipaged.model.config import tiny_config
from minipaged.model.tokenizer import Detokenizer, TextTokenizer, find_stop, load_tokenizer
from minipaged.testing.text import CHAT_TEMPLATE, tiny_text_checkpoint, train_tiny_bpe

transformers.utils.logging.disable_progress_bar()
VOCAB = 320
# a richer template than the fixture's: a system message, tojson, raise_exception, loop controls, eos_token
TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}"
    "{% if m['role'] not in ['system', 'user', 'assistant'] %}{{ raise_exception('bad role ' + m['role']) }}{% endif %}"
    "{% if m['role'] == 'system' %}[SYS]{{ m['content'] | tojson }}\n{% continue %}{% endif %}"
    "<|{{ m['role'] }}|>\n{{ m['content'] }}{% if m['role'] == 'assistant' %}{{ eos_token }}{% endif %}\n"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>\n{% endif %}")
FORCED = 'Hello naïve 汉字 🎉 world, café 中文 🙂!'
CONVERSATIONS = [
    [{'role': 'user', 'content': 'Hé, 中文?'}],
    [{'role': 'system', 'content': 'Be "brief" <b>é</b>'}, {'role': 'user', 'content': 'naïve 汉字 🎉'},
     {'role': 'assistant', 'content': 'ok 🙂'}, {'role': 'user', 'content': 'more'}],
]

def bpe_with_bos():
    "The fixture's tokenizer, adding <s> in front of every encoded text (as Llama's tokenizer.json does)"
    tok = train_tiny_bpe()
    tok.post_processor = processors.TemplateProcessing(single='<s> $A', special_tokens=[('<s>', 0)])
    return tok

@pytest.fixture(scope='module')
def checkpoint(tmp_path_factory):
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=512,
                      initializer_range=0.1, rope_theta=5000.0, bos_token_id=0, eos_token_id=1)
    hf = LlamaForCausalLM(cfg).eval()
    path = tmp_path_factory.mktemp('text')
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        hf.save_pretrained(path)
        tok = PreTrainedTokenizerFast(tokenizer_object=bpe_with_bos(), bos_token='<s>', eos_token='</s>')
        tok.chat_template = TEMPLATE
        tok.save_pretrained(path)
    return hf, path

@pytest.fixture(scope='module')
def llm(checkpoint):
    return LLM(checkpoint[1], block_size=4, num_blocks=256)

def force(ids):
    "A logits processor that makes every sample produce exactly `ids` (then anything)"
    def f(history, logits):
        if len(history) >= len(ids): return logits
        out = torch.full_like(logits, float('-inf')); out[ids[len(history)]] = 0.0
        return out
    return f

def forced_params(ids, **kw):
    return SamplingParams(max_tokens=kw.pop('max_tokens', len(ids)), temperature=0, ignore_eos=kw.pop('ignore_eos', True),
                          logits_processors=[force(ids)], **kw)

def stream(llm, prompt, params):
    "Every partial output of one request while it runs, and its final one"
    rid = llm.add_request(prompt, params)
    seen = []
    while llm.has_unfinished_requests():
        seen += [o for o in llm.step() if o.request_id == rid]
    assert seen[-1].finished
    return seen

# ---- loading the tokenizer files

def test_loads_tokenizer_json_config_and_template(checkpoint, llm):
    _, path = checkpoint
    assert (path / 'chat_template.jinja').exists()                        # transformers 5 writes it there
    tok = llm.tokenizer
    assert (tok.chat_template, tok.template_source) == (TEMPLATE, str(path / 'chat_template.jinja'))
    assert tok.special_tokens == {'bos_token': '<s>', 'eos_token': '</s>'}
    assert llm.core.eos_ids == frozenset({1})

def test_template_in_tokenizer_config(tmp_path, checkpoint):
    for f in ('tokenizer.json', 'config.json', 'model.safetensors'): shutil.copy(checkpoint[1] / f, tmp_path / f)
    (tmp_path / 'tokenizer_config.json').write_text(json.dumps(
        {'bos_token': {'content': '<s>', 'special': True}, 'eos_token': '</s>', 'chat_template': CHAT_TEMPLATE}))
    tok = LLM(tmp_path, num_blocks=16).tokenizer
    assert (tok.chat_template, tok.template_source) == (CHAT_TEMPLATE, str(tmp_path / 'tokenizer_config.json'))
    assert tok.special_tokens['bos_token'] == '<s>'

def test_tokenizer_larger_than_the_model_vocab(tmp_path):
    path = tiny_text_checkpoint(tmp_path, vocab_size=256)               # 300 tokens, 256 rows
    with pytest.raises(ValueError) as e: LLM(path, num_blocks=16)
    assert str(path / 'tokenizer.json') in str(e.value)
    assert '300 tokens' in str(e.value) and 'vocab_size is 256' in str(e.value)
    assert LLM(tiny_text_checkpoint(tmp_path / 'big', vocab_size=384), num_blocks=16).tokenizer.vocab_size == 300

def test_user_tokenizer_larger_than_the_model_vocab():
    with pytest.raises(ValueError, match="tokenizer: the tokenizer has 300 tokens .* vocab_size is 256"):
        LLM(tiny_config(), num_blocks=16, tokenizer=train_tiny_bpe())

@pytest.mark.parametrize('name,text', [('tokenizer.json', '{"model": '), ('tokenizer.json', '{"version": "1.0"}'),
                                       ('tokenizer_config.json', '{"bos_token": '),
                                       ('tokenizer_config.json', '{"chat_template": 5}')])
def test_corrupt_tokenizer_files_name_the_file(tmp_path, name, text):
    path = tiny_text_checkpoint(tmp_path)
    (path / name).write_text(text)
    with pytest.raises(ValueError) as e: LLM(path, num_blocks=16)
    assert str(path / name) in str(e.value)

# ---- incremental detokenization

def test_detokenizer_every_step_equals_once_at_the_end():
    tok = TextTokenizer(train_tiny_bpe())
    g = torch.Generator().manual_seed(0)
    for trial in range(30):
        ids = torch.randint(0, 300, (int(torch.randint(1, 40, (1,), generator=g)),), generator=g).tolist()
        prompt = tok.encode('Hello naïve ') if trial % 2 else []
        kw = dict(stop=('é', 'ab') if trial % 3 == 0 else ()) | dict(include_stop_str_in_output=trial % 4 == 0)
        every, once = Detokenizer(tok, prompt, **kw), Detokenizer(tok, prompt, **kw)
        partials = []
        for i in range(len(ids)):
            every.update(ids[:i + 1]); partials.append(every.output_text(False))
        every.update(ids, finished=True); once.update(ids, finished=True)
        final = every.output_text(True)
        assert (final, every.stop_reason) == (once.output_text(True), once.stop_reason)
        assert all(final.startswith(p) for p in partials)
        if not kw['stop']: assert final == tok.decode(ids)              # byte-level BPE: decode's text exactly

def test_detokenizer_gives_a_sentencepiece_leading_space_from_the_prompt():
    tok = Tokenizer(models.BPE(unk_token='<unk>'))
    tok.pre_tokenizer, tok.decoder = pre_tokenizers.Metaspace(), decoders.Metaspace()
    tok.train_from_iterator(['Hello world, hello there world'] * 8,
                            trainers.BpeTrainer(vocab_size=60, special_tokens=['<unk>'], show_progress=False))
    tt = TextTokenizer(tok)
    prompt, out = tt.encode('Hello'), tt.encode(' world')
    assert tt.decode(out) == 'world'                                      # alone, the leading space is lost
    d = Detokenizer(tt, prompt); d.update(out, finished=True)
    assert d.output_text(True) == ' world'

def test_streaming_never_shows_a_broken_character(llm):
    ids = llm.tokenizer.encode(FORCED, add_special_tokens=False)
    assert any('\ufffd' in llm.tokenizer.decode([t]) for t in ids)      # characters split across tokens
    seen = stream(llm, 'Hi', forced_params(ids))
    texts = [o.outputs[0].text for o in seen]
    assert texts[-1] == FORCED and len(texts) == len(ids)
    assert all('\ufffd' not in t and FORCED.startswith(t) for t in texts)
    assert len(set(texts)) < len(texts)                                  # some steps waited for a whole character

@pytest.mark.parametrize('seed', range(4))
def test_streamed_text_is_a_prefix_and_ends_as_decode(llm, seed):
    params = SamplingParams(max_tokens=30, temperature=1.0, seed=seed, n=2, ignore_eos=True)
    seen = stream(llm, {'prompt': 'café 中文'}, params)
    final = seen[-1].outputs
    for c in final: assert c.text == llm.tokenizer.decode(c.token_ids)
    for o in seen:
        for c in o.outputs: assert final[c.index].text.startswith(c.text)

def test_text_at_eos_and_skip_special_tokens(llm):
    ids = llm.tokenizer.encode('café', add_special_tokens=False) + [1]
    c = llm.generate('x', forced_params(ids, max_tokens=10, ignore_eos=False))[0].outputs[0]
    assert (c.text, c.finish_reason, c.stop_reason, c.token_ids) == ('café', 'stop', None, ids)

# ---- stop strings

def test_stop_string_spanning_tokens(llm):
    ids = llm.tokenizer.encode(FORCED, add_special_tokens=False)
    cut = llm.generate('Hi', forced_params(ids, stop='汉字'))[0].outputs[0]
    assert (cut.text, cut.finish_reason, cut.stop_reason) == ('Hello naïve ', 'stop', '汉字')
    assert cut.token_ids == ids[:len(cut.token_ids)] and len(cut.token_ids) < len(ids)
    # it stopped at the token that completed the stop string, not later
    assert '汉字' in llm.tokenizer.decode(cut.token_ids) and '汉字' not in llm.tokenizer.decode(cut.token_ids[:-1])
    kept = llm.generate('Hi', forced_params(ids, stop=['zzz', '汉字'], include_stop_str_in_output=True))[0].outputs[0]
    assert (kept.text, kept.stop_reason, kept.token_ids) == ('Hello naïve 汉字', '汉字', cut.token_ids)
    assert llm.block_manager.num_used_blocks == 0; llm.block_manager.check()

def test_stop_string_streams_only_text_it_keeps(llm):
    ids = llm.tokenizer.encode(FORCED, add_special_tokens=False)
    seen = stream(llm, 'Hi', forced_params(ids, stop='world'))
    final = seen[-1].outputs[0].text
    assert final == 'Hello naïve 汉字 🎉 ' and all(final.startswith(o.outputs[0].text) for o in seen)

def test_stop_string_ends_the_request_and_frees_its_blocks_at_once(llm):
    ids = llm.tokenizer.encode(FORCED, add_special_tokens=False)
    other = llm.add_request([5, 6, 7], SamplingParams(max_tokens=40, temperature=0, ignore_eos=True))
    mine = llm.add_request('Hi', forced_params(ids, stop='naïve', max_tokens=40))
    ended = None
    while ended is None:
        ended = next((o for o in llm.step() if o.request_id == mine and o.finished), None)
    assert ended.outputs[0].finish_reason == 'stop' and len(ended.outputs[0].token_ids) < 10
    held = {b for b in llm.block_manager.block_table((other, 0))}
    assert llm.block_manager.num_used_blocks == len(held)               # only the other request holds blocks
    llm.abort(other)
    while llm.has_unfinished_requests(): llm.step()
    assert llm.block_manager.num_used_blocks == 0; llm.block_manager.check()

def test_n_samples_stop_each_on_its_own(llm):
    params = SamplingParams(n=2, max_tokens=24, temperature=1.0, seed=3, ignore_eos=True)
    free = llm.generate('café', params)[0].outputs
    a, b = free[0].text, free[1].text
    stop = next(a[i:i + 2] for i in range(len(a) - 1) if '\ufffd' not in a[i:i + 2] and a[i:i + 2] not in b)
    outs = llm.generate('café', SamplingParams(n=2, max_tokens=24, temperature=1.0, seed=3, ignore_eos=True,
                                               stop=stop))[0].outputs
    assert (outs[0].finish_reason, outs[0].stop_reason, outs[0].text) == ('stop', stop, a[:a.find(stop)])
    assert outs[0].token_ids == free[0].token_ids[:len(outs[0].token_ids)]
    assert (outs[1].finish_reason, outs[1].stop_reason, outs[1].token_ids) == ('length', None, free[1].token_ids)
    assert llm.block_manager.num_used_blocks == 0; llm.block_manager.check()

def test_stop_token_id_is_the_stop_reason(llm):
    ids = llm.tokenizer.encode(FORCED, add_special_tokens=False)
    c = llm.generate('Hi', forced_params(ids, stop_token_ids=[ids[3]]))[0].outputs[0]
    assert (c.finish_reason, c.stop_reason, c.token_ids) == ('stop', ids[3], ids[:4])
    assert c.text == llm.tokenizer.decode(ids[:3])                       # the stop token's text is left out
    c = llm.generate('Hi', forced_params(ids, max_tokens=5))[0].outputs[0]
    assert (c.finish_reason, c.stop_reason) == ('length', None)

def test_stop_without_a_tokenizer_names_stop():
    e = LLM(tiny_config(), num_blocks=16)
    with pytest.raises(ValueError, match='stop: the stop strings'): e.add_request([1, 2], SamplingParams(stop='x'))
    with pytest.raises(ValueError, match=r"prompts\[0\]: stop:"): e.generate([[1, 2]], SamplingParams(stop=['x']))

def test_find_stop_only_searches_new_text():
    assert find_stop('aXbX', 1, ('X',)) == (3, 'X')
    assert find_stop('ab', 1, ('abc',)) is None

# ---- logprobs

def hf_logits(hf, prompt, new):
    with torch.no_grad():
        out = hf.generate(torch.tensor([prompt]), attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
                          max_new_tokens=new, do_sample=False, pad_token_id=1, eos_token_id=None,
                          output_logits=True, return_dict_in_generate=True)
    return out.sequences[0, len(prompt):].tolist(), [torch.log_softmax(x[0].float(), -1) for x in out.logits]

@pytest.mark.parametrize('k', [0, 5, 20])
def test_logprobs_match_transformers(checkpoint, llm, k):
    hf, _ = checkpoint
    prompts = [llm.tokenizer.encode(t) for t in ('def add(a, b):', 'naïve 汉字 🎉', 'x')]
    outs = llm.generate(prompts, SamplingParams(max_tokens=12, temperature=0, ignore_eos=True, logprobs=k))
    for p, o in zip(prompts, outs):
        c = o.outputs[0]
        want_ids, want = hf_logits(hf, p, 12)
        assert c.token_ids == want_ids and len(c.logprobs) == 12
        for t, entry, ref in zip(c.token_ids, c.logprobs, want):
            assert list(entry)[0] == t and entry[t].rank == 1                   # greedy: the sampled token first
            assert abs(entry[t].logprob - float(ref[t])) < 1e-4
            assert entry[t].decoded_token == llm.tokenizer.decode([t], skip_special_tokens=False)
            top = ref.topk(k)
            assert len(entry) == max(k, 1)
            if k:
                got = list(entry)
                assert got == top.indices.tolist() or torch.allclose(top.values[:-1], top.values[1:], atol=1e-6)
                for i, (tid, v) in enumerate(zip(top.indices.tolist(), top.values.tolist())):
                    assert abs(entry[tid].logprob - v) < 1e-4 and entry[tid].rank == i + 1
        assert abs(c.cumulative_logprob - sum(e[t].logprob for t, e in zip(c.token_ids, c.logprobs))) < 1e-9

def test_no_logprobs_unless_asked(llm):
    c = llm.generate([[5, 6]], SamplingParams(max_tokens=3, temperature=0))[0].outputs[0]
    assert (c.logprobs, c.cumulative_logprob) == (None, None)

def test_logprobs_survive_preemption(checkpoint):
    _, path = checkpoint
    prompts = [[(7 * i + j) % 290 + 2 for j in range(20 + 3 * i)] for i in range(6)]
    params = SamplingParams(max_tokens=30, temperature=0, ignore_eos=True, logprobs=3)
    roomy = LLM(path, block_size=4, num_blocks=512).generate(prompts, params)
    tight = LLM(path, block_size=4, num_blocks=40)
    starved = tight.generate(prompts, params)
    assert tight.scheduler.counters['preemptions'] > 0
    for a, b in zip(roomy, starved):
        ca, cb = a.outputs[0], b.outputs[0]
        assert ca.token_ids == cb.token_ids and len(cb.logprobs) == 30
        for ea, eb in zip(ca.logprobs, cb.logprobs):
            assert list(ea) == list(eb) and all(abs(ea[t].logprob - eb[t].logprob) < 1e-4 for t in ea)
        assert abs(ca.cumulative_logprob - cb.cumulative_logprob) < 1e-3
    assert tight.block_manager.num_used_blocks == 0

def test_logprobs_of_forked_samples(llm):
    prompt = llm.tokenizer.encode('Hello')
    o = llm.generate([prompt], SamplingParams(n=3, max_tokens=8, temperature=1.0, seed=5, logprobs=2,
                                              ignore_eos=True))[0]
    for c in o.outputs:
        with torch.no_grad():
            ref = torch.log_softmax(contiguous_forward(llm.model, torch.tensor(prompt + c.token_ids)), -1)
        assert len(c.logprobs) == 8
        for i, (t, e) in enumerate(zip(c.token_ids, c.logprobs)):
            row = ref[len(prompt) + i - 1]
            assert list(e)[0] == t and abs(e[t].logprob - float(row[t])) < 1e-4
            # the rank counts the tokens above it: within the logprob's tolerance, a near-tie may count either way
            assert int((row > row[t] + 1e-4).sum()) + 1 <= e[t].rank <= int((row > row[t] - 1e-4).sum()) + 1
        assert abs(c.cumulative_logprob - sum(e[t].logprob for t, e in zip(c.token_ids, c.logprobs))) < 1e-9

# ---- chat

@pytest.mark.parametrize('add', [True, False])
def test_chat_ids_equal_transformers(checkpoint, llm, add):
    _, path = checkpoint
    hf_tok = AutoTokenizer.from_pretrained(path)
    params = SamplingParams(max_tokens=2, temperature=0)
    outs = llm.chat(CONVERSATIONS, params, add_generation_prompt=add)
    for conv, o in zip(CONVERSATIONS, outs):
        want = hf_tok.apply_chat_template(conv, tokenize=True, add_generation_prompt=add)
        want = want['input_ids'] if hasattr(want, 'keys') else want           # transformers 5: a BatchEncoding
        assert o.prompt_token_ids == list(want)
        assert o.prompt == hf_tok.apply_chat_template(conv, tokenize=False, add_generation_prompt=add)
        assert o.prompt_token_ids.count(0) == 1                             # one BOS: the template's, not added again
    one = llm.chat(CONVERSATIONS[0], params, add_generation_prompt=add)
    assert len(one) == 1 and one[0].prompt_token_ids == outs[0].prompt_token_ids

def test_chat_template_argument(llm):
    o = llm.chat([{'role': 'user', 'content': 'é'}], SamplingParams(max_tokens=1), chat_template='{{ messages[0].content }}!')
    assert o[0].prompt == 'é!' and o[0].prompt_token_ids == llm.tokenizer.encode('é!', add_special_tokens=False)

def test_chat_errors(tmp_path, checkpoint, llm):
    conv = CONVERSATIONS[0]
    with pytest.raises(ValueError, match=r"chat_template\.jinja failed to render: TemplateError: bad role tool"):
        llm.chat([{'role': 'tool', 'content': 'x'}])
    with pytest.raises(ValueError, match=r"messages\[1\]: messages\[0\] must be a dict"):
        llm.chat([conv, [{'content': 'no role'}]])
    for f in ('tokenizer.json', 'config.json', 'model.safetensors'): shutil.copy(checkpoint[1] / f, tmp_path / f)
    (tmp_path / 'tokenizer_config.json').write_text('{"eos_token": "</s>"}')
    with pytest.raises(ValueError, match=r"chat_template: .*tokenizer_config\.json"):
        LLM(tmp_path, num_blocks=16).chat(conv)
    (tmp_path / 'chat_template.jinja').write_text('{% for m in messages %}{{ m.content | nope }}{% endfor %}')
    with pytest.raises(ValueError) as e: LLM(tmp_path, num_blocks=16).chat(conv)
    assert str(tmp_path / 'chat_template.jinja') in str(e.value) and "No filter named 'nope'" in str(e.value)
    with pytest.raises(ValueError, match='add_generation_prompt must be True or False'):
        llm.chat(conv, add_generation_prompt='yes')

# ---- prompts

def test_prompt_dicts_in_generate_and_add_request(llm):
    ids = llm.tokenizer.encode('Hello')
    params = SamplingParams(max_tokens=4, temperature=0)
    a, b, c = llm.generate([{'prompt': 'Hello'}, {'prompt_token_ids': ids}, 'Hello'], params)
    assert a.outputs[0].token_ids == b.outputs[0].token_ids == c.outputs[0].token_ids
    assert (a.prompt, b.prompt, a.prompt_token_ids) == ('Hello', None, ids)
    assert ids[0] == 0                                                     # a string prompt gets the tokenizer's BOS
    one = llm.generate({'prompt_token_ids': ids}, params)
    assert len(one) == 1 and one[0].outputs[0].token_ids == a.outputs[0].token_ids
    rid = llm.add_request({'prompt': 'Hello'}, params)
    while llm.has_unfinished_requests(): out = llm.step()
    assert out[-1].request_id == rid and out[-1].outputs[0].token_ids == a.outputs[0].token_ids

@pytest.mark.parametrize('bad,msg', [({'text': 'x'}, "prompt dict key 'text' is not one of"),
                                     ({}, "needs the key 'prompt' or 'prompt_token_ids'"),
                                     ({'prompt': ['a']}, "key 'prompt' must be a string"),
                                     ({'prompt_token_ids': 'abc'}, "'prompt_token_ids' must be a list"),
                                     ({'prompt_token_ids': [1, 999]}, 'must be in [0, 320)'),
                                     ({'prompt_token_ids': []}, 'at least one token')])
def test_bad_prompt_dicts(llm, bad, msg):
    with pytest.raises(ValueError) as e: llm.add_request(bad)
    assert msg in str(e.value)
    with pytest.raises(ValueError) as e: llm.generate([{'prompt': 'ok'}, bad])
    assert str(e.value).startswith('prompts[1]: ') and msg in str(e.value)
    assert not llm.has_unfinished_requests()                               # nothing was submitted

def test_bad_sampling_params():
    for kw, msg in [(dict(logprobs=21), 'logprobs must be an integer in [0, 20]'), (dict(stop=[3]), 'stop must be'),
                    (dict(stop=''), 'stop must be'), (dict(include_stop_str_in_output='y'), 'include_stop_str_in_output')]:
        with pytest.raises(ValueError) as e: SamplingParams(**kw)
        assert msg in str(e.value)

def test_broken_tokenizer_fails_its_request_only():
    class Breaks:
        def encode(self, text): return type('E', (), {'ids': [3, 4]})()
        def decode(self, ids):
            if 9 in ids: raise KeyError(9)
            return 'ok'
    e = LLM(tiny_config(), num_blocks=32, tokenizer=Breaks())
    bad = e.add_request('x', SamplingParams(max_tokens=4, temperature=0, stop='zz', logits_processors=[force([9, 9, 9, 9])]))
    good = e.add_request('x', SamplingParams(max_tokens=4, temperature=0, stop='zz', logits_processors=[force([5] * 4)]))
    outs = {}
    while e.has_unfinished_requests(): outs.update({o.request_id: o for o in e.step() if o.finished})
    assert outs[bad].outputs[0].finish_reason == 'aborted' and 'decoding failed: KeyError: 9' in outs[bad].outputs[0].error
    assert (outs[good].outputs[0].finish_reason, outs[good].outputs[0].error) == ('length', None)
    assert outs[good].outputs[0].text is not None
    assert e.block_manager.num_used_blocks == 0

def test_a_plain_tokenizer_gets_no_left_context():
    joined = type('Joined', (), {'decode': lambda self, ids: ' '.join(map(str, ids)), 'encode': None})()
    d = Detokenizer(TextTokenizer(joined), [5, 6, 7]); d.update([57, 57, 58], finished=True)
    assert d.output_text(True) == '57 57 58'                              # its decode's text, nothing of the prompt
