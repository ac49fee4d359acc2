"Worked solutions to the exercises of chapter 08 (the step loop)."
from minipaged.engine.core import EngineCore

# the library's own step: `EngineCore.step(core, partial)` is one iteration of `core`
engine_step = EngineCore.step


def stream(llm, prompts: list[list[int]], params):
    "Yield (prompt index, token) as each step produces it"
    # every prompt is queued first, so that they run together (iteration-level batching)
    index = {llm.add_request(p, params): i for i, p in enumerate(prompts)}
    seen = dict.fromkeys(index, 0)               # tokens already yielded, per request
    while llm.has_unfinished_requests():
        for out in llm.step():                   # outputs so far of every request that gained a token
            if out.request_id not in index: continue
            tokens = out.outputs[0].token_ids
            for t in tokens[seen[out.request_id]:]: yield index[out.request_id], t
            seen[out.request_id] = len(tokens)
