"Worked solutions to the exercises of chapter 12b (the benchmark over HTTP, and `minipaged serve`)"
import re
from minipaged.bench.http import request_body as my_request_body   # exercise 1: the library's own is the worked solution


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
