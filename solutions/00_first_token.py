"Worked solutions to the exercises of chapter 00 (a first token)."
import torch
from minipaged.first.loop import stream

def generate_until(model, tokenizer, prompt: list[int], stop: list[str], max_tokens: int) -> tuple[str, list[int]]:
    "Greedy tokens after `prompt` until their text holds a string of `stop`: (the text before it, the tokens)"
    # The whole text is decoded again after every token: a token may complete a stop string that started in
    # an earlier one, and a tokenizer may join pieces differently than one token at a time. Chapter 08's
    # engine decodes incrementally instead, which costs less for long answers.
    tokens = []
    for token in stream(model, prompt, max_tokens):
        tokens.append(token)
        text = tokenizer.decode(tokens)
        found = [text.find(s) for s in stop if s in text]
        if found: return text[:min(found)], tokens       # stopping here is the point: no token more
    return tokenizer.decode(tokens), tokens

def temperature_pick(temperature: float, generator: torch.Generator):
    "A `pick` for `stream`: greedy at temperature 0, else a draw from softmax(logits / temperature)"
    if not temperature >= 0: raise ValueError(f"temperature must be >= 0, got {temperature!r}")
    def pick(logits: torch.Tensor) -> int:
        if temperature == 0: return int(logits.argmax())
        probs = torch.softmax(logits.float() / temperature, dim=-1)
        return int(torch.multinomial(probs, 1, generator=generator))
    return pick
