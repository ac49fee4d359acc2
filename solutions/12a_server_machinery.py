"Worked solutions to the exercises of chapter 12a (the server's machinery)"
import json

from minipaged.serve.protocol import APIError


def read_events(text: str) -> list[dict]:
    "The JSON bodies of an event stream's data lines, in order, up to [DONE]"
    events = []
    for line in text.splitlines():
        if not line.startswith('data:'): continue
        data = line[5:].strip()
        if data == '[DONE]': break
        events.append(json.loads(data))
    return events


def my_bound_refusal(n: int, waiting: int, max_waiting: int) -> APIError | None:
    "APIError(400, ..., 'prompt') when n alone passes the bound; APIError(503, ...) when it would now; else None"
    # The order matters: a request that can never fit must hear 400 (do not retry), even while the queue is full.
    if n > max_waiting: return APIError(400, f"prompt: {n} prompts, more than max_waiting ({max_waiting})", 'prompt')
    if waiting + n > max_waiting: return APIError(503, f"server overloaded: {waiting} requests are waiting")
    return None
