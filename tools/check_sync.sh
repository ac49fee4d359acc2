#!/usr/bin/env bash
# Regenerate everything derived (`make sync`) and fail if that changed the tree: the library, the cleaned
# notebooks and README.md must be committed in sync with nbs/, and BENCHMARKS.md with benchmarks/results/.
set -euo pipefail
make_cmd=${1:-make}
snapshot() { git status --porcelain --untracked-files=all -- minipaged nbs README.md BENCHMARKS.md; git diff -- minipaged nbs README.md BENCHMARKS.md | sha256sum; }
before=$(snapshot)
$make_cmd --no-print-directory sync >/dev/null
after=$(snapshot)
if [ "$before" != "$after" ]; then
  echo "error: nbdev-export / nbdev-clean / tools/render_readme.py / tools/render_benchmarks.py changed these files; commit them:" >&2
  git status --short -- minipaged nbs README.md BENCHMARKS.md >&2
  exit 1
fi
echo "sync check: library, notebooks, README.md and BENCHMARKS.md agree"
