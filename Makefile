# xqa: the two set-up commands are `make demo` and `make test` (see README.md).
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
XQA := $(VENV)/bin/xqa
EMBEDDED ?= build/embedded
HOST ?= 127.0.0.1
PORT ?= 7860
# torch first: a plain `torch` requirement pulls a multi-GB CUDA build on this
# machine kind; 2.13.0 installs the CPU wheel that lies on disk. A GPU machine
# installs its own CUDA torch before `make`, and this step then does nothing.
TORCH_SPEC ?= torch==2.13.0
# FAISS comes from one extra: cpu (faiss-cpu) here, gpu (faiss-gpu) on a CUDA machine
# (`make test EXTRAS=gpu,test,bench,documents`); the two must not be installed together. bench: bm25s and
# PyStemmer, the peer `xqa bench sparse` compares Lucene with (the test suite imports it). documents:
# the readers of `xqa build --documents` (PDF, HTML, Markdown, Word; Japanese words for the MIA split).
EXTRAS ?= cpu,test,bench,documents

export HF_HUB_OFFLINE ?= 1
export HF_DATASETS_OFFLINE ?= 1
export GRADIO_ANALYTICS_ENABLED := False
export TOKENIZERS_PARALLELISM := false
export OMP_WAIT_POLICY ?= PASSIVE

.PHONY: demo test test-fast env embedded browser clean help

help:
	@echo "make demo   build the embedded default (if needed) and serve the demo on http://$(HOST):$(PORT)"
	@echo "make test   install what the tests need and run the whole test suite"
	@echo "make test-fast   the tests not marked slow or browser (for developing; CI runs make test)"

$(VENV)/.installed: pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	@$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q "$(TORCH_SPEC)"
	$(PY) -m pip install -q -e ".[$(EXTRAS)]"
	@touch $@

env: $(VENV)/.installed

embedded: env
	$(XQA) embedded build --out $(EMBEDDED)

demo: embedded
	$(XQA) demo --config $(EMBEDDED)/pipeline.json --host $(HOST) --port $(PORT)

# The browser test drives Debian's Chromium; install it when missing and we may.
browser:
	@if ! command -v chromium >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Debian chromium for the browser test"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "chromium not found and cannot be installed here: the browser test will report it"; fi; \
	fi

test: env browser
	$(PY) -m pytest -q

# While developing: skip the tests that train, index or drive a browser (marked slow / browser).
test-fast: env
	$(PY) -m pytest -q -m "not slow and not browser"

clean:
	rm -rf $(EMBEDDED)
