VENV ?= .venv
PY := $(VENV)/bin/python
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: install demo test fuzz lint bench dist clean

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[all]'
	touch $@

install: $(VENV)/.installed

# BFCL's own package: its simulated APIs for multi-turn checking, its checkers side by side in the
# tests and benches; --no-deps keeps its provider SDKs out.
BENCH_DEPS := .bench-deps
$(BENCH_DEPS)/.installed: $(VENV)/.installed
	$(PY) -m pip install -q --no-deps --target $(BENCH_DEPS) bfcl-eval==2026.3.23
	touch $@

demo: install
	$(PY) examples/generate_demo.py --out examples/demo_traces.jsonl --check
	$(VENV)/bin/agentgauge evaluate examples/demo_traces.jsonl --suite behavior \
		--db agentgauge.db --json demo-results.json --html demo-report.html --overwrite
	$(VENV)/bin/agentgauge simulate --domain orders --trials 4 \
		--agent agentgauge.simulate.domains.orders_agent:DeskAgent \
		--db agentgauge.db --json demo-simulation.json --overwrite

test: install $(BENCH_DEPS)/.installed
	$(PY) -m pytest -q

# Longer fuzzing of every reader: FUZZ_EXAMPLES generated inputs each (make test runs a few),
# and as many hostile values through every reader, the store and the reports.
FUZZ_EXAMPLES ?= 2000
fuzz: install $(BENCH_DEPS)/.installed
	AGENTGAUGE_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(PY) -m pytest -q tests/test_fuzz.py \
		tests/test_property_integrity.py

lint: install
	$(VENV)/bin/ruff check src tests bench examples
	$(VENV)/bin/ruff format --check src tests bench examples
	$(VENV)/bin/mypy src

# the peers a bench runs beside agentgauge get virtual environments of their own, made there once
bench: install $(BENCH_DEPS)/.installed
	for f in bench/bench_*.py; do echo "== $$f"; AGENTGAUGE_BENCH_PEERS=$(CURDIR)/$(BENCH_DEPS) \
		PYTHONPATH=src:$(BENCH_DEPS) $(PY) $$f || exit 1; done

# The wheel and the sdist under dist/, built offline from this venv's setuptools (no isolated
# build environment to download) and checked as PyPI would render them.
dist: install
	rm -rf dist
	$(PY) -m build --no-isolation --outdir dist .
	$(VENV)/bin/twine check --strict dist/*

clean:
	rm -rf $(VENV) $(BENCH_DEPS) build dist *.egg-info agentgauge.db* demo-results.json demo-report.html demo-simulation.json
