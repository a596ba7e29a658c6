# The two commands a fresh machine needs: `make demo` and `make test`.
# Everything is installed into .venv from this repository's own files.
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
export VIRTUAL_ENV := $(abspath $(VENV))

.PHONY: setup toolchain system-packages build demo test test-full lint test-rust test-python bench fuzz clean

setup: toolchain system-packages $(VENV)/.deps

# What the system must have beyond Rust and Python (README): gcc and
# Valgrind for trace capture and its tests, Chromium for the report's
# browser test. Installed from Debian's packages where this runs as root;
# elsewhere, the missing ones are named (their tests skip, and CI, which
# allows no such skip, fails).
SYSTEM_TOOLS := gcc valgrind chromium
system-packages:
	@missing=$$(for t in $(SYSTEM_TOOLS); do command -v $$t >/dev/null || echo $$t; done); \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing $$missing (Debian packages)"; \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing >/dev/null \
	      || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing >/dev/null; }; \
	  else \
	    echo "missing system tools: $$missing (apt-get install $$missing); the tests that need them will skip" >&2; \
	  fi; \
	fi

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
	$(PIP) install --quiet "maturin>=1.5,<2" numpy pandas matplotlib rich tomli-w duckdb pyarrow pytest pycachesim zstandard
	$(PIP) install --quiet "ray>=2.9"
	touch $@

# Builds the Rust extension (release) into the venv, with the Python package
# installed in editable mode.
build: setup
	$(VENV)/bin/maturin develop --release --quiet

demo: build
	$(VENV)/bin/pagelab demo --out out/demo

test: lint test-rust test-python

# The format (rustfmt.toml) and clippy's lints, as errors; the core's
# documentation, private items included, with a broken intra-doc link an
# error (a link to a private item is one such documentation may hold).
lint: toolchain
	cargo fmt --all --check
	cargo clippy --workspace --all-targets --quiet -- -D warnings
	RUSTDOCFLAGS="-D rustdoc::broken_intra_doc_links -A rustdoc::private_intra_doc_links" \
	  cargo doc -p pagelab-core --no-deps --document-private-items --quiet

test-rust: toolchain
	cargo test -p pagelab-core --quiet

# -rs lists every skipped test with its reason.
test-python: build
	$(PY) -m pytest -q -rs

# Everything, the `slow` full-scale tests too (hours: see the README).
test-full: lint test-rust build
	$(PY) -m pytest -q -rs -m ""

bench: build
	$(VENV)/bin/pagelab bench

# cargo-fuzz on the readers of users' files (fuzz/; pagelab_core::fuzzing):
# FUZZ_SECONDS each. It needs the nightly toolchain (libFuzzer's
# instrumentation); cargo-fuzz is installed into .tools/ on first use.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := trace snapshot config
fuzz:
	@rustup run nightly rustc --version >/dev/null 2>&1 || { echo "make fuzz needs the nightly toolchain (rustup toolchain list)" >&2; exit 1; }
	@test -x .tools/bin/cargo-fuzz || cargo install --quiet --locked --root .tools cargo-fuzz
	cargo run --quiet --release -p pagelab-core --example fuzz_seeds -- fuzz/corpus
	for t in $(FUZZ_TARGETS); do \
	  PATH="$(CURDIR)/.tools/bin:$$PATH" cargo +nightly fuzz run --fuzz-dir fuzz $$t fuzz/corpus/$$t -- \
	    -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -timeout=10 || exit 1; \
	done

clean:
	rm -rf $(VENV) target out .tools fuzz/target fuzz/corpus fuzz/artifacts
