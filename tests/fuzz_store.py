"""A mutation fuzzer of the results store's reader (`pagelab.store.Store`,
DuckDB underneath), which libFuzzer cannot reach: valid stores written by
pagelab itself, damaged (bytes overwritten, blocks zeroed or filled at
random, blocks repeated, the file cut short or grown), then opened read-only
and read-write and read whole, each in a forked child with a time limit.

What may happen: the store reads, or pagelab refuses it as bad input
(`TraceError`, `OSError`: exit status 2 on the command line). Anything else
is a finding, saved under `fuzz/artifacts/`: another exception (an internal
error on the command line), a signal (DuckDB crashing), or a hang (an input
still running after TIMEOUT seconds and again after 6 x TIMEOUT).

`make fuzz` runs it for FUZZ_SECONDS (`python tests/fuzz_store.py
--seconds N`); tests/test_bad_values.py runs a few dozen cases."""

from __future__ import annotations

import argparse
import os
import random
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

BLOCK = 4096
#: Seconds one input may take.
TIMEOUT = 10


def write_seeds(directory: Path) -> list[Path]:
    """Two valid stores (one empty, one with three runs), written in a child
    so that this process never starts DuckDB's threads before forking."""
    paths = [directory / "empty.duckdb", directory / "runs.duckdb"]

    def make() -> None:
        from pagelab import _pagelab
        from pagelab.store import Store

        with Store(paths[0]):
            pass
        toml = _pagelab.resolve_config('[workload]\nkind = "gups"\n', "<seed>", [])
        with Store(paths[1]) as store:
            for seed in (1, 2, 3):
                store.insert(config_toml=toml.replace("seed = 1", f"seed = {seed}", 1), stats={"cycles": seed},
                             seconds=0.5, params={"seed": seed, "workload": "gups"})

    status, _ = _in_child(make, 60)
    if status != 0:
        raise SystemExit(f"fuzz_store: could not write the seeds (status {status})")
    return paths


def mutate(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(6)
        at = rng.randrange(max(1, len(b)))
        if op == 0 and b:
            for _ in range(rng.randint(1, 16)):
                b[rng.randrange(len(b))] = rng.randrange(256)
        elif op == 1:
            start = at - at % BLOCK
            b[start:start + BLOCK] = bytes(min(BLOCK, max(0, len(b) - start)))
        elif op == 2:
            start = at - at % BLOCK
            n = min(BLOCK, max(0, len(b) - start))
            b[start:start + n] = rng.randbytes(n)
        elif op == 3 and len(b) >= 2 * BLOCK:
            src = rng.randrange(len(b) // BLOCK) * BLOCK
            dst = rng.randrange(len(b) // BLOCK) * BLOCK
            b[dst:dst + BLOCK] = b[src:src + BLOCK]
        elif op == 4:
            del b[at:]
        else:
            b[at:at] = rng.randbytes(rng.randint(1, 64))
    return bytes(b)


def read_store(path: Path) -> None:
    """What pagelab does with a store: open it read-only and read it all,
    then open it to write (a resumed sweep) and insert a run."""
    from pagelab import _pagelab
    from pagelab.store import Store

    try:
        with Store(path, read_only=True) as store:
            len(store)
            store.hashes()
            store.frame()
        toml = _pagelab.resolve_config('[workload]\nkind = "gups"\n', "<fuzz>", [])
        with Store(path) as store:
            store.insert(config_toml=toml, stats={"cycles": 1}, seconds=0.1)
            store.frame()
    except (_pagelab.TraceError, OSError):
        pass  # refused as bad input, naming the file: the answer wanted


def _in_child(fn, timeout: float) -> tuple[int, str]:
    """Runs fn in a forked child: (0, "") when it returned, (3, traceback)
    when it raised, (-N, "") when signal N ended it, (124, "") on a hang."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        status, text = 0, ""
        try:
            fn()
        except BaseException:
            status, text = 3, traceback.format_exc()
        os.write(w, text.encode()[-8000:])
        os._exit(status)
    os.close(w)
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(r)
            return 124, ""
        time.sleep(0.005)
    text = os.read(r, 8192).decode(errors="replace")
    os.close(r)
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status), ""
    return os.WEXITSTATUS(status), text


def fuzz(seconds: float, seed: int, artifacts: Path | None, max_cases: int | None = None) -> dict:
    """Fuzzes for `seconds` (or `max_cases`); returns the counts and the
    findings (saved to `artifacts` when given)."""
    rng = random.Random(seed)
    # Imported once here (importing starts no thread; connecting does, in
    # the children only), so that each child only opens its store.
    import duckdb  # noqa: F401

    import pagelab.store  # noqa: F401

    with tempfile.TemporaryDirectory(prefix="pagelab-fuzz-store-") as tmp:
        seeds = [p.read_bytes() for p in write_seeds(Path(tmp))]
        target = Path(tmp) / "store.duckdb"
        counts = {"cases": 0, "findings": 0}
        findings: list[str] = []
        end = time.monotonic() + seconds
        while time.monotonic() < end and (max_cases is None or counts["cases"] < max_cases):
            data = mutate(rng.choice(seeds), rng)
            for stale in Path(tmp).glob("store.duckdb*"):
                stale.unlink()
            target.write_bytes(data)
            status, text = _in_child(lambda: read_store(target), TIMEOUT)
            if status == 124:
                # On a shared, loaded machine a slow input is not a hang:
                # it is one only if it is still running at 6 times the limit.
                status, text = _in_child(lambda: read_store(target), 6 * TIMEOUT)
            counts["cases"] += 1
            if status != 0:
                counts["findings"] += 1
                what = {3: "an exception", 124: "a hang"}.get(status, f"signal {-status}")
                findings.append(f"{what}: {text.strip().splitlines()[-1] if text.strip() else ''}")
                if artifacts is not None:
                    artifacts.mkdir(parents=True, exist_ok=True)
                    name = artifacts / f"store-{counts['cases']}.duckdb"
                    name.write_bytes(data)
                    name.with_suffix(".txt").write_text(f"{what}\n{text}")
        counts["findings_list"] = findings
        return counts


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--artifacts", type=Path, default=Path("fuzz/artifacts"))
    args = p.parse_args()
    result = fuzz(args.seconds, args.seed, args.artifacts)
    print(f"store: {result['cases']:,} inputs, {result['findings']} findings")
    for f in sorted(set(result["findings_list"])):
        print(f"  {f}")
    return 1 if result["findings"] else 0


if __name__ == "__main__":
    sys.exit(main())
