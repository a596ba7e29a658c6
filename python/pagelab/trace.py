"""`pagelab trace convert|info|capture`: traces in and out.

`capture` runs a program under Valgrind's lackey and converts its output as
it streams (through a named pipe, so no multi-gigabyte text lands on disk)
into pagelab's native format. With `--trace-syscalls=yes`, the program's
mmap, munmap, mprotect, mremap and brk calls become the trace's mapping
events, replayed through the simulated kernel. What exec mapped before the
program ran (the binary, the dynamic loader, the stack) is never a system
call, so the trace is flagged "partial mapping events": touches outside
every recorded mapping get automatic VMAs (2 MiB-aligned, around the
address). See docs/trace-format.md, "Captured programs".
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from pathlib import Path

from rich.console import Console
from rich.table import Table

from pagelab.api import interruptible
from pagelab.output import output_file
from pagelab.table import narrow_table, numeric_column

from pagelab import _pagelab


def convert(src: str, dst: str) -> dict:
    return interruptible(_pagelab.trace_convert, src, dst)


#: A program (or Valgrind) ended by one of these was stopped from outside:
#: its trace is cut short, and not written. A program that crashes (SIGSEGV,
#: SIGABRT...) ran as far as it could: its trace is kept, as a non-zero
#: exit's is.
STOPPED_BY = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGKILL, signal.SIGQUIT}


def capture(out: str, program: list[str]) -> tuple[dict, int]:
    """Runs `program` under lackey, converting its trace on the fly.

    Returns the trace's summary and the program's status as subprocess
    gives it (-N for a program signal N ended). A program that exits
    non-zero (grep finding nothing, a failing test) or crashes still ran:
    its trace is kept, and the caller says how it ended. The trace reaches
    `out` only once Valgrind has ended so; a capture that is cut short (the
    program or Valgrind stopped by a signal, pagelab interrupted) or that
    fails leaves nothing at `out`, nor its temporary FIFO."""
    if not program:
        raise _pagelab.PagelabError("trace capture: give the program after --")
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise _pagelab.PagelabError("trace capture needs valgrind (apt-get install valgrind)")
    _check_program(program[0])
    _pagelab.check_output(out)
    with tempfile.TemporaryDirectory(prefix="pagelab-capture-") as tmp, output_file(out) as trace:
        fifo = Path(tmp) / "lackey.fifo"
        guards = [_pagelab.TempGuard(tmp, directory=True), _pagelab.TempGuard(str(fifo))]
        os.mkfifo(fifo)
        result: dict = {}

        def consume() -> None:
            try:
                result["summary"] = _pagelab.trace_convert(str(fifo), str(trace))
            except BaseException as e:  # re-raised in the caller's thread
                result["error"] = e

        # No gdbserver (its FIFOs in TMPDIR would outlive a killed capture).
        cmd = [valgrind, "--tool=lackey", "--trace-mem=yes", "--trace-syscalls=yes", "--vgdb=no",
               f"--log-file={fifo}", *program]
        # Started before the reader thread (a child is forked only while
        # this process has one thread): Valgrind waits to open the FIFO.
        child = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, preexec_fn=_end_with_parent)
        reader = threading.Thread(target=consume, daemon=True)
        reader.start()
        try:
            child.wait()
        except BaseException:
            child.terminate()
            child.wait()
            raise
        finally:
            _release_reader(fifo, reader)
        proc = child
        status = _shell_status(proc.returncode)
        if -proc.returncode in STOPPED_BY:
            name = signal.Signals(-proc.returncode).name
            raise _pagelab.SimulationError(f"trace capture of {program[0]} cut short: stopped by {name}; no trace written")
        if "summary" not in result and status in (126, 127):
            raise _pagelab.PagelabError(f"trace capture: valgrind could not start {program[0]} (status {status})")
        if "error" in result:
            # The reader names its input, the FIFO: name the program instead.
            e = result["error"]
            raise type(e)(str(e).replace(str(fifo), f"valgrind's trace of {program[0]}")) from None
        for g in guards:
            g.release()
    return result["summary"], proc.returncode


def written(path: str, s: dict) -> str:
    """What `trace convert` and `trace capture` wrote, counted as a run
    counts it: data loads and stores (a modify is one of each; `trace info`
    counts it once, as cachegrind's D refs do) apart from instruction
    fetches."""
    data = s["accesses"] - s["ifetches"]
    return (f"wrote {path}: {data:,} data loads and stores (a modify is one of each), "
            f"{s['ifetches']:,} instruction fetches, {s['instructions']:,} instructions; "
            f"{s['records']:,} records, {s['bytes']:,} bytes")


def _check_program(name: str) -> None:
    """The program must be one a shell would run (Valgrind, failing to
    start it, never opens its log file)."""
    found = shutil.which(name)
    if found is None:
        why = "not executable" if os.path.exists(name) else "not found"
        raise _pagelab.PagelabError(f"trace capture: {name}: {why}")


def _end_with_parent() -> None:
    """In the child, before exec: SIGTERM when pagelab ends (killed, it
    could not stop a traced program that runs on for hours)."""
    import ctypes

    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _release_reader(fifo: Path, reader: threading.Thread) -> None:
    """Valgrind has ended. If it never opened the FIFO, the reader still
    waits to open it: opening the write end once lets it see an empty
    input and end."""
    if reader.is_alive():
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            os.close(fd)
        except OSError:
            pass  # no reader waiting: it had opened and finished
    reader.join()


def _shell_status(returncode: int) -> int:
    """A subprocess's status as a shell reports it: 128 + N when signal N
    ended it (subprocess gives -N)."""
    return 128 - returncode if returncode < 0 else returncode


def _cell(v) -> str:
    return f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else str(v)


def print_info(info: dict, console: Console) -> None:
    """The info as a table, with what its counts mean: `accesses` counts a
    modify once (cachegrind's D refs), where a run's `accesses` statistic
    and `trace convert` count it as a load and a store."""
    table = Table(title=str(info.get("path", "trace")),
                  caption="accesses = loads + stores - modifies (a modify once, as cachegrind's D refs); "
                          "a run's accesses statistic is loads + stores")
    table.add_column("")
    table.add_column("value", justify="right")
    for k, v in info.items():
        if isinstance(v, dict):
            for kk, vv in v.items():
                table.add_row(f"{k}.{kk}", _cell(vv))
        else:
            table.add_row(k, _cell(v))
    console.print(table)


def print_events(events: list[dict], console: Console) -> None:
    """The mapping events, narrow enough for 80 columns: addresses and
    counts whole (they are what a reader compares), lengths in binary
    units, and the name (a path, often) folded onto more lines rather than
    cut. `--json` has every field as it is."""
    table = narrow_table(f"{len(events):,} mapping events")
    numeric_column(table, "at access")
    table.add_column("event", no_wrap=True)
    numeric_column(table, "start")
    numeric_column(table, "end")
    numeric_column(table, "length")
    table.add_column("rw", no_wrap=True)
    table.add_column("name", overflow="fold")
    for e in events:
        w = "" if e["writable"] is None else ("rw" if e["writable"] else "r")
        table.add_row(f"{e['at']:,}", e["kind"], f"{e['start']:#x}", f"{e['start'] + e['len']:#x}", _bytes(e["len"]), w, e["name"] or "")
    console.print(table)


def _bytes(n: int) -> str:
    """A length in the largest binary unit that divides it (mappings are
    page multiples), else in bytes."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n:,} B"


def main(args: argparse.Namespace) -> int:
    console = Console()
    if args.trace_command == "convert":
        console.print(written(args.dst, convert(args.src, args.dst)), soft_wrap=True)
    elif args.trace_command == "info":
        info = dict(interruptible(_pagelab.trace_info, args.file), path=args.file)
        if args.json:
            print(json.dumps(info, indent=1))
        else:
            print_info(info, console)
    elif args.trace_command == "champsim-gen":
        from pagelab import champsim_traces

        s = champsim_traces.write(args.out, args.kind, args.instructions, args.footprint, args.seed)
        console.print(f"wrote {args.out}: " + ", ".join(f"{k} {v:,}" if isinstance(v, int) else f"{k} {v}" for k, v in s.items()))
    elif args.trace_command == "events":
        events = interruptible(_pagelab.trace_events, args.file)
        if args.json:
            print(json.dumps(events, indent=1))
        else:
            print_events(events, console)
    else:
        program = list(args.program)
        if program and program[0] == "--":
            program = program[1:]
        s, returncode = capture(args.out, program)
        console.print(written(args.out, s), soft_wrap=True)
        if returncode < 0:
            console.print(f"{program[0]} was killed by {signal.Signals(-returncode).name}; its trace is kept")
        elif returncode != 0:
            console.print(f"{program[0]} exited with status {returncode}; its trace is kept")
        if returncode != 0 and args.propagate_status:
            return _shell_status(returncode)
    return 0
