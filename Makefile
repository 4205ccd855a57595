# Two commands do all the set-up: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed-$(shell sha1sum requirements.txt | cut -c1-12)

.PHONY: run test lint bench clean

$(STAMP): requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -r requirements.txt
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/python -m artoo_web.launcher run

test: $(STAMP)
	$(VENV)/bin/python -m artoo_web.launcher test $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

clean:
	rm -rf $(VENV) .artoo
