# `make test` and `make demo` are the two set-up commands: both create .venv if missing.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: test test-fast demo bench mutate compat clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(STAMP): $(PY) setup.cfg pyproject.toml
	$(PY) -m pip install -q -e ".[test]"
	touch $(STAMP)

# The older Spark lines the compatibility tier runs on (the newest, 4.3, runs
# everything in .venv); docs/testing.md, "Other Spark lines".
OLDER_LINES ?= 3.5 4.0 4.1 4.2

# The compatibility tier on each older line (each in its own venv under
# .compat/, built once; pip's cache makes a rebuild fast) runs one line after
# another *beside* the whole suite on 4.3: either alone keeps about one of
# the machine's two cores busy (docs/testing.md, "The CI run"). The tiers'
# output is kept in .compat/tiers.log and printed when both are done. Then
# the Spark Connect tests in a pytest process of their own (tests/conftest.py
# says why). Every part runs even when one fails; make fails if any did.
TIERS_LOG := .compat/tiers.log

test: $(STAMP)
	@status=0; mkdir -p .compat; rm -f $(TIERS_LOG).failed; \
	( for line in $(OLDER_LINES); do \
		echo "== compatibility tier: PySpark $$line"; \
		bash tests/compat/run.sh $$line || echo "$$line" >> $(TIERS_LOG).failed; \
	  done ) > $(TIERS_LOG) 2>&1 & tiers=$$!; \
	$(PY) -m pytest || status=1; \
	wait $$tiers; cat $(TIERS_LOG); \
	if [ -s $(TIERS_LOG).failed ]; then echo "== tiers failed: $$(cat $(TIERS_LOG).failed)"; status=1; fi; \
	SPARKWAX_CONNECT_TESTS=1 $(PY) -m pytest tests/connect || status=1; \
	exit $$status

test-fast: $(STAMP)
	$(PY) -m pytest -m "not spark and not slow"

demo: $(STAMP)
	$(VENV)/bin/sparkwax demo

bench: $(STAMP)
	$(PY) benchmarks/offline.py

# Mutation testing of the driver: mutmut (the `mutate` extra, a dev tool only)
# over sparkwax/_driver/ with the driver's fast unit tests (the [mutmut]
# section of setup.cfg); the score and the survivors: docs/testing.md,
# "Mutation testing of the driver". JOBS: parallel mutants (default 2).
mutate: $(STAMP)
	$(PY) -m pip install -q -e ".[mutate]"
	$(VENV)/bin/mutmut run --max-children $(or $(JOBS),2)
	$(VENV)/bin/mutmut results

# The compatibility tier under one PySpark line (LINE=3.5, 4.0, 4.1, 4.2 or 4.3),
# in a venv of its own under .compat/LINE (docs/testing.md, "Other Spark lines").
# ARGS: extra pytest arguments.
compat:
	@test -n "$(LINE)" || { echo "usage: make compat LINE=3.5 [ARGS='-k packed']"; exit 2; }
	bash tests/compat/run.sh $(LINE) $(ARGS)

clean:
	rm -rf $(VENV) .compat build *.egg-info .pytest_cache .hypothesis mutants
