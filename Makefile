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
	$(PIP) install --quiet "maturin>=1.5,<2" numpy pandas matplotlib rich tomli-w duckdb pyarrow pytest pycachesim zstandard nbclient nbformat ipykernel
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

# libFuzzer on the readers of users' files (fuzz/; pagelab_core::fuzzing),
# FUZZ_SECONDS each, and the results store's mutation fuzzer
# (tests/fuzz_store.py). No nightly toolchain and no cargo-fuzz: the
# targets are built by the pinned stable toolchain with the
# sanitizer-coverage passes cargo-fuzz asks for (stable -C options), for
# this host's target (so build scripts stay uninstrumented), with debug
# assertions and overflow checks; libfuzzer-sys builds libFuzzer with the
# C++ compiler. Findings go to fuzz/artifacts/.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := trace snapshot config hints
FUZZ_HOST := $(shell rustc -vV 2>/dev/null | sed -n 's/^host: //p')
FUZZ_RUSTFLAGS := -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
  -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
  -Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks
fuzz: toolchain build
	cargo run --quiet --release -p pagelab-core --example fuzz_seeds -- fuzz/corpus
	RUSTFLAGS="$(FUZZ_RUSTFLAGS)" cargo build --quiet --release --manifest-path fuzz/Cargo.toml \
	  --target $(FUZZ_HOST) --target-dir fuzz/target
	mkdir -p fuzz/artifacts
	for t in $(FUZZ_TARGETS); do \
	  fuzz/target/$(FUZZ_HOST)/release/$$t fuzz/corpus/$$t -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 \
	    -timeout=10 -artifact_prefix=fuzz/artifacts/$$t- -print_final_stats=1 || exit 1; \
	done
	$(PY) tests/fuzz_store.py --seconds $(FUZZ_SECONDS) --artifacts fuzz/artifacts

clean:
	rm -rf $(VENV) target out .tools fuzz/target fuzz/corpus fuzz/artifacts
