# Two entry points for a fresh machine: `make index` (install + build the index on the bundled
# corpus) and `make test` (`make test-fast`: the tests not marked slow). Everything lands in
# .venv; nothing reaches for a model hub.
VENV := .venv
PY := $(VENV)/bin/python
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
# A DAGSTER_HOME the user set is kept (`DAGSTER_HOME=~/dh make dev`); the project's otherwise.
export DAGSTER_HOME ?= $(CURDIR)/dagster_home

.PHONY: install system-packages index test test-fast dev docs lint

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	# torch first and pinned: the CPU build lies on this machine's disk; unpinned, pip would
	# pull a multi-GB CUDA build.
	$(VENV)/bin/pip install --quiet torch==2.13.0
	$(VENV)/bin/pip install --quiet -e '.[dev,ray]'
	# The declared models' runtime files (ONNX, OpenVINO int8) into the model cache, once per
	# machine: a first `index` then spends its time encoding.
	$(VENV)/bin/rag-pipeline models --prepare
	touch $@

install: $(VENV)/.installed

index: install
	$(VENV)/bin/rag-pipeline index

# Machine packages some tests drive (Debian Chromium for the page test); as root only,
# idempotent; without them those tests skip with their reason.
system-packages:
	bash .ci/setup

# Everything, the real model included (what CI runs).
test: install system-packages
	$(VENV)/bin/pytest; status=$$?; echo $$status > .pytest-exit; exit $$status

# The fast tier: every test not marked slow (no torch, no model load, no Dagster subprocess).
test-fast: install
	$(VENV)/bin/pytest -m "not slow"

# The UI's port: `make dev DEV_PORT=3001` when 3000 is taken.
DEV_PORT ?= 3000

dev: install
	$(VENV)/bin/python -m rag_pipeline.dagster_dev -w workspace.yaml -p $(DEV_PORT)

# The documentation site (mkdocs-material) into site/; `make test` builds it --strict too
# (rag_pipeline_tests/test_docs.py).
docs: install
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

lint: install
	$(VENV)/bin/ruff check rag_pipeline rag_pipeline_tests
