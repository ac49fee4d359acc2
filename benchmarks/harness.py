"""What every benchmark script shares: the machine it ran on, repeated timings, a printed table, its JSON.

A script in this folder imports it as `import harness` (Python puts the script's folder first on the path),
prints `header_line()` above its table and ends with `write_json(path, results)`. The JSON holds three
things: `command` (the exact command line, to rerun it), `header` (the machine, the versions, the commit,
the date) and the script's own results at the top level, so that `tools/render_benchmarks.py` can build
BENCHMARKS.md from `benchmarks/results/*.json` alone.
"""
from __future__ import annotations
import datetime, importlib.metadata, json, os, platform, shlex, statistics, subprocess, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent         # the repository: where git and the command line start
if str(ROOT) not in sys.path[:1]: sys.path.insert(0, str(ROOT))    # a script measures the minipaged beside it


def cpu_model() -> str:
    "The CPU's model name as /proc/cpuinfo gives it, else what `platform` knows"
    try:
        for line in Path('/proc/cpuinfo').read_text().splitlines():
            if line.startswith('model name'): return line.split(':', 1)[1].strip()
    except OSError: pass
    return platform.processor() or platform.machine()


def package_version(name: str) -> str | None:
    "The installed version of `name`, None if it is not installed (read from metadata: nothing imported)"
    try: return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError: return None


def git_commit() -> str | None:
    "The short commit of the checkout, with '+dirty' when tracked files differ from it; None outside git"
    def git(*args):
        run = subprocess.run(['git', '-C', str(ROOT), *args], capture_output=True, text=True, timeout=30)
        return run.stdout.strip()
    try: commit, dirty = git('rev-parse', '--short', 'HEAD'), git('status', '--porcelain', '-uno')
    except (OSError, subprocess.SubprocessError): return None
    return (commit + ('+dirty' if dirty else '')) if commit else None


def machine_header() -> dict:
    "The machine and software a figure was measured on: CPU, cores, versions, threads, GPU, commit, date"
    import torch
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    threads = torch.get_num_threads()
    return dict(cpu=cpu_model(), cores=os.cpu_count(), python=platform.python_version(),
                torch=torch.__version__, triton=package_version('triton'), torch_threads=threads,
                gpu=gpu, platform=platform.platform(), commit=git_commit(),
                date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds'))


def header_line(header: dict | None = None) -> str:
    "The header as one line to print above a table"
    h = header or machine_header()
    versions = ', '.join(f"{k} {h[k]}" for k in ('python', 'torch', 'triton') if h.get(k))
    gpu = f", GPU {h['gpu']}" if h.get('gpu') else ''
    return (f"machine: {h['cpu']}, {h['cores']} cores{gpu}; {versions}; {h['torch_threads']} torch threads; "
            f"commit {h.get('commit') or 'unknown'}; {h['date']}")


def command_line(argv: list[str] | None = None) -> str:
    "The command that ran this script, from the repository root: `python benchmarks/x.py ARGS`"
    script = Path(sys.argv[0]).resolve()
    try: script = script.relative_to(ROOT)
    except ValueError: pass
    return shlex.join(['python', str(script), *(sys.argv[1:] if argv is None else argv)])


def write_json(path, results: dict, argv: list[str] | None = None) -> dict:
    "Write `results` to `path` beside the command line and the machine header; return the record"
    record = dict(command=command_line(argv), header=machine_header(), **results)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(record, indent=1) + '\n')
    return record


def repeat(fn, times: int) -> list:
    "The results of calling `fn()` `times` times, in order"
    return [fn() for _ in range(times)]


def interleaved_seconds(fns, warmup: int, reps: int) -> list[list[float]]:
    "Wall times of each of `fns` over `reps` rounds after `warmup`; the calls alternate: one machine for all"
    for _ in range(warmup):
        for fn in fns: fn()
    times = [[] for _ in fns]
    for _ in range(reps):
        for fn, ts in zip(fns, times):
            t = time.perf_counter(); fn(); ts.append(time.perf_counter() - t)
    return times


def spread(values) -> dict:
    "The median, the range and the count of repeated measurements"
    values = list(values)
    return dict(median=statistics.median(values), min=min(values), max=max(values), n=len(values))


def print_table(rows: list[dict], title: str | None = None) -> None:
    "Print `rows` as a plain-text table (`minipaged.utils.format_rows`), under `title` if given"
    from minipaged.utils import format_rows
    if title: print(title)
    print(format_rows(rows))
