# The two commands a fresh machine needs: `make demo` and `make test`.
# Everything is installed into .venv from this repository's own files.
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
export VIRTUAL_ENV := $(abspath $(VENV))

.PHONY: setup build demo test test-rust test-python bench clean

setup: $(VENV)/.deps

# Ray (the optional `ray` extra) too, so the local/Ray equality test runs.
$(VENV)/.deps: pyproject.toml
	python3 -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet "maturin>=1.5,<2" numpy pandas matplotlib rich tomli-w duckdb pyarrow pytest pycachesim
	$(PIP) install --quiet "ray>=2.9"
	touch $@

# Builds the Rust extension (release) into the venv, with the Python package
# installed in editable mode.
build: setup
	$(VENV)/bin/maturin develop --release --quiet

demo: build
	$(VENV)/bin/pagelab demo --out out/demo

test: test-rust test-python

test-rust:
	cargo test -p pagelab-core --quiet

test-python: build
	$(PY) -m pytest -q

bench: build
	$(VENV)/bin/pagelab bench

clean:
	rm -rf $(VENV) target out
