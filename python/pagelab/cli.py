"""The `pagelab` command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pagelab import _pagelab
from pagelab.api import run
from pagelab.output import write_run
from pagelab.table import print_summary


def progress_bar():
    """A rich progress bar on stderr when it is a terminal; else nothing."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    bar = Progress(
        TextColumn("simulating"),
        BarColumn(),
        TextColumn("{task.completed:,.0f}/{task.total:,.0f} accesses"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        disable=not sys.stderr.isatty(),
        transient=True,
    )
    return bar


def cmd_run(args: argparse.Namespace) -> int:
    with progress_bar() as bar:
        task = bar.add_task("run", total=None)

        def update(done: int, expected: int) -> None:
            bar.update(task, completed=done, total=max(done, expected))

        result = run(args.config, set=args.set, export_phys=args.export_phys, progress=update)
    if args.out:
        write_run(Path(args.out), result)
    print_summary(result.stats, result.seconds)
    return 0


def cmd_presets(_args: argparse.Namespace) -> int:
    for name in _pagelab.presets():
        print(name)
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from pagelab.bench import main as bench_main

    return bench_main(args)


def cmd_demo(args: argparse.Namespace) -> int:
    from pagelab.demo import main as demo_main

    return demo_main(args)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="pagelab", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    r = sub.add_parser("run", help="run one configuration")
    r.add_argument("config", help="a TOML configuration file")
    r.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a key (repeatable)")
    r.add_argument("--out", metavar="DIR", help="write stats.json and config.resolved.toml here")
    r.add_argument("--export-phys", metavar="FILE", help="write every physical reference (R/W/P lines; .zst compresses)")
    r.set_defaults(func=cmd_run)

    pr = sub.add_parser("presets", help="list the machine presets")
    pr.set_defaults(func=cmd_presets)

    b = sub.add_parser("bench", help="measure the simulator's speed (accesses/s)")
    b.add_argument("--quick", action="store_true", help="smaller runs (a smoke test, not a measurement)")
    b.add_argument("--repeat", type=int, default=3, help="runs per case; the best is reported")
    b.set_defaults(func=cmd_bench)

    d = sub.add_parser("demo", help="base vs thp vs coloring on gups and bfs, fresh and fragmented")
    d.add_argument("--out", default="out/demo", metavar="DIR")
    d.add_argument("--quick", action="store_true", help="smaller footprints")
    d.set_defaults(func=cmd_demo)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except _pagelab.PagelabError as e:
        print(f"pagelab: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        # Writing results (a directory that is a file, no permission...).
        print(f"pagelab: error: cannot write {e.filename or 'output'}: {e.strerror}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("pagelab: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
