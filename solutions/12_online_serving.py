"Worked solutions to chapter 12's exercises"
import json


def read_events(text: str) -> list[dict]:
    "The JSON bodies of an event stream's data lines, in order, up to [DONE]"
    events = []
    for line in text.splitlines():
        if not line.startswith('data:'): continue
        data = line[5:].strip()
        if data == '[DONE]': break
        events.append(json.loads(data))
    return events


def bucket_quantile(bounds: list[float], cumulative: list[int], q: float) -> float:
    "Prometheus' histogram_quantile: linear interpolation inside the bucket where the rank q * count falls"
    rank = q * cumulative[-1]
    for i, (b, c) in enumerate(zip(bounds, cumulative)):
        if c >= rank:
            if b == float('inf'): return bounds[i - 1]
            lo, below = (bounds[i - 1], cumulative[i - 1]) if i else (0.0, 0)
            return lo + (b - lo) * (rank - below) / (c - below) if c > below else b
    return bounds[-2]
