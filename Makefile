# Two commands do all the set-up: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed-$(shell sha1sum requirements.txt | cut -c1-12)
CHROMIUM ?= /usr/bin/chromium

.PHONY: run test test-reliability test-model browser-deps lint bench model clean init

$(STAMP): requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -r requirements.txt
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

# The sandbox's first process, compiled (roles/tools/sandbox_init.c): a Python
# interpreter there cost ~30 ms per command. Rebuilt when the source changes.
SANDBOX_CC ?= gcc
INIT := $(VENV)/libexec/artoo-sandbox-init
$(INIT): roles/tools/sandbox_init.c
	mkdir -p $(VENV)/libexec
	$(SANDBOX_CC) -std=c99 -O2 -Wall -Wextra -o $@.tmp $<
	mv $@.tmp $@

init: $(INIT)

# Browser tests drive Debian's Chromium through Playwright (never a downloaded build).
browser-deps:
	@if [ ! -x $(CHROMIUM) ]; then \
	  if [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null; then \
	    echo "installing Debian's chromium for the browser tests"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else \
	    echo "chromium is missing and cannot be installed here (needs root and apt-get)"; \
	  fi; \
	fi

run: $(STAMP) $(INIT)
	$(VENV)/bin/python -m devtools.launcher run

# The fast suite: unit, integration, websocket and browser tests.
test: $(STAMP) $(INIT) browser-deps
	$(VENV)/bin/python -m devtools.launcher test $(PYTEST_ARGS)

# The real-model tier: the local model (make model) and a private cluster run
# prepared tasks with independent verifiers and print a table. Never in make test.
test-model: $(STAMP) $(INIT)
	$(VENV)/bin/python -m devtools.launcher test -m model -p no:cacheprovider -s tests/model $(PYTEST_ARGS)

# Everything, including the reliability suite (real processes, faults, load).
test-reliability: $(STAMP) $(INIT) browser-deps
	$(VENV)/bin/python -m devtools.launcher test -m "not model" $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# Every figure of bench/ beside its target, with the machine's load;
# `make bench QUICK=1` is a pass of about two minutes.
bench: $(STAMP) $(INIT)
	$(VENV)/bin/python bench/report.py $(if $(QUICK),--quick)

# The local LLM (GGUF weights and llama-server), cached outside the checkout.
model:
	$(PYTHON) devtools/model.py

clean:
	rm -rf $(VENV) .artoo
