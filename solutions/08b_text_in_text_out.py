"Worked solutions to the exercises of chapter 08b (text in, text out)."
from minipaged.model.tokenizer import Detokenizer


def text_pieces(tokenizer, ids: list[int]) -> list[str]:
    "The text each token of `ids` adds, one string per token ('' while a character is incomplete)"
    det, pieces = Detokenizer(tokenizer, []), []
    for i in range(len(ids)):
        before = len(det.text)
        det.update(ids[:i + 1])                  # catches up with the ids: one token more
        pieces.append(det.text[before:])
    return pieces


def stop_at_regex(llm, prompt, pattern: str, params):
    "The text generated for `prompt` up to the first match of `pattern` (all of it if none matches)"
    import re
    rx, rid, text = re.compile(pattern), llm.add_request(prompt, params), ''
    while llm.has_unfinished_requests():
        for out in llm.step():
            if out.request_id != rid: continue
            text = out.outputs[0].text                # streamed text: never half a character
            m = rx.search(text)
            if m:
                if not out.finished: llm.abort(rid)      # its blocks go back at once
                while llm.has_unfinished_requests(): llm.step()   # collect the aborted output
                return text[:m.start()]
    return text
