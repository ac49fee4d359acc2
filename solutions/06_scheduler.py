"Worked solutions to the exercises of chapter 06 (the scheduler)."
from minipaged.engine.admission import rejection    # exercise 1 (build it): the library's own check is the worked solution


def steps_to_first_token(prompt_len: int, budget: int, num_decoding: int = 0) -> int:
    "The steps a prompt of `prompt_len` tokens takes to its first token, beside `num_decoding` decodes"
    # Every step plans the decodes first, one token each, so the prompt gets what is left of the budget:
    # `budget - num_decoding` tokens a step, the admitting step included. Its last chunk may be a single
    # token (it then runs among the decode rows, and still costs one token of the budget). The step that
    # computes the last prompt token samples the first output token, so the answer is a ceiling division.
    per_step = budget - num_decoding
    return -(-prompt_len // per_step)


def quota_rule(s, req, quota: int):
    "Why `req` is rejected when its tenant already has `quota` unfinished requests in `s`, else None"
    # `s.requests` holds every unfinished request (waiting or running, preempted ones included), and `req`
    # is not among them yet: `add_request` registers it only after the rules pass. A request that finishes
    # leaves `s.requests`, which frees its tenant's place. A preempted request is requeued without going
    # through the rules again, so the quota never turns away work that was already admitted.
    held = sum(r.cache_salt == req.cache_salt for r in s.requests.values())
    if held >= quota:
        return f'tenant {req.cache_salt!r} has {held} unfinished requests (quota {quota})'
    return None

