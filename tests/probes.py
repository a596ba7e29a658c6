"""The second hardening round's own probes (issue 39): inputs a hostile
user would try, over every command and input file, at most ten of one
kind. Each runs the command line in-process in a scratch directory (so
messages show the names as given) and must end as the table says: the
status, and for an error one line on stderr with the given words, no
traceback, nothing but what the probe made left in the directory (unless
the probe says otherwise).

`tests/test_probes.py` runs them all (in `make test`);
`python tests/probes.py` prints each one's outcome as a row of the table
in docs/reliability.md, from a real run."""

from __future__ import annotations

import dataclasses
import lzma
import os
import stat
from pathlib import Path
from typing import Callable

from conftest import SNAPSHOT

SMALL = ('[machine]\nphys_mem = "256MiB"\n[workload]\nkind = "gups"\nfootprint = "32MiB"\naccesses = 40000\n')
LACKEY = "==1== Lackey\nI  04001000,3\n L 1ffefff000,8\n S 1ffefff008,8\n"
SWEEP = 'id = "s"\n[base.machine]\nphys_mem = "256MiB"\n[base.workload]\nkind = "gups"\nfootprint = "4MiB"\naccesses = 2000\n'
ELASTIC = ["--set", 'machine.preset="ampere-altra"', "--set", 'os.policy="elastic"', "--set", 'os.elastic.leshy="offline"']


@dataclasses.dataclass
class Probe:
    id: str
    kind: str
    #: What is tried, for the docs.
    what: str
    argv: list[str]
    status: int
    #: Words the one error line must hold (status 0: words of stdout).
    says: tuple[str, ...] = ()
    #: Files to make first: name -> text, bytes, or one of "fifo", "dir", "device".
    files: dict = dataclasses.field(default_factory=dict)
    env: dict = dataclasses.field(default_factory=dict)
    #: Files the command may add (beyond what `files` made).
    may_add: tuple[str, ...] = ()
    #: Checks on the directory after the command (raise AssertionError).
    check: Callable[[Path], None] | None = None
    #: Call the Python API instead of the command line: fn(dir) -> None.
    api: Callable[[Path], None] | None = None
    root_only: bool = False


def make(d: Path, files: dict) -> None:
    for name, content in files.items():
        p = d / name
        p.parent.mkdir(parents=True, exist_ok=True)
        if content == "fifo":
            os.mkfifo(p)
        elif content == "dir":
            p.mkdir(exist_ok=True)
        elif content == "device":
            os.mknod(p, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        elif isinstance(content, tuple) and content[0] == "link":
            p.symlink_to(content[1])
        elif isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content)


def kept(name: str, kind: str) -> Callable[[Path], None]:
    """The special file `name` is still what it was."""
    test = {"fifo": stat.S_ISFIFO, "device": stat.S_ISCHR, "dir": stat.S_ISDIR}[kind]

    def check(d: Path) -> None:
        assert test(os.lstat(d / name).st_mode), f"{name} is no longer a {kind}"
    return check


def unchanged(name: str, text: str) -> Callable[[Path], None]:
    def check(d: Path) -> None:
        assert (d / name).read_text() == text, f"{name} was changed"
    return check


C = {"c.toml": SMALL}
T = {"t.lackey": LACKEY}
D = {"d": "dir"}
RD = {"rd/a.md": "# a\n", "rd/a.csv": "x,y\n1,2\n"}


def _out_probes() -> list[Probe]:
    gen = ["trace", "champsim-gen", "random", "--instructions", "100", "--out"]
    fifo, dirs, dev = "output is a FIFO", "output is a directory or under a file", "output is a device node (root)"
    return [
        Probe("fifo-gen", fifo, "`trace champsim-gen --out FIFO`", gen + ["p"], 2, ("p", "named pipe"), {"p": "fifo"}, check=kept("p", "fifo")),
        Probe("fifo-report", fifo, "`report DIR --out FIFO`", ["report", "rd", "--out", "p"], 2, ("p", "named pipe"), {**RD, "p": "fifo"}, check=kept("p", "fifo")),
        Probe("fifo-frag-show", fifo, "`frag show SNAP --out FIFO`", ["frag", "show", "s.txt", "--out", "p.png"], 2, ("p.png", "named pipe"),
              {"s.txt": SNAPSHOT, "p.png": "fifo"}, check=kept("p.png", "fifo")),
        Probe("fifo-frag-capture", fifo, "`frag capture FIFO`", ["frag", "capture", "p"], 2, ("p", "named pipe"), {"p": "fifo"},
              check=kept("p", "fifo"), root_only=True),
        Probe("fifo-parquet", fifo, "`sweep --parquet FIFO`", ["sweep", "s.toml", "--out", "o", "--parquet", "p"], 2, ("p", "named pipe"),
              {"s.toml": SWEEP, "p": "fifo"}, check=kept("p", "fifo")),
        Probe("fifo-stats", fifo, "`run --out DIR` where DIR/stats.json is a FIFO", ["run", "c.toml", "--out", "o"], 2, ("stats.json", "named pipe"),
              {**C, "o/stats.json": "fifo"}, check=kept("o/stats.json", "fifo")),
        Probe("fifo-series", fifo, "`run --out DIR` where DIR/timeseries.json is a FIFO", ["run", "c.toml", "--out", "o"], 2,
              ("timeseries.json", "named pipe"), {**C, "o/timeseries.json": "fifo"}, check=kept("o/timeseries.json", "fifo")),
        Probe("fifo-capture", fifo, "`trace capture --out FIFO -- true`", ["trace", "capture", "--out", "p", "--", "true"], 2, ("p", "named pipe"),
              {"p": "fifo"}, check=kept("p", "fifo")),
        Probe("fifo-hints-out", fifo, "`os.elastic.leshy_hints_out` a FIFO", ["run", "c.toml", "--set", 'machine.preset="ampere-altra"',
              "--set", 'os.policy="elastic"', "--set", 'os.elastic.leshy="online"', "--set", 'os.elastic.leshy_hints_out="p"'], 2,
              ("os.elastic.leshy_hints_out", "named pipe"), {**C, "p": "fifo"}, check=kept("p", "fifo")),
        Probe("dir-gen", dirs, "`trace champsim-gen --out DIR`", gen + ["d"], 2, ("d", "is a directory"), D),
        Probe("dir-report", dirs, "`report DIR --out DIR`", ["report", "rd", "--out", "d"], 2, ("d", "is a directory"), {**RD, **D}),
        Probe("dir-frag-show", dirs, "`frag show SNAP --out DIR`", ["frag", "show", "s.txt", "--out", "d"], 2, ("d", "is a directory"),
              {"s.txt": SNAPSHOT, **D}),
        Probe("dir-parquet", dirs, "`sweep --parquet DIR` (before any run)", ["sweep", "s.toml", "--out", "o", "--parquet", "d"], 2,
              ("d", "is a directory"), {"s.toml": SWEEP, **D}),
        Probe("file-run-out", dirs, "`run --out FILE`", ["run", "c.toml", "--out", "c.toml"], 2, ("--out c.toml", "not a directory"), C,
              check=unchanged("c.toml", SMALL)),
        Probe("file-sweep-out", dirs, "`sweep --out FILE`", ["sweep", "s.toml", "--out", "s.toml"], 2, ("--out s.toml", "not a directory"),
              {"s.toml": SWEEP}),
        Probe("file-reproduce-out", dirs, "`reproduce ID --out FILE`", ["reproduce", "frag-sweep", "--variant", "tiny", "--out", "c.toml"], 2,
              ("--out c.toml", "not a directory"), C),
        Probe("file-demo-out", dirs, "`demo --out FILE/sub` (before its runs)", ["demo", "--quick", "--out", "c.toml/sub"], 2,
              ("c.toml is not a directory",), C),
        Probe("empty-export", dirs, "`run --export-phys ''`", ["run", "c.toml", "--export-phys", ""], 2, ("--export-phys", "an empty name"), C),
        Probe("empty-out", dirs, "`run --out ''`", ["run", "c.toml", "--out", ""], 2, ("--out", "an empty name"), C),
        Probe("dev-gen", dev, "`trace champsim-gen --out DEV`", gen + ["n"], 2, ("n", "is a device"), {"n": "device"}, check=kept("n", "device"), root_only=True),
        Probe("dev-report", dev, "`report DIR --out DEV`", ["report", "rd", "--out", "n"], 2, ("n", "is a device"), {**RD, "n": "device"},
              check=kept("n", "device"), root_only=True),
        Probe("dev-parquet", dev, "`sweep --parquet DEV`", ["sweep", "s.toml", "--out", "o", "--parquet", "n"], 2, ("n", "is a device"),
              {"s.toml": SWEEP, "n": "device"}, check=kept("n", "device"), root_only=True),
        Probe("dev-stats", dev, "`run --out DIR` where DIR/stats.json is a device", ["run", "c.toml", "--out", "o"], 2, ("is a device",),
              {**C, "o/stats.json": "device"}, check=kept("o/stats.json", "device"), root_only=True),
        Probe("dev-capture", dev, "`trace capture --out DEV -- true`", ["trace", "capture", "--out", "n", "--", "true"], 2, ("n", "is a device"),
              {"n": "device"}, check=kept("n", "device"), root_only=True),
        Probe("dev-frag-show", dev, "`frag show SNAP --out DEV`", ["frag", "show", "s.txt", "--out", "n"], 2, ("n", "is a device"),
              {"s.txt": SNAPSHOT, "n": "device"}, check=kept("n", "device"), root_only=True),
    ]


def _link_and_input_probes() -> list[Probe]:
    link, same = "output through a symbolic link", "output that is one of the command's inputs"
    cfg_t = C | T
    trace = ["--set", 'workload.kind="trace"', "--set", 'workload.path="t.lackey"']
    return [
        Probe("link-dangling", link, "`trace convert` to a link to nothing", ["trace", "convert", "t.lackey", "l"], 2, ("l", "link to nothing"),
              {**T, "l": ("link", "nowhere")}),
        Probe("link-fifo", link, "`report --out` a link to a FIFO", ["report", "rd", "--out", "l"], 2, ("l", "named pipe"),
              {**RD, "p": "fifo", "l": ("link", "p")}, check=kept("p", "fifo")),
        Probe("link-loop", link, "`--export-phys` a link to itself", ["run", "c.toml", "--export-phys", "l"], 2, ("l",), {**C, "l": ("link", "l")}),
        Probe("link-file", link, "`trace champsim-gen --out` a link to a file: the file is replaced, the link kept",
              ["trace", "champsim-gen", "random", "--instructions", "100", "--out", "l"], 0, ("wrote l",), {"f.xz": "old", "l": ("link", "f.xz")},
              check=lambda d: (d / "l").is_symlink() and (d / "f.xz").read_bytes()[:6] == b"\xfd7zXZ\x00" or _fail("link")),
        Probe("same-export-config", same, "`--export-phys` the configuration file", ["run", "c.toml", "--export-phys", "c.toml"], 2,
              ("c.toml", "is the input"), C, check=unchanged("c.toml", SMALL)),
        Probe("same-export-trace", same, "`--export-phys` the workload's trace", ["run", "c.toml", *trace, "--export-phys", "t.lackey"], 2,
              ("t.lackey", "is the input"), cfg_t, check=unchanged("t.lackey", LACKEY)),
        Probe("same-export-snapshot", same, "`--export-phys` the fragmentation snapshot",
              ["run", "c.toml", "--set", 'os.fragmentation.snapshot="s.txt"', "--export-phys", "s.txt"], 2, ("s.txt", "is the input"),
              {**C, "s.txt": SNAPSHOT}, check=unchanged("s.txt", SNAPSHOT)),
        Probe("same-export-hints", same, "`--export-phys` the hint file", ["run", "c.toml", *ELASTIC, "--set", 'os.elastic.hints="h.txt"',
              "--export-phys", "h.txt"], 2, ("h.txt", "is the input"), {**C, "h.txt": "0x7f0000000000-0x7f0000200000\n"}),
        Probe("same-convert", same, "`trace convert T T`", ["trace", "convert", "t.lackey", "./t.lackey"], 2, ("is the input",), T,
              check=unchanged("t.lackey", LACKEY)),
    ]


def _fail(what: str):
    raise AssertionError(what)


def _input_probes() -> list[Probe]:
    k = "input that is not a regular file or not there"
    return [
        Probe("in-config-dir", k, "`run DIR`", ["run", "d"], 2, ("d", "directory"), D),
        Probe("in-trace-dir", k, "`trace info DIR`", ["trace", "info", "d"], 2, ("d", "directory"), D),
        Probe("in-events-missing", k, "`trace events MISSING`", ["trace", "events", "nope.pgl"], 2, ("nope.pgl", "No such file"), {}),
        Probe("in-convert-missing", k, "`trace convert MISSING OUT`", ["trace", "convert", "nope", "o.pgl"], 2, ("nope", "No such file"), {}),
        Probe("in-frag-dir", k, "`frag show DIR`", ["frag", "show", "d"], 2, ("d", "directory"), D),
        Probe("in-sweep-dir", k, "`sweep DIR`", ["sweep", "d"], 2, ("d", "directory"), D),
        Probe("in-report-file", k, "`report FILE`", ["report", "c.toml"], 2, ("c.toml", "not a directory"), C),
        Probe("in-snapshot-dir", k, "`os.fragmentation.snapshot` a directory", ["run", "c.toml", "--set", 'os.fragmentation.snapshot="d"'], 2,
              ("d", "directory"), {**C, **D}),
        Probe("in-hints-dir", k, "`os.elastic.hints` a directory", ["run", "c.toml", *ELASTIC, "--set", 'os.elastic.hints="d"'], 2,
              ("os.elastic.hints", "directory"), {**C, **D}),
        Probe("in-trace-path-dir", k, "`workload.path` a directory", ["run", "c.toml", "--set", 'workload.kind="trace"',
              "--set", 'workload.path="d"'], 2, ("d", "directory"), {**C, **D}),
    ]


def _config_probes() -> list[Probe]:
    rng, bad = "configuration value out of range (`--set`)", "malformed configuration file"

    def s(pid, key, value, says, what=None):
        return Probe(pid, rng, what or f"`--set {key}={value}`", ["run", "c.toml", "--set", f"{key}={value}"], 2, (key, *says), C)

    def f(pid, what, text, says, status=2):
        return Probe(pid, bad, what, ["run", "f.toml"], status, says, {"f.toml": text})
    return [
        s("set-phys-neg", "machine.phys_mem", '"-1GiB"', ("not a size",)),
        s("set-quantum-0", "run.quantum", "0", ("at least 1",)),
        s("set-accesses-neg", "workload.accesses", "-5", ("-5",)),
        s("set-footprint-0", "workload.footprint", '"0"', ("4 KiB page",)),
        s("set-llc-ways-0", "machine.cache.llc.ways", "0", ("1..=64",)),
        s("set-seed-2^64", "run.seed", "18446744073709551616", ("u64",)),
        s("set-max-order-40", "machine.max_order", "40", ("between 9 and 18",)),
        s("set-cpi-inf", "machine.timing.base_cpi", "inf", ("positive",)),
        s("set-target-nan", "os.fragmentation.target", "nan", ("[0, 0.999]",)),
        s("set-pwc-huge", "machine.pwc.pde_entries", "100000", ("at most 32768",)),
        f("toml-deep-array", "100,000 nested arrays", "a = " + "[" * 100000 + "]" * 100000 + "\n", ("f.toml", "recursion")),
        f("toml-deep-table", "5,000 nested inline tables", SMALL + "[x]\ny = " + "{z = " * 5000 + "1" + "}" * 5000 + "\n", ("f.toml", "recursion")),
        f("toml-nul", "a NUL byte", SMALL + "\0\n", ("f.toml",)),
        f("toml-bom", "a UTF-8 byte-order mark: read as TOML", "\ufeff" + SMALL, ("accesses",), status=0),
        f("toml-dup-key", "a key given twice", SMALL + "accesses = 5\n", ("f.toml", "duplicate")),
        f("toml-workload-int", "`workload = 5`", '[machine]\nphys_mem = "256MiB"\nworkload = 5\n', ("machine.workload",)),
        f("toml-no-workloads", "`workloads = []`", 'workloads = []\n[machine]\nphys_mem = "256MiB"\n', ("workloads",)),
        f("toml-utf16", "UTF-16 text", SMALL.encode("utf-16"), ("f.toml", "not UTF-8")),
        f("toml-long-string", "a 100 KB string value", SMALL.replace('"gups"', '"' + "g" * 100_000 + '"'), ("workload.kind",)),
        f("toml-systems-empty-vm", "an empty `virt.host.systems`", SMALL + "[virt]\nenabled = true\n[virt.host]\nsystems = []\n",
          ("virt.host.systems", "empty chain")),
    ]


def _trace_probes() -> list[Probe]:
    k = "malformed trace"
    # A native header: magic, version, flags (little-endian u16s), 4 zero bytes.
    header = b"PGLTRACE" + (2).to_bytes(2, "little") + b"\0" * 6

    def info(pid, what, name, content, says, cmd="info"):
        return Probe(pid, k, what, ["trace", cmd, name], 2, (name, *says), {name: content})
    return [
        info("trace-empty", "an empty file", "e.bin", b"", ("empty",)),
        info("trace-zst-garbage", "a zstd frame of garbage", "g.zst", b"\x28\xb5\x2f\xfd" + bytes(range(100)), ("zstd",)),
        info("trace-xz-cut", "an xz stream cut short", "c.xz", lzma.compress(b"x" * 100000)[:50], ("xz",)),
        info("trace-gz-garbage", "a gzip header of zeros", "g.gz", b"\x1f\x8b" + b"\0" * 50, ("gzip",)),
        info("trace-syscall-bad", "a system-call line whose length passes 2^64", "s.lackey",
             "==1== Lackey\nSYSCALL[1,1](9) sys_mmap ( 0x0, 99999999999999999999999, 3 ) --> Success(0x4a2a000)\nI  04001000,3\n",
             ("line 2", "system-call"), cmd="events"),
        info("trace-lackey-addr", "a lackey address of 17 hex digits", "a.lackey", "==1== Lackey\nI  04001000,3\n L 1ffffffffffffffff0,8\n", ("line 3",)),
        info("trace-champsim-odd", "100 zero bytes (not whole ChampSim records)", "x.champsim", bytes(100), ("cannot tell the format",)),
        info("trace-native-version", "a native header of version 9", "n.pgl", b"PGLTRACE" + (9).to_bytes(2, "little") + b"\0" * 22,
             ("at 8", "unsupported version 9")),
        info("trace-native-cut", "a native trace cut inside its first block's header", "n2.pgl", header + b"\x05\0\0",
             ("truncated", "block header")),
        Probe("trace-convert-zst-garbage", k, "`trace convert` of a damaged zstd file: nothing written", ["trace", "convert", "g.zst", "o.pgl"], 2,
              ("g.zst",), {"g.zst": b"\x28\xb5\x2f\xfd" + bytes(range(100))}),
    ]


def _snapshot_probes() -> list[Probe]:
    k = "fragmentation snapshot (beyond the issue's numbers)"
    mov = "Node    0, zone   Normal, type      Movable      0      0      0      1      1      0    616    444    141    226   1118"

    def snap(pid, what, text, says, status=2):
        return Probe(pid, k, what, ["frag", "show", "s.txt"], status, says if status else says, {"s.txt": text})
    return [
        snap("snap-no-pagetypeinfo", "only /proc/buddyinfo", "== /proc/buddyinfo\nNode 0, zone Normal 1 2 3\n", ("s.txt", "pagetypeinfo")),
        snap("snap-latin1", "not UTF-8", b"== /proc/pagetypeinfo\n\xe9\n", ("s.txt", "UTF-8")),
        snap("snap-word-count", "a count `abc` amid the counts", SNAPSHOT.replace("616", "abc"), ("s.txt", "line 9", "counts for the header's 11 orders")),
        snap("snap-fraction", "a count `1.5`", SNAPSHOT.replace("616", "1.5"), ("s.txt", "`1.5`", "not a count")),
        snap("snap-types-mismatch", "a zone with 4 pageblock counts for 5 types", SNAPSHOT.replace("2992          100            0            0",
             "2992          100            0"), ("s.txt", "line 13", "4 pageblock counts for 5 types")),
        snap("snap-orders-gap", "an order header `0 2 3`", SNAPSHOT.replace("order       0      1      2", "order       0      2"), ("s.txt", "expected 0 1 2")),
        snap("snap-40-orders", "40 orders of counts", SNAPSHOT.replace(mov, mov + "  0" * 29).replace(
             "     10\n", "     10 " + " ".join(str(i) for i in range(11, 40)) + "\n"), ("s.txt", "at most 32")),
        snap("snap-zero-pageblocks", "every pageblock count 0", SNAPSHOT.replace("44         2992          100", "0         0          0").replace(
             mov, mov.replace("1118", "0")), ("s.txt",)),
        snap("snap-capped", "a count Linux capped (`>100000`): read as 100000", SNAPSHOT.replace("616", ">100000").replace("2992", "29920"),
             ("F_i",), status=0),
        snap("snap-empty", "an empty file", "", ("s.txt", "pagetypeinfo")),
    ]


def _hint_probes() -> list[Probe]:
    k = "Leshy hint file"

    def hint(pid, what, content, says, status=2):
        argv = ["run", "c.toml", *ELASTIC, "--set", 'os.elastic.hints="h.txt"']
        files = {**C} if content is None else {**C, "h.txt": content}
        return Probe(pid, k, what, argv, status, ("os.elastic.hints", *says) if status else says, files)
    return [
        hint("hints-missing", "a file that is not there", None, ("h.txt", "cannot read")),
        hint("hints-latin1", "not UTF-8", b"0x7f0000000000-0x7f0000200000 \xe9\n", ("h.txt", "UTF-8")),
        hint("hints-reversed", "end before start", "0x7f0000200000-0x7f0000000000\n", ("line 1", "end before start")),
        hint("hints-3k", "a 3 KiB range", "0x7f0000000000-0x7f0000000c00\n", ("line 1", "64KiB")),
        hint("hints-overflow", "a start past 2^64", "0x1ffffffffffffffff-0x7f0000200000\n", ("line 1", "bad start")),
        hint("hints-empty", "an empty file: no hints", "", ("accesses",), status=0),
        hint("hints-comments", "comments only: no hints", "# nothing\n# at all\n", ("accesses",), status=0),
        hint("hints-no-dash", "a line without `-`", "0x7f0000000000\n", ("line 1", "0xSTART-0xEND")),
    ]


def _sweep_probes() -> list[Probe]:
    k = "sweep file"

    def sw(pid, what, text, says):
        return Probe(pid, k, what, ["sweep", "w.toml", "--out", "o"], 2, says, {"w.toml": text})
    return [
        sw("sweep-grid-unknown", "a grid key the configuration does not know", SWEEP + '[grid]\n"os.nope" = [1]\n', ("os.nope", "unknown field")),
        sw("sweep-seeds-neg", "`seeds = [-1]`", "seeds = [-1]\n" + SWEEP, ("run.seed", "-1")),
        sw("sweep-seeds-str", '`seeds = ["a"]`', 'seeds = ["a"]\n' + SWEEP, ("w.toml", "seeds", "integers")),
        sw("sweep-workloads-str", '`workloads = ["gups"]`', 'workloads = ["gups"]\n' + SWEEP, ("w.toml", "workloads")),
        sw("sweep-unknown-key", "an unknown top-level key", "jobs = 4\n" + SWEEP, ("w.toml", "unknown key", "jobs")),
        sw("sweep-workload-bogus", "a `[[workloads]]` table with an unknown key",
           SWEEP + '[[workloads]]\nkind = "gups"\nbogus = 1\n', ("workload.bogus", "unknown field")),
        sw("sweep-grid-empty", "a grid dimension with no values", SWEEP + '[grid]\n"os.policy" = []\n', ("w.toml", "non-empty list")),
        sw("sweep-id-slash", '`id = "a/b"`', 'id = "a/b"\n' + SWEEP.split("\n", 1)[1], ("w.toml", "id")),
        sw("sweep-bad-toml", "not TOML", "id = \n", ("w.toml",)),
        sw("sweep-value-type", "a grid value of the wrong type", SWEEP + '[grid]\n"workload.accesses" = ["many"]\n', ("workload.accesses",)),
    ]


def _store_probes() -> list[Probe]:
    k = "results store"
    return [
        Probe("store-junk", k, "`results.duckdb` of text", ["sweep", "s.toml", "--out", "o"], 2, ("results.duckdb", "not a readable results store"),
              {"s.toml": SWEEP, "o/results.duckdb": "hello"}),
        Probe("store-empty", k, "an empty `results.duckdb`", ["sweep", "s.toml", "--out", "o"], 2, ("results.duckdb", "not a valid DuckDB"),
              {"s.toml": SWEEP, "o/results.duckdb": ""}),
        Probe("store-dir", k, "`results.duckdb` a directory", ["sweep", "s.toml", "--out", "o"], 2, ("results.duckdb", "not a results store file"),
              {"s.toml": SWEEP, "o/results.duckdb": "dir"}),
        Probe("store-fifo", k, "`results.duckdb` a FIFO", ["sweep", "s.toml", "--out", "o"], 2, ("results.duckdb", "not a results store file"),
              {"s.toml": SWEEP, "o/results.duckdb": "fifo"}, check=kept("o/results.duckdb", "fifo")),
        Probe("store-reproduce-junk", k, "`reproduce` into a directory whose store is junk", ["reproduce", "frag-sweep", "--variant", "tiny",
              "--out", "o"], 2, ("results.duckdb", "not a readable results store"), {"o/results.duckdb": b"\0" * 4096}),
    ]


def _report_probes() -> list[Probe]:
    k = "report directory"
    return [
        Probe("report-csv-binary", k, "a CSV of bytes that are not UTF-8", ["report", "r"], 2, ("a.csv", "not a readable CSV"),
              {"r/a.csv": b"a,b\n\x00\xff,2\n"}),
        Probe("report-png-truncated", k, "a PNG cut short", ["report", "r"], 2, ("a.png", "not a PNG image that decodes"),
              {"r/a.md": "# a\n", "r/a.png": _png()[:45]}),
        Probe("report-png-jpeg", k, "a JPEG named .png", ["report", "r"], 2, ("a.png", "not a PNG", "no image format"),
              {"r/a.md": "# a\n", "r/a.png": b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + b"\0" * 40}),
        Probe("report-nul-md", k, "a write-up with a NUL byte: shown", ["report", "r"], 0, ("report.html",), {"r/a.md": "# a\0b\n"},
              may_add=("r/report.html",)),
        Probe("report-loop", k, "a link looping to its own directory: read once", ["report", "r"], 0, ("report.html",),
              {"r/a.md": "# a\n", "r/sub/loop": ("link", "..")}, may_add=("r/report.html",)),
        Probe("report-png-fifo", k, "a FIFO named a.png: not a file, skipped", ["report", "r"], 0, ("report.html",),
              {"r/a.md": "# a\n", "r/a.png": "fifo"}, may_add=("r/report.html",)),
        Probe("report-png-good", k, "a PNG that decodes: embedded", ["report", "r"], 0, ("report.html",), {"r/a.md": "# a\n", "r/a.png": _png()},
              may_add=("r/report.html",)),
    ]


def _png() -> bytes:
    """A 1x1 PNG, made here (no file of the repository needed)."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0\0")) + chunk(b"IEND", b"")


def _argument_probes() -> list[Probe]:
    k = "command-line argument"
    gen = ["trace", "champsim-gen", "random", "--out", "g.xz"]
    return [
        Probe("arg-seeds-0", k, "`reproduce ID --seeds 0`", ["reproduce", "chp-fig4", "--seeds", "0"], 2, ("--seeds", "at least 1")),
        Probe("arg-reproduce-unknown", k, "`reproduce nope`", ["reproduce", "nope"], 2, ("unknown experiment", "nope")),
        Probe("arg-gen-instr-0", k, "`champsim-gen --instructions 0`", gen + ["--instructions", "0"], 2, ("--instructions", "at least 1")),
        Probe("arg-gen-footprint", k, "`champsim-gen --footprint 100` (not whole lines)", gen + ["--instructions", "9", "--footprint", "100"], 2,
              ("--footprint", "multiple of 64")),
        Probe("arg-gen-seed-neg", k, "`champsim-gen --seed -5`: a seed like any other", gen + ["--instructions", "9", "--seed", "-5"], 0,
              ("wrote g.xz",), may_add=("g.xz",)),
        Probe("arg-host-mem-1k", k, "`--host-mem 1KiB`", ["--host-mem", "1KiB", "presets"], 2, ("--host-mem", "below 1.0 MiB")),
        Probe("arg-host-mem-word", k, "`--host-mem lots`", ["--host-mem", "lots", "presets"], 2, ("--host-mem", "lots")),
        Probe("arg-convert-one", k, "`trace convert` with one file", ["trace", "convert", "t.lackey"], 2, ("dst",), T),
        Probe("arg-export-format", k, "`--export-format nope`", ["run", "c.toml", "--export-format", "nope"], 2, ("--export-format",), C),
        Probe("arg-jobs-many", k, "`sweep --jobs 100000`: as many workers as points", ["sweep", "s.toml", "--out", "o", "--jobs", "100000"], 0,
              ("1 points",), {"s.toml": SWEEP}, may_add=("o/results.duckdb", "o/s.csv", "o/s.provenance.json")),
    ]


def _env_and_api_probes() -> list[Probe]:
    env, api = "environment variable", "Python API"
    return [
        Probe("env-host-mem-neg", env, "`PAGELAB_HOST_MEM=-1`", ["run", "c.toml"], 2, ("PAGELAB_HOST_MEM", "not a size"), C,
              env={"PAGELAB_HOST_MEM": "-1"}),
        Probe("env-host-mem-0", env, "`PAGELAB_HOST_MEM=0`", ["run", "c.toml"], 2, ("PAGELAB_HOST_MEM", "below 1.0 MiB"), C,
              env={"PAGELAB_HOST_MEM": "0"}),
        Probe("env-host-mem-2m", env, "`PAGELAB_HOST_MEM=2MiB` (the caches alone take more)", ["run", "c.toml"], 2,
              ("machine.cache", "host memory", "2.0 MiB"), C, env={"PAGELAB_HOST_MEM": "2MiB"}),
        Probe("env-debug-0", env, "`PAGELAB_DEBUG=0`: off", ["run", "c.toml"], 0, ("accesses",), C, env={"PAGELAB_DEBUG": "0"}),
        Probe("api-set-str", api, '`pagelab.run(cfg, set="a=b")`', [], 2, ("set", "list"), C,
              api=lambda d: _pagelab_run(d / "c.toml", set="workload.accesses=5")),
        Probe("api-set-int", api, "`pagelab.run(cfg, set=[1])`", [], 2, ("set", "list"), C, api=lambda d: _pagelab_run(d / "c.toml", set=[1])),
        Probe("api-config-int", api, "`pagelab.run(42)`", [], 2, ("expected a TOML file's path or a dict",), api=lambda d: _pagelab_run(42)),
        Probe("api-export-format", api, '`pagelab.run(cfg, export_phys=F, export_format="nope")`', [], 2, ("export format", "nope"), C,
              api=lambda d: _pagelab_run(d / "c.toml", export_phys=d / "x.txt", export_format="nope")),
        Probe("api-key-int", api, "a configuration dict with an integer key", [], 2, ("workload", "string"),
              api=lambda d: _pagelab_run({"workload": {1: "gups"}})),
        Probe("api-bytes", api, "`workload.kind=b\"gups\"` (bytes)", [], 2, ("workload.kind", "bytes"), C,
              api=lambda d: _pagelab_run(d / "c.toml", **{"workload.kind": b"gups"})),
    ]


def _pagelab_run(*args, **kw) -> None:
    import pagelab

    pagelab.run(*args, **kw)


def _budget_probes() -> list[Probe]:
    k = "host memory budget"

    def b(pid, what, sets, says, limit="1GiB"):
        argv = ["--host-mem", limit, "run", "c.toml"] + [x for s in sets for x in ("--set", s)]
        return Probe(pid, k, what, argv, 2, says, C)
    return [
        b("budget-l2-cache", "a 16 GiB L2 cache per core", ['machine.cache.l2.size="16GiB"', "machine.cache.l2.ways=16"], ("machine.cache.l2.size",)),
        b("budget-l1d", "a 16 GiB L1D", ['machine.cache.l1d.size="16GiB"', "machine.cache.l1d.ways=16"], ("machine.cache.l1d.size",)),
        b("budget-tlb", "the largest L2 TLB under 16 MiB", ["machine.tlb.l2_entries=1048576", "machine.tlb.l2_ways=16"],
          ("machine.tlb.l2_entries",), "16MiB"),
        b("budget-guest", "a 768 GiB guest on a 1 TiB host under 3 GiB (the host's frame table alone fits)",
          ['machine.phys_mem="1TiB"', "virt.enabled=true", 'virt.guest_mem="768GiB"'], ("machine.phys_mem", "3.6 GiB in all"), "3GiB"),
        b("budget-kv", "a kv store of 4 x 10^9 objects", ['workload.kind="kv"', "workload.objects=4000000000"],
          ("workload.objects", "hash chains", "host memory")),
        Probe("budget-chase", k, "`champsim-gen chase` whose lap would not fit", ["--host-mem", "1GiB", "trace", "champsim-gen", "chase",
              "--out", "g.xz", "--instructions", "4000000000", "--footprint", "512GiB"], 2, ("--footprint", "host memory")),
    ]


def all_probes() -> list[Probe]:
    return (_out_probes() + _link_and_input_probes() + _input_probes() + _config_probes() + _trace_probes() + _snapshot_probes()
            + _hint_probes() + _sweep_probes() + _store_probes() + _report_probes() + _argument_probes() + _env_and_api_probes()
            + _budget_probes())


# --- running ---------------------------------------------------------------


@dataclasses.dataclass
class Outcome:
    status: int
    stdout: str
    stderr: str


def run_probe(p: Probe, d: Path, timeout: float = 120, make_files: bool = True) -> Outcome:
    """Runs `p` in directory `d` (empty, or with its files made when not
    `make_files`), in-process, on a helper thread so that a hang fails
    instead of stopping the suite."""
    import contextlib
    import io
    import threading

    from pagelab import _pagelab, cli

    if make_files:
        make(d, p.files)
    out, err = io.StringIO(), io.StringIO()
    result: dict = {}
    env_before = dict(os.environ)
    cwd = os.getcwd()

    def call() -> None:
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                if p.api is not None:
                    try:
                        p.api(d)
                        result["status"] = 0
                    except _pagelab.PagelabError as e:
                        print(f"pagelab: error: {e}", file=err)
                        result["status"] = cli.exit_status(e)
                else:
                    try:
                        result["status"] = cli.main(p.argv)
                    except SystemExit as e:  # argparse's usage errors
                        result["status"] = e.code
        except BaseException as e:  # noqa: BLE001 - reported as the outcome
            result["status"] = f"raised {type(e).__name__}: {e}"

    os.chdir(d)
    os.environ.update({"COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb", **p.env})
    try:
        t = threading.Thread(target=call, daemon=True)
        t.start()
        t.join(timeout)
        status = result.get("status", "hung") if not t.is_alive() else "hung"
    finally:
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env_before)
    return Outcome(status, out.getvalue(), err.getvalue())


def listing(d: Path) -> set[str]:
    """Every path under `d`, hidden ones too, links not followed."""
    found = set()
    for root, dirs, files in os.walk(d):
        for name in dirs + files:
            found.add(str((Path(root) / name).relative_to(d)))
    return found


def message(p: Probe, o: Outcome) -> str:
    """The error line (argparse's usage lines before it aside), or for a
    success the first line of stdout holding the probe's first word."""
    if p.status == 0:
        lines = o.stdout.splitlines()
        return next((x for x in lines if p.says and p.says[0] in x), lines[-1] if lines else "")
    lines = [x for x in o.stderr.splitlines() if x.strip()]
    return lines[-1] if lines else ""


def check_outcome(p: Probe, o: Outcome, d: Path, before: set[str]) -> str:
    """Checks the outcome against the probe; returns its message."""
    assert o.status == p.status, f"{p.id}: status {o.status}, expected {p.status}\nstderr:\n{o.stderr}"
    assert "Traceback" not in o.stderr and "panicked" not in o.stderr, o.stderr
    line = message(p, o)
    if p.status:
        lines = [x for x in o.stderr.splitlines() if x.strip()]
        usage = lines[:-1]
        assert not usage or (usage[0].startswith("usage:") and all(x.startswith(" ") for x in usage[1:])), \
            f"{p.id}: more than one line:\n{o.stderr}"
        assert line.startswith(("pagelab: error:", "pagelab ")), f"{p.id}: not pagelab's error line: {line}"
    for word in p.says:
        assert word in line, f"{p.id}: {word!r} not in {line!r}"
    allowed = lambda x: any(x == a or x.startswith(a + "/") or a.startswith(x + "/") for a in p.may_add)  # noqa: E731
    added = {x for x in listing(d) - before if not allowed(x)}
    assert not added, f"{p.id}: left behind: {sorted(added)}"
    if p.check is not None:
        p.check(d)
    return line


def markdown(probes: list[Probe], base: Path) -> str:
    """The docs' table: each probe's kind, what, status and message, as run now."""
    rows = ["| probe | kind | input | status | message |", "|---|---|---|---|---|"]
    for p in probes:
        if p.root_only and os.geteuid() != 0:
            continue
        d = base / p.id
        d.mkdir(parents=True)
        o = run_probe(p, d)
        # Absolute paths (DuckDB's messages) read relative to the probe's directory.
        msg = message(p, o).replace(f"{d}/", "").replace("|", "\\|")
        if len(msg) > 160:
            msg = msg[:157] + "..."
        ok = "" if o.status == p.status else f" (expected {p.status}!)"
        rows.append(f"| `{p.id}` | {p.kind} | {p.what} | {o.status}{ok} | `{msg}` |")
    return "\n".join(rows)


if __name__ == "__main__":
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        print(markdown(all_probes(), Path(tmp)))
    sys.exit(0)
