"""What an 8-bit KV cache costs in quality (chapter 16): fp8 and int8 pages against the model's own dtype.

Per model and KV format (`auto` = the model's dtype, `fp8` = float8 e4m3, `int8`; both 8-bit formats store a float32
scale per token and KV head):
  - greedy agreement: every prompt answered greedily with --new tokens (ignore_eos): the share of answers identical
    to the `auto` cache's, and the tokens until the first that differs (median, least);
  - next-token KL(p_auto || p_format) in nats, teacher-forced on the `auto` answers, mean and max over positions;
  - pylm only: held-out bits per byte over its whole held-out set (chapter 07e's files and windows of 256 tokens),
    read through a paged cache of each format; `auto` must reproduce the checkpoint's metrics.json.
Models: SmolLM2-135M-Instruct (the 32 chat prompts of benchmarks/smollm2_cpu.py through its chat template; skipped
if not fetched) and pylm (the first --pylm-prompts of models/pylm/prompts.jsonl). float32, this CPU.

    python benchmarks/kv_quality.py --json benchmarks/results/kv_quality.json
"""
import argparse, json, time
import harness                                  # first: it puts this checkout's minipaged on the path
import torch
from tokenizers import Tokenizer
from minipaged.bench.kv_quality import measure_formats
from minipaged.llm import LLM
from minipaged.model.fetch import fetched_path, shipped_model
from minipaged.training.corpus import read_documents, stdlib_root
from minipaged.training.evaluate import bits_per_byte
from minipaged.training.tokenizer import encode_documents
from smollm2_cpu import NAME, QUESTIONS


def instruct_rows(new: int) -> list[dict] | None:
    "The instruct model's rows, None when it is not fetched"
    path = fetched_path(NAME)
    if not path.is_dir(): return None
    chat = LLM(path)
    prompts = [chat.chat_prompt([{'role': 'user', 'content': q}])['prompt_token_ids'] for q in QUESTIONS]
    del chat
    return measure_formats(path, prompts, max_tokens=new)


def pylm_rows(new: int, num_prompts: int) -> tuple[list[dict], dict]:
    "pylm's rows with held-out bits per byte, and what the held-out set was"
    path = shipped_model('pylm')
    tok = Tokenizer.from_file(str(path / 'tokenizer.json'))
    lines = (path / 'prompts.jsonl').read_text().splitlines()[:num_prompts]
    prompts = [tok.encode(json.loads(line)['prompt']).ids for line in lines]
    corpus = json.loads((path / 'corpus.json').read_text())
    docs = read_documents(stdlib_root(), corpus['heldout_files'])
    stream, nbytes = encode_documents(tok, docs), len(''.join(docs).encode())
    rows = measure_formats(path, prompts, max_tokens=new, stream=stream)
    for r in rows: r['bits_per_byte'] = bits_per_byte(r.pop('nats'), nbytes)
    record = json.loads((path / 'metrics.json').read_text())['bits_per_byte']['model']
    return rows, dict(heldout_tokens=len(stream) - 1, heldout_bytes=nbytes, checkpoint_bits_per_byte=record)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--new', type=int, default=128, help='new tokens per answer')
    ap.add_argument('--pylm-prompts', type=int, default=64, help="pylm's prompts (of models/pylm/prompts.jsonl)")
    ap.add_argument('--json', help='write the results here')
    a = ap.parse_args(argv)
    print(harness.header_line())
    t0 = time.time()
    results = dict(new_tokens=a.new, models={})
    rows = instruct_rows(a.new)
    if rows is None: print(f"{NAME} is not fetched: its rows are skipped")
    else:
        results['models'][NAME] = dict(prompts=len(QUESTIONS), rows=rows)
        harness.print_table(rows, f"{NAME}: {len(QUESTIONS)} chat prompts, {a.new} greedy tokens each")
    rows, held = pylm_rows(a.new, a.pylm_prompts)
    results['models']['pylm'] = dict(prompts=a.pylm_prompts, rows=rows, **held)
    harness.print_table(rows, f"pylm: {a.pylm_prompts} prompts, {a.new} greedy tokens each; "
                              f"{held['heldout_tokens']:,} held-out tokens ({held['heldout_bytes']:,} bytes)")
    results['seconds'] = time.time() - t0
    if a.json: harness.write_json(a.json, results, argv)


if __name__ == '__main__':
    torch.set_grad_enabled(False)
    main()
