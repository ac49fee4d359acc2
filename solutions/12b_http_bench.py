"Worked solutions to the exercises of chapter 12b (the benchmark over HTTP, and `minipaged serve`)"
import re


def my_request_body(prompt, p) -> dict:
    "The streamed /v1/completions body of `prompt` and the SamplingParams `p`"
    # The usage chunk at the end carries the output token count, which TPOT needs (a chunk may hold several).
    body = dict(prompt=prompt, max_tokens=p.max_tokens, temperature=p.temperature, stream=True,
                stream_options=dict(include_usage=True))
    if p.seed is not None: body['seed'] = p.seed
    if p.ignore_eos: body['ignore_eos'] = True
    if p.stop_token_ids: body['stop_token_ids'] = list(p.stop_token_ids)
    return body


def my_read_metrics(text: str) -> dict:
    "{'name{labels}': value} for every sample line of a Prometheus text page"
    out = {}
    for line in text.splitlines():
        # A sample is a metric name, optional {labels}, whitespace, a value; comments and junk are skipped.
        m = re.match(r'^([a-zA-Z_:][\w:]*)(\{.*\})?\s+(\S+)$', line)
        if line.startswith('#') or not m: continue
        name, labels, value = m.groups()
        out[name + (labels or '')] = float(value)
    return out
