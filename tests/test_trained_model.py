"""The shipped checkpoint `models/pylm` (chapter 07d): its files, its size, its metrics, and greedy tokens equal to
`transformers`' on a few prompts (the engine loads it from disk like any checkpoint, tokenizer included)."""
import json, warnings
import pytest
import torch

transformers = pytest.importorskip('transformers')
from transformers import AutoModelForCausalLM, AutoTokenizer
from minipaged.llm import LLM
from minipaged.engine.sampler import SamplingParams
from minipaged.model.fetch import shipped_model

transformers.utils.logging.disable_progress_bar()
FILES = ('config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json', 'generation_config.json',
         'README.md', 'loss.csv', 'metrics.json', 'recipe.json', 'corpus.json', 'corpus_files.txt')
PROMPTS = ['def read_config(path):', 'class Stack:\n    def push(self, item):', 'import os\n\n\ndef main():',
           '    for i in range(10):']

@pytest.fixture(scope='module')
def path():
    return shipped_model()

def test_files_present_and_small(path):
    assert all((path / f).is_file() for f in FILES), [f for f in FILES if not (path / f).is_file()]
    assert sum(f.stat().st_size for f in path.iterdir() if f.is_file()) <= 25e6

def test_vocab_sizes_and_eos_agree(path):
    cfg = json.loads((path / 'config.json').read_text())
    tok = AutoTokenizer.from_pretrained(path)
    gen = json.loads((path / 'generation_config.json').read_text())
    assert cfg['architectures'] == ['LlamaForCausalLM'] and cfg['vocab_size'] == len(tok) == 4096
    assert cfg['eos_token_id'] == [tok.eos_token_id] == [gen['eos_token_id']] == [0]
    assert tok.eos_token == '<|endoftext|>'

def test_metrics_beat_both_baselines(path):
    m = json.loads((path / 'metrics.json').read_text())
    b = m['bits_per_byte']
    assert b['model'] < b['gzip'] and b['model'] < b['bigram'], b
    assert m['num_completions'] == 100 and len(m['samples']) == 100 and 0 <= m['valid_python'] <= 1
    assert m['valid_python'] == sum(s['valid'] for s in m['samples']) / 100

def test_greedy_tokens_equal_transformers(path):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        hf = AutoModelForCausalLM.from_pretrained(path).eval()
        tok = AutoTokenizer.from_pretrained(path)
    llm = LLM(path)
    for prompt in PROMPTS:
        ids = tok(prompt)['input_ids']
        assert ids == llm.tokenizer.encode(prompt)                      # the same tokenizer on both sides
        with torch.no_grad():
            want = hf.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                               max_new_tokens=30, do_sample=False, pad_token_id=0, eos_token_id=0)[0, len(ids):]
        want = want.tolist()
        if 0 in want: want = want[:want.index(0) + 1]                     # transformers pads after EOS
        out = llm.generate([prompt], SamplingParams(max_tokens=30, temperature=0.0), use_tqdm=False)[0].outputs[0]
        assert out.token_ids == want, prompt
        assert out.text == tok.decode(want, skip_special_tokens=True)
    llm.block_manager.check()
