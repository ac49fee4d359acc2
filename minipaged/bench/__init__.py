"""How serving is measured: declared workloads, latency and memory metrics, the runner, ablations and plots."""
