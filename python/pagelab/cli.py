"""The `pagelab` command line."""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

from pagelab import _pagelab
from pagelab.api import run
from pagelab.executors import ExecutorUnavailable, WorkerDied
from pagelab.output import check_out_dir, check_run_out, write_run
from pagelab.table import print_summary


def progress_bar():
    """A rich progress bar on stderr when it is a terminal; else nothing."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    bar = Progress(
        TextColumn("simulating"),
        BarColumn(),
        TextColumn("{task.fields[count]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        disable=not sys.stderr.isatty(),
        transient=True,
    )
    return bar


def progress_update(bar, task):
    """A `progress(done, expected)` callback for `run`: a bar with its total
    and ETA when the total is known, else an indeterminate (pulsing) one."""

    def update(done: int, expected: int | None) -> None:
        if expected is None:
            bar.update(task, completed=done, total=None, count=f"{done:,} accesses")
        else:
            total = max(done, expected)
            bar.update(task, completed=done, total=total, count=f"{done:,}/{total:,} accesses")

    return update


def cmd_run(args: argparse.Namespace) -> int:
    if args.out is not None:
        check_run_out(Path(args.out))
    with progress_bar() as bar:
        task = bar.add_task("run", total=None, count="")
        update = progress_update(bar, task)

        result = run(
            args.config,
            set=args.set,
            export_phys=args.export_phys,
            export_format=args.export_format,
            export_memory_only=args.export_memory_only,
            progress=update,
        )
    if args.out is not None:
        write_run(Path(args.out), result)
    print_summary(result.stats, result.seconds)
    return 0


def cmd_presets(_args: argparse.Namespace) -> int:
    """One line per preset, whatever the terminal's width (a table would
    wrap each machine over two lines in 80 columns; a line stays whole
    for grep and cut): its name, the machine it models, where its values
    come from (the first two lines of its file; the rest of the file says
    which value comes from which source)."""
    names = _pagelab.presets()
    width = max(map(len, names))
    for n in names:
        machine, source = _pagelab.preset_about(n) or ("?", "?")
        print(f"{n:<{width}}  {machine}; values from {source}")
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    # (One mode today: the listing; `--list` says so, as `reproduce --list`.)
    sys.stdout.write(_pagelab.stat_list(args.markdown))
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from pagelab.bench import main as bench_main

    return bench_main(args)


def cmd_trace(args: argparse.Namespace) -> int:
    from pagelab.trace import main as trace_main

    return trace_main(args)


def cmd_frag(args: argparse.Namespace) -> int:
    from pagelab.frag import main as frag_main

    return frag_main(args)


def cmd_demo(args: argparse.Namespace) -> int:
    from pagelab.demo import main as demo_main

    return demo_main(args)


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def cmd_sweep(args: argparse.Namespace) -> int:
    from pagelab.sweep import load_sweep, sweep_to_dir

    spec = load_sweep(args.sweep)
    out = Path(args.out or Path("out") / spec.id)
    check_out_dir(out)
    if args.parquet:
        _pagelab.check_output(args.parquet)
    outcome, _ = sweep_to_dir(spec, out, jobs=args.jobs, executor=args.executor, address=args.address, log=_log)
    if args.parquet:
        from pagelab.store import Store

        with Store(out, read_only=True) as store:
            store.to_parquet(args.parquet)
    # Each failed point was logged (with its parameters) as it failed.
    print(f"{len(outcome.points)} points: {outcome.ran} run now, {outcome.reused} already stored, "
          f"{len(outcome.errors)} failed; store {outcome.store_path}")
    return 1 if outcome.errors else 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    from pagelab import experiments
    from pagelab.results import SaveRefused

    if args.all or args.only:
        return _reproduce_all(args)
    if args.list or not args.id:
        from pagelab.experiments.timings import expected_times

        # One experiment per line, its title wrapped under itself so that
        # the list stays inside 80 columns, then its recorded times.
        times = expected_times()
        for exp in experiments.all_experiments():
            text = exp.title + (f" [{exp.paper}]" if exp.paper else "")
            print(textwrap.fill(text, 80, initial_indent=f"{exp.id:16} ", subsequent_indent=" " * 17, break_on_hyphens=False))
            print(textwrap.fill(times.line(exp.id), 80, initial_indent=" " * 17, subsequent_indent=" " * 23))
        print()
        print(textwrap.fill(times.legend(), 80))
        return 0
    try:
        exp = experiments.get(args.id)
    except KeyError as e:
        print(f"pagelab: error: {e.args[0]}", file=sys.stderr)
        return 2
    variant = args.variant or ("tiny" if args.tiny else "quick" if args.quick else "full")
    out = Path(args.out or Path("out") / exp.id)
    check_out_dir(out)
    try:
        files = experiments.reproduce(exp.id, out, variant=variant, jobs=args.jobs, executor=args.executor, address=args.address,
                                       seeds=args.seeds, save_results=args.save_results, log=_log)
    except SaveRefused as e:
        print(f"pagelab: error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except RuntimeError as e:
        # Runs of the experiment failed (their errors are in the message).
        print(f"pagelab: error: {e}", file=sys.stderr)
        return EXIT_RUN_FAILED
    for f in files:
        print(f)
    return 0


def _reproduce_all(args: argparse.Namespace) -> int:
    from pagelab.reproduce_all import main as all_main

    if args.id or not args.all:
        why = f"--all runs every experiment: give no id ({_pagelab.cap_value(repr(args.id))})" if args.id else "--only goes with --all"
        print(f"pagelab reproduce: error: {why} (see pagelab reproduce --help)", file=sys.stderr)
        return EXIT_BAD_INPUT
    return all_main(args, _log)


def cmd_calibrate(args: argparse.Namespace) -> int:
    from pagelab.calibrate import main as calibrate_main

    return calibrate_main(args)


def cmd_report(args: argparse.Namespace) -> int:
    from pagelab.report import write_report

    try:
        print(write_report(args.dir, args.out, stats=args.stat))
    except FileNotFoundError as e:
        print(f"pagelab: error: {e.args[0] if e.args else e}", file=sys.stderr)
        return 2
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    from pagelab.diff import main as diff_main

    return diff_main(args)


def _footprint(text: str) -> int:
    """An argparse type: a size in bytes, a positive multiple of a cache line."""
    from pagelab.champsim_traces import LINE, parse_size

    try:
        n = parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    if n < LINE or n % LINE:
        raise argparse.ArgumentTypeError(f"must be a positive multiple of {LINE} bytes, got {n}")
    return n


def _positive_int(text: str) -> int:
    """An argparse type: an integer of at least 1 (a bad one is a usage
    error, exit status 2)."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {_pagelab.cap_value(repr(text))}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


def _host_mem(text: str) -> str:
    """An argparse type: a size the core accepts as a host-memory limit."""
    try:
        _pagelab.parse_host_mem(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def _executor_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--jobs", type=_positive_int, default=None, metavar="N", help="parallel runs (default: every core)")
    p.add_argument("--executor", choices=["local", "ray"], default="local", help="where runs execute")
    p.add_argument("--address", default=None, help="ray: the cluster address for ray.init (default: a local Ray)")


class Parser(argparse.ArgumentParser):
    """argparse with its errors on one line (bad input is one line naming
    the argument, exit status 2); the usage is one `--help` away. Its
    subcommands' parsers are of this class too (argparse makes them of the
    parent's)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="pagelab",
        description=__doc__,
        epilog="Exit status: 0 success; 1 a run failed (simulated memory exhausted, a stale translation, "
        "a worker that died, an internal error); 2 bad input (configuration, file, argument); 130 interrupted.",
    )
    p.add_argument("--version", action=_Version, help="print pagelab's version and commit")
    p.add_argument("--debug", action="store_true", help="on an internal error, show where (Python traceback, Rust panic location)")
    p.add_argument(
        "--host-mem", metavar="SIZE", type=_host_mem,
        help="host memory a run may use (e.g. 16GiB; default: the host's available memory; "
        "divided among a sweep's --jobs); a run that would build more is refused",
    )
    sub = p.add_subparsers(dest="command", required=True)

    r = sub.add_parser("run", help="run one configuration")
    r.add_argument("config", help="a TOML configuration file")
    r.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a key (repeatable)")
    r.add_argument("--out", metavar="DIR", help="write stats.json, config.resolved.toml, provenance.json (and timeseries.json) here")
    r.add_argument("--export-phys", metavar="FILE",
                   help="write every physical reference the caches see, L1 hits and the first-touch pass included "
                        "(R/W/P/I lines: load, store, walk, fetch; .zst compresses; docs/trace-format.md)")
    r.add_argument("--export-format", choices=["pagelab", "ramulator2", "dramsim3"], default="pagelab",
                   help="line format of --export-phys: pagelab's R/W/P/I, Ramulator 2's LD/ST, DRAMsim3's ADDR READ|WRITE CYCLE")
    r.add_argument("--export-memory-only", action="store_true",
                   help="export only the references memory serves (LLC misses; their number is mem.accesses): a DRAM simulator's input")
    r.set_defaults(func=cmd_run)

    df = sub.add_parser("diff", help="what differs between two runs, or the matched runs of two results stores")
    df.add_argument("a", help="a run directory (pagelab run --out) or a results store (a sweep's or an experiment's DIR)")
    df.add_argument("b", help="the same kind as A")
    df.add_argument("--stat", action="append", metavar="GLOB", help="only statistics matching this pattern (repeatable: 'dtlb.*')")
    df.add_argument("--top", type=int, default=30, metavar="N", help="statistics to print, largest changes first (0: all; default 30)")
    df.add_argument("--per-core", action="store_true", help="also the per-core copies (core0.*)")
    df.add_argument("--csv", metavar="FILE", help="write every differing statistic (per pair, for stores) to a CSV file")
    df.set_defaults(func=cmd_diff)

    pr = sub.add_parser("presets", help="list the machine presets: the machine each models, its sources")
    pr.set_defaults(func=cmd_presets)

    st = sub.add_parser("stats", help="every statistic a run can emit: name, unit, what it counts (docs/stats.md)")
    st.add_argument("--list", action="store_true", required=True, help="list them (tab-separated)")
    st.add_argument("--markdown", action="store_true", help="as docs/stats.md")
    st.set_defaults(func=cmd_stats)

    b = sub.add_parser("bench", help="measure the simulator's speed (accesses/s)")
    b.add_argument("--quick", action="store_true", help="smaller runs (a smoke test, not a measurement)")
    b.add_argument("--repeat", type=_positive_int, default=3, help="runs per case; the best is reported")
    b.set_defaults(func=cmd_bench)

    tr = sub.add_parser("trace", help="traces: convert, info, events, champsim-gen, capture")
    trs = tr.add_subparsers(dest="trace_command", required=True)
    tc = trs.add_parser("convert", help="any readable trace (ChampSim, lackey, native) to pagelab's native format")
    tc.add_argument("src")
    tc.add_argument("dst")
    ti = trs.add_parser("info", help="instructions, accesses, footprint, pages touched, reuse distances")
    ti.add_argument("file")
    ti.add_argument("--json", action="store_true")
    te = trs.add_parser("events", help="the mapping events (mmap, munmap, mprotect) of a trace, in order")
    te.add_argument("file")
    te.add_argument("--json", action="store_true")
    tg = trs.add_parser(
        "champsim-gen", help="a synthetic ChampSim trace (chase, random, stream) for the timing validation against ChampSim"
    )
    tg.add_argument("kind", choices=["chase", "random", "stream"])
    tg.add_argument("--out", required=True, metavar="FILE", help="the trace (xz-compressed)")
    tg.add_argument("--instructions", type=_positive_int, required=True, metavar="N", help="records (one instruction each)")
    tg.add_argument(
        "--footprint", type=_footprint, default="16MiB", metavar="SIZE", help="bytes the loads range over (default 16MiB)"
    )
    tg.add_argument("--seed", type=int, default=1)
    tp = trs.add_parser("capture", help="run a program under Valgrind lackey (and its mmap/munmap/brk calls) into a native trace")
    tp.add_argument("--out", required=True, metavar="FILE")
    tp.add_argument(
        "--propagate-status", action="store_true",
        help="exit with the program's status (default: 0 whenever the trace was written)",
    )
    tp.add_argument("program", nargs=argparse.REMAINDER, help="-- PROGRAM ARGS...")
    tr.set_defaults(func=cmd_trace)

    fr = sub.add_parser("frag", help="fragmentation of real machines: capture and show")
    frs = fr.add_subparsers(dest="frag_command", required=True)
    fc = frs.add_parser("capture", help="save /proc/buddyinfo and /proc/pagetypeinfo (for os.fragmentation.snapshot)")
    fc.add_argument("file")
    fs = frs.add_parser("show", help="free blocks per order, Linux's indices and F_i of a capture")
    fs.add_argument("file")
    fs.add_argument("--out", metavar="PNG", help="also plot them")
    fr.set_defaults(func=cmd_frag)

    d = sub.add_parser("demo", help="base vs thp vs coloring on gups and bfs, fresh and fragmented")
    d.add_argument("--out", default="out/demo", metavar="DIR")
    d.add_argument("--quick", action="store_true", help="smaller footprints")
    d.set_defaults(func=cmd_demo)

    sw = sub.add_parser("sweep", help="run a grid of configurations (docs/sweeps.md) into a results store")
    sw.add_argument("sweep", help="a SWEEP.toml file")
    sw.add_argument("--out", metavar="DIR", help="results directory (default out/ID)")
    sw.add_argument("--parquet", metavar="FILE", help="also export the store to this Parquet file")
    _executor_args(sw)
    sw.set_defaults(func=cmd_sweep)

    rp = sub.add_parser("reproduce", help="run a named experiment (--list shows them)")
    rp.add_argument("id", nargs="?", help="experiment id")
    rp.add_argument("--list", action="store_true",
                    help="list the experiments; with --all, the recorded times per variant and their sums")
    rp.add_argument("--all", action="store_true",
                    help="run every experiment into one store (default out/all), each point two declare once, "
                         "one progress bar; a table of runs and times at the end")
    # Tests: --all over these experiments only (comma-separated ids).
    rp.add_argument("--only", metavar="ID,...", help=argparse.SUPPRESS)
    size = rp.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="the small variant (minutes, not hours: --list shows each experiment's recorded times)")
    size.add_argument("--tiny", action="store_true", help=argparse.SUPPRESS)
    size.add_argument(
        "--variant",
        choices=["full", "quick", "tiny"],
        help="full (default: the paper's scale), quick (= --quick) or tiny (the smallest: checks that the experiment runs; the tests use it)",
    )
    rp.add_argument("--out", metavar="DIR", help="results directory (default out/ID; with --all out/all)")
    rp.add_argument("--seeds", type=_positive_int, metavar="N",
                    help="run every point with seeds 1..N (default: full 3, quick 2, tiny 1)")
    rp.add_argument("--save-results", nargs="?", const="results", metavar="ROOT",
                    help="also save the run as data in ROOT/<package>/ID/ (default ROOT: results; with --all every experiment): "
                         "its CSVs, every run's statistics, seeds, configuration hash, commit, machine, time; "
                         "only a full run with 3 or more seeds")
    _executor_args(rp)
    rp.set_defaults(func=cmd_reproduce)

    cal = sub.add_parser(
        "calibrate",
        help="measure this machine with microbenchmarks and compare pagelab's predictions of them (docs/validation.md)",
    )
    cal.add_argument("--out", required=True, metavar="DIR", help="where calibrate.csv, machine.toml and calibrate.json go")
    cal.add_argument("--footprints", default="16,64,256,1024,4096", metavar="MIB,...",
                     help="footprints of the table's rows, in MiB (default 16,64,256,1024,4096)")
    cal.add_argument("--repeats", type=_positive_int, default=10, metavar="N",
                     help="timings of each loop at least; the fastest is kept (default 10)")
    cal.add_argument("--rounds", type=_positive_int, default=3, metavar="N",
                     help="measure every mapping N times over, in turn, and keep the fastest (default 3)")
    cal.add_argument("--llc", choices=["sysfs", "measured"], default="sysfs",
                     help="the LLC of the preset: as sysfs gives it (default), or cut to where the chase "
                          "measured it to end (a shared host's LLC can be smaller)")
    cal.set_defaults(func=cmd_calibrate)

    rr = sub.add_parser("report", help="one self-contained HTML page of a run, a sweep or an experiment")
    rr.add_argument("dir", help="a run directory (pagelab run --out), a sweep's or an experiment's results directory")
    rr.add_argument("--out", metavar="FILE", help="default DIR/report.html")
    rr.add_argument("--stat", action="append", metavar="NAME",
                    help="a statistic to plot (repeatable): against a sweep's swept keys, or over a run's epochs "
                         "(default: cycles, dtlb.l2.misses, cache.llc.misses)")
    rr.set_defaults(func=cmd_report)
    return p


class _Version(argparse.Action):
    """`--version`: pagelab's version and commit, computed only when asked
    for (the commit is a git call)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        from pagelab.provenance import version_line

        print(version_line())
        parser.exit()


#: Exit statuses (docs/reliability.md): bad input (a configuration, a file,
#: an argument) is 2, as argparse's own errors are; a run that fails
#: (simulated memory exhausted, a stale translation, a worker that died, a
#: bug) is 1; Ctrl-C is 130.
EXIT_RUN_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130


def exit_status(e: BaseException) -> int:
    """The exit status of an error that reached the command line."""
    if isinstance(e, (_pagelab.SimulationError, _pagelab.InternalError, WorkerDied)):
        return EXIT_RUN_FAILED
    if isinstance(e, (_pagelab.PagelabError, ExecutorUnavailable, OSError)):
        return EXIT_BAD_INPUT
    return EXIT_RUN_FAILED


def main(argv: list[str] | None = None) -> int:
    import os

    args = parser().parse_args(argv)
    if args.debug:
        # Read by the extension (a caught panic's location) and inherited
        # by the sweep's workers.
        os.environ["PAGELAB_DEBUG"] = "1"
    if args.host_mem is not None:
        # Read by the core (engine/host_budget.rs), inherited by workers.
        os.environ["PAGELAB_HOST_MEM"] = args.host_mem
    try:
        for option in ("out", "export_phys", "parquet"):
            # An empty name would be the current directory, or no output.
            if getattr(args, option, None) == "":
                raise _pagelab.PagelabError(f"--{option.replace('_', '-')}: an empty name")
        return args.func(args)
    except (_pagelab.PagelabError, ExecutorUnavailable, WorkerDied) as e:
        print(f"pagelab: error: {e}", file=sys.stderr)
        return exit_status(e)
    except OSError as e:
        # Writing results (a directory that is a file, no permission...).
        print(f"pagelab: error: cannot write {e.filename or 'output'}: {e.strerror}", file=sys.stderr)
        return exit_status(e)
    except KeyboardInterrupt:
        # A call into the core abandoned mid-way (api.interruptible) may
        # still hold temporary files.
        _pagelab.remove_temporary_files()
        print("pagelab: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as e:
        # A bug: one line, the traceback under --debug.
        if args.debug:
            import traceback

            traceback.print_exc()
        where = "" if args.debug else " (pagelab --debug ... shows where)"
        print(f"pagelab: internal error (please report): {type(e).__name__}: {e}{where}", file=sys.stderr)
        return EXIT_RUN_FAILED


if __name__ == "__main__":
    sys.exit(main())
