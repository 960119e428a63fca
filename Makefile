VENV ?= .venv
PY := $(VENV)/bin/python
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: install demo test lint bench clean

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[all]'
	touch $@

install: $(VENV)/.installed

demo: install
	$(PY) examples/generate_demo.py --out examples/demo_traces.jsonl --check
	$(VENV)/bin/agentgauge evaluate examples/demo_traces.jsonl --suite behavior \
		--db agentgauge.db --json demo-results.json --html demo-report.html

test: install
	$(PY) -m pytest -q

lint: install
	$(VENV)/bin/ruff check src tests bench examples
	$(VENV)/bin/ruff format --check src tests bench examples
	$(VENV)/bin/mypy src

bench: install
	for f in bench/bench_*.py; do echo "== $$f"; $(PY) $$f || exit 1; done

clean:
	rm -rf $(VENV) build dist *.egg-info agentgauge.db* demo-results.json demo-report.html
