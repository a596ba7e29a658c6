# The two commands a fresh machine needs: `make demo` and `make test`.
# Everything is installed into .venv from this repository's own files.
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
export VIRTUAL_ENV := $(abspath $(VENV))

.PHONY: setup toolchain build demo test lint test-rust test-python bench clean

setup: toolchain $(VENV)/.deps

# rust-toolchain.toml pins Rust 1.95.0, this machine kind's one toolchain,
# which rustup may know only as `stable`: then it is linked under its
# version's name (nothing can be downloaded here). Another version is an
# error that says so.
toolchain:
	@rustup run 1.95.0 rustc --version >/dev/null 2>&1 || { \
	  v=$$(rustup run stable rustc --version); \
	  case "$$v" in "rustc 1.95.0 "*) ;; *) echo "rust-toolchain.toml pins 1.95.0; this machine has $$v" >&2; exit 1;; esac; \
	  rustup toolchain link 1.95.0 "$$(rustup run stable rustc --print sysroot)"; }

# Ray (the optional `ray` extra) too, so the local/Ray equality test runs.
$(VENV)/.deps: pyproject.toml
	@python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "pagelab needs Python 3.11 or later" >&2; exit 1; }
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

test: lint test-rust test-python

# The format (rustfmt.toml) and clippy's lints, as errors.
lint: toolchain
	cargo fmt --all --check
	cargo clippy --workspace --all-targets --quiet -- -D warnings

test-rust: toolchain
	cargo test -p pagelab-core --quiet

test-python: build
	$(PY) -m pytest -q

bench: build
	$(VENV)/bin/pagelab bench

clean:
	rm -rf $(VENV) target out
