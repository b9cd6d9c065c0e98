# Both entry points bootstrap the project's own virtualenv (.venv) on first use.
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed

.PHONY: serve test report bench fuzz fuzz-oracle clean

# Each target installs only what it needs: serving needs the broker alone (a small virtualenv);
# the tests, benchmarks and the Spark report pull their extras on first use.
$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip

$(VENV)/.serve: pyproject.toml $(VENV)/bin/python
	$(VENV)/bin/pip install --quiet -e .
	touch $@

$(STAMP): pyproject.toml $(VENV)/bin/python
	$(VENV)/bin/pip install --quiet -e '.[test,bench,report]'
	touch $(STAMP) $(VENV)/.serve $(VENV)/.report

$(VENV)/.report: pyproject.toml $(VENV)/bin/python
	$(VENV)/bin/pip install --quiet -e '.[report]'
	touch $@ $(VENV)/.serve

serve: $(VENV)/.serve
	$(VENV)/bin/groupbroker serve

# The analytics report of a data dir (DATA_DIR, default ./groupbroker-data) into OUT.
report: $(VENV)/.report
	$(VENV)/bin/groupbroker report --data-dir $${DATA_DIR:-groupbroker-data} --out $${OUT:-groupbroker-report}

# The layering contracts (pyproject.toml, [tool.importlinter]) first, then every test.
test: $(STAMP)
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/python -m pytest

# The fuzz test of `make test`, for ten minutes (GROUPBROKER_FUZZ_SEED=N replays a run).
fuzz: $(STAMP)
	GROUPBROKER_FUZZ_SECONDS=$${GROUPBROKER_FUZZ_SECONDS:-600} $(VENV)/bin/python -m pytest tests/integration/test_fuzz.py -s --timeout=0

# Random group sequences against Apache Kafka itself (tests/oracle/test_group_sequences.py): 5000
# instead of CI's 200 (GROUPBROKER_ORACLE_SEED=N replays one sequence).
fuzz-oracle: $(STAMP)
	GROUPBROKER_ORACLE_SEQUENCES=$${GROUPBROKER_ORACLE_SEQUENCES:-5000} $(VENV)/bin/python -m pytest tests/oracle/test_group_sequences.py --timeout=0

# groupbroker beside Kafka, kfake and librdkafka's mock, in one run: docs/performance.md
bench: $(STAMP)
	$(VENV)/bin/python bench/performance.py

clean:
	rm -rf $(VENV) .venv-kp2 .venv-quix build *.egg-info .pytest_cache .hypothesis
