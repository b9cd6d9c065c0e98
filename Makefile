# Both entry points bootstrap the project's own virtualenv (.venv) on first use.
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed

.PHONY: serve test bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[test,bench,report]'
	touch $(STAMP)

serve: $(STAMP)
	$(VENV)/bin/groupbroker serve

test: $(STAMP)
	$(VENV)/bin/python -m pytest

bench: $(STAMP)
	$(VENV)/bin/python bench/codec.py
	$(VENV)/bin/python bench/coordinator.py
	$(VENV)/bin/python bench/offsets_log.py
	$(VENV)/bin/python bench/e2e.py
	$(VENV)/bin/python bench/journal.py
	$(VENV)/bin/python bench/report.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
