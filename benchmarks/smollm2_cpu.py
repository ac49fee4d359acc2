"""SmolLM2-135M-Instruct (chapter 07c's fetched model) on this CPU: the engine against `transformers`, in one run.

Workload: the 32 chat prompts below, each through the model's chat template, answered greedily with --new tokens
(64; ignore_eos, so every system writes exactly as many); and one request alone, the first prompt, with --alone
tokens (128). Systems, all float32 on the same weights (our checkpoint; transformers reads the same GGUF file):
  - minipaged `LLM.generate` with default settings (continuous batching over the paged cache, the CPU's 256 MiB
    KV pool),
  - transformers `generate`, one request at a time,
  - transformers `generate`, all 32 in one left-padded batch.
The batched systems run --rounds times, alternating (a shared VM drifts); the table gives each one's median and
range of output tokens per second. It checks the greedy tokens are identical (transformers' one-at-a-time run is
the reference; a prompt whose padded-batch tokens differ is reported, not hidden), records the engine's memory
(the process's resident set before loading, after loading, and its high-water mark while serving, measured before
transformers is imported; the weights and the KV pool by the engine's own budget), and what serving the model in
bfloat16 changes: the tokens until the first that differs from float32, per prompt.

    python benchmarks/smollm2_cpu.py --json benchmarks/results/smollm2_cpu.json
"""
import argparse, resource, statistics, time, warnings
import harness                                  # first: it puts this checkout's minipaged on the path
import torch

NAME, GGUF = 'smollm2-135m-instruct', 'SmolLM2-135M-Instruct.Q4_1.gguf'
QUESTIONS = [
    'What is the capital of France?', 'Name three primary colors.', 'Why is the sky blue?',
    'Give me three tips for writing clean Python code.', 'What is a KV cache in LLM serving?',
    'Explain recursion to a child.', 'Write a haiku about memory.', 'What does a CPU cache do?',
    'How many legs does a spider have?', 'Translate "good morning" into Spanish.', 'What is 12 times 12?',
    'Suggest a name for a pet turtle.', 'What is photosynthesis?', 'Write a Python function that reverses a string.',
    'Who wrote Romeo and Juliet?', 'What is the boiling point of water at sea level?', 'Describe a rainbow.',
    'What is the difference between a list and a tuple in Python?', 'Give me a recipe for pancakes.',
    'What is the largest planet in the solar system?', 'Why do we need sleep?', 'What is an operating system?',
    'List the days of the week.', 'What is machine learning?', 'How do airplanes fly?',
    'What is the speed of light?', 'Write a short poem about the sea.', 'What is a prime number?',
    'Explain what HTTP is.', 'What are the three states of matter?', 'How do I make a cup of tea?',
    'What is the Pythagorean theorem?']


def rss_mib() -> float:
    "This process's resident set now, MiB (Linux /proc)"
    with open('/proc/self/statm') as f: return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def peak_mib() -> float:
    "This process's resident-set high-water mark so far, MiB"
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def tok_per_s(outputs: list[list[int]], seconds: float) -> float:
    return sum(map(len, outputs)) / seconds


def run_engine(llm, prompts, new: int):
    from minipaged.engine.sampler import SamplingParams
    t = time.perf_counter()
    outs = llm.generate(prompts, SamplingParams(max_tokens=new, temperature=0.0, ignore_eos=True), use_tqdm=False)
    dt = time.perf_counter() - t
    return [o.outputs[0].token_ids for o in outs], dt


def hf_generate(model, prompts, new: int):
    "transformers' greedy tokens of `prompts` as one left-padded batch (one prompt: no padding), and the time"
    L, pad = max(map(len, prompts)), 2
    ids = torch.tensor([[pad] * (L - len(p)) + p for p in prompts])
    mask = torch.tensor([[0] * (L - len(p)) + [1] * len(p) for p in prompts])
    t = time.perf_counter()
    with torch.no_grad():
        out = model.generate(ids, attention_mask=mask, max_new_tokens=new, do_sample=False, eos_token_id=None,
                             pad_token_id=pad)
    return [o[L:].tolist() for o in out], time.perf_counter() - t


def first_difference(a: list[int], b: list[int]) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def engine_phase(a):
    "Everything the engine does, before transformers is imported: throughput, memory, bfloat16's agreement"
    from minipaged.llm import LLM
    rss0 = rss_mib()
    llm = LLM(NAME)
    loaded = rss_mib()
    prompts = [llm.chat_prompt([{'role': 'user', 'content': q}])['prompt_token_ids'] for q in QUESTIONS]
    run_engine(llm, prompts[:1], 4)                                  # warm-up
    alone, alone_s = run_engine(llm, prompts[:1], a.alone)
    rounds = [run_engine(llm, prompts, a.new) for _ in range(a.rounds)]
    s = llm.rank_shape
    memory = dict(rss_before_load_mib=rss0, rss_after_load_mib=loaded, rss_high_water_mib=peak_mib(),
                  weights_bytes=llm.budget.fixed['weights'],
                  kv_pool_bytes=llm.engine_config.num_blocks * llm.engine_config.block_size * s.kv_bytes_per_token,
                  kv_blocks=llm.engine_config.num_blocks, block_size=llm.engine_config.block_size)
    bf16 = LLM(NAME, dtype='bfloat16')
    b_outs, _ = run_engine(bf16, prompts, a.new)
    same = [first_difference(x, y) for x, y in zip(rounds[0][0], b_outs)]
    return llm, prompts, alone, alone_s, rounds, memory, same


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--new', type=int, default=64, help='new tokens per request of the 32 (default 64)')
    ap.add_argument('--alone', type=int, default=128, help='new tokens of the request alone (default 128)')
    ap.add_argument('--rounds', type=int, default=3, help='rounds of the batched systems (default 3)')
    ap.add_argument('--json', help='write the results here')
    a = ap.parse_args(argv)
    warnings.filterwarnings('ignore')
    print(harness.header_line())
    llm, prompts, alone, alone_s, rounds, memory, same = engine_phase(a)
    from transformers import AutoModelForCausalLM
    from minipaged.model.fetch import fetched_path
    hf = AutoModelForCausalLM.from_pretrained(fetched_path(NAME), gguf_file=GGUF, dtype=torch.float32).eval()
    hf_alone, hf_alone_s = hf_generate(hf, prompts[:1], a.alone)
    t = time.perf_counter()
    one_at_a_time = [hf_generate(hf, [p], a.new)[0][0] for p in prompts]
    seq_s = time.perf_counter() - t
    padded, ours = [], []
    for r in range(a.rounds):                                        # alternating: the engine, then the batch
        if r: rounds[r] = run_engine(llm, prompts, a.new)
        ours.append(tok_per_s(*rounds[r]))
        padded.append(hf_generate(hf, prompts, a.new))
    pad_rates = [tok_per_s(o, s) for o, s in padded]
    identical = sum(x == y for x, y in zip(rounds[0][0], one_at_a_time))
    padded_identical = sum(x == y for x, y in zip(padded[0][0], one_at_a_time))
    rows = [dict(system='minipaged LLM.generate, 32 at once', tok_per_s=statistics.median(ours)),
            dict(system='transformers generate, one at a time', tok_per_s=tok_per_s(one_at_a_time, seq_s)),
            dict(system='transformers generate, one padded batch of 32', tok_per_s=statistics.median(pad_rates)),
            dict(system='minipaged, one request alone', tok_per_s=tok_per_s(alone, alone_s)),
            dict(system='transformers, one request alone', tok_per_s=tok_per_s(hf_alone, hf_alone_s))]
    for r in rows: print(f"{r['system']:<48} {r['tok_per_s']:8.1f} tok/s")
    print(f"greedy tokens identical to transformers one at a time: {identical}/{len(prompts)} (padded batch: "
          f"{padded_identical}/{len(prompts)}); alone: {alone[0] == hf_alone[0]}")
    print(f"memory: RSS {memory['rss_before_load_mib']:.0f} MiB before loading, {memory['rss_after_load_mib']:.0f} "
          f"after, high-water {memory['rss_high_water_mib']:.0f} while serving; weights "
          f"{memory['weights_bytes'] / 2**20:.0f} MiB, KV pool {memory['kv_pool_bytes'] / 2**20:.0f} MiB")
    print(f"bfloat16: {sum(s == a.new for s in same)}/{len(same)} continuations identical to float32 for "
          f"{a.new} tokens; first difference at token {statistics.median(same):.0f} (median), min {min(same)}")
    result = dict(requests=len(prompts), new_tokens=a.new, alone_tokens=a.alone, rounds=a.rounds, rows=rows,
                  minipaged_tok_per_s=ours, padded_tok_per_s=pad_rates, sequential_s=seq_s,
                  identical=identical, padded_identical=padded_identical, alone_identical=alone[0] == hf_alone[0],
                  memory=memory, bfloat16_first_difference=same, threads=torch.get_num_threads())
    if a.json: harness.write_json(a.json, result)


if __name__ == '__main__': main()
