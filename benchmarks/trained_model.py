#!/usr/bin/env python
"""The shipped model's quality, re-measured from the checkpoint: held-out bits per byte of `models/pylm` against
`gzip -9` and a token bigram on the same held-out files, and the valid-Python share of 100 seeded sampled
completions of held-out function headers (chapter 07d's `evaluate_checkpoint`, through the engine). The training
figures (time, tokens, final loss) are the checkpoint's own record (`metrics.json`, written by `make train`).

    python benchmarks/trained_model.py --json benchmarks/results/trained_model.json
"""
import argparse, json
from pathlib import Path
import harness
import torch
from minipaged.model.fetch import shipped_model
from minipaged.training.recipe import Recipe, _saved_tokenizer, evaluate_checkpoint, prepare_data
from minipaged.utils import format_rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--model', default=None, help='checkpoint directory (default: the shipped models/pylm)')
    p.add_argument('--json', help='write the results here')
    a = p.parse_args(argv)
    out = Path(a.model) if a.model else shipped_model()
    r = Recipe(**json.loads((out / 'recipe.json').read_text()))
    torch.set_num_threads(r.threads)
    data = prepare_data(r, None, _saved_tokenizer(out))
    m = evaluate_checkpoint(out, r, data)
    saved = json.loads((out / 'metrics.json').read_text())
    res = dict(model=str(out.relative_to(harness.ROOT)) if out.is_relative_to(harness.ROOT) else str(out),
               corpus_sha256=data['sha256'], bits_per_byte=m['bits_per_byte'], bigram_lambda=m['bigram_lambda'],
               heldout_bytes=m['heldout_bytes'], valid_python=m['valid_python'], num_completions=m['num_completions'],
               ended_by_eos=m['ended_by_eos'], samples=m['samples'][:3], training=saved.get('training', {}),
               recipe=json.loads((out / 'recipe.json').read_text()),
               same_as_checkpoint_record=m['bits_per_byte'] == saved['bits_per_byte'] and m['valid_python'] == saved['valid_python'])
    print(harness.header_line())
    b = m['bits_per_byte']
    print(format_rows([dict(what='held-out bits/byte', model=round(b['model'], 3), bigram=round(b['bigram'], 3),
                            gzip_9=round(b['gzip'], 3)),
                       dict(what='valid Python', model=f"{m['valid_python']:.0%} of {m['num_completions']}",
                            bigram='', gzip_9='')]))
    if a.json: harness.write_json(a.json, res)
    return res


if __name__ == '__main__':
    main()
