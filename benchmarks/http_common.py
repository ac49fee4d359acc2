"""What the HTTP benchmarks share: `minipaged serve` started in a subprocess of its own (as it runs in use, so the
client and the server do not share one interpreter), and its /metrics read back."""
from __future__ import annotations
import os, subprocess, sys, time
from pathlib import Path
import harness  # noqa: F401  (puts the repository first on the path)
import httpx
from minipaged.bench.http import read_metrics

CLI = str(Path(sys.executable).with_name('minipaged'))


class Server:
    "`minipaged serve pylm` in a subprocess on a free loopback port, until the `with` block ends"
    def __init__(self, *flags: str):
        self.argv = [CLI, 'serve', 'pylm', '--port', '0', '--log-level', 'warning', *flags]

    def __enter__(self) -> Server:
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if ' on http://' not in line: raise RuntimeError(f"the server did not start: {line!r}")
        self.url = line.split(' on ')[1].split(' ')[0]
        for _ in range(600):
            try:
                if httpx.get(self.url + '/health').status_code == 200: return self
            except httpx.TransportError: time.sleep(0.05)
        raise RuntimeError('the server never answered /health')

    def cpu_seconds(self) -> float:
        "The server process's CPU time so far (user + system, /proc/PID/stat)"
        fields = Path(f'/proc/{self.proc.pid}/stat').read_text().rsplit(')', 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')

    def metrics(self) -> dict:
        return read_metrics(httpx.get(self.url + '/metrics').text)

    def settled(self, timeout: float = 30.0) -> dict:
        "The metrics once nothing runs or waits and no block is referenced (or the last seen)"
        deadline = time.time() + timeout
        while True:
            m = self.metrics()
            busy = (m['minipaged_num_requests_running'] + m['minipaged_num_requests_waiting']
                    + m['minipaged_kv_blocks_used'])
            if not busy or time.time() > deadline: return m
            time.sleep(0.05)

    def __exit__(self, *exc) -> None:
        self.proc.terminate()
        try: self.proc.wait(30)
        except subprocess.TimeoutExpired: self.proc.kill()
