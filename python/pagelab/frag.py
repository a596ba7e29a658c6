"""`pagelab frag capture FILE` and `pagelab frag show FILE`: real machines'
fragmentation, for `os.fragmentation.snapshot = FILE`.

A capture is this machine's `/proc/buddyinfo` and `/proc/pagetypeinfo`,
verbatim, each after a `== /proc/...` line (pagetypeinfo is readable by
root only). On a VM the kernel's zones cover only part of the host's RAM:
a capture is an example of the format, not of a big server.
"""

from __future__ import annotations

import argparse
import datetime
import socket
from pathlib import Path

from rich.console import Console

from pagelab import _pagelab
from pagelab.api import interruptible
from pagelab.experiments.common import legend_beside, share_axis, write_figure
from pagelab.output import output_file, pyplot
from pagelab.table import narrow_table, numeric_column

SOURCES = ["/proc/buddyinfo", "/proc/pagetypeinfo"]


def capture(path: Path) -> None:
    parts = [f"# pagelab fragmentation snapshot of {socket.gethostname()}, {datetime.datetime.now().isoformat(timespec='seconds')}\n"]
    for source in SOURCES:
        try:
            text = Path(source).read_text()
        except OSError as e:
            raise _pagelab.PagelabError(f"cannot read {source}: {e.strerror} (pagetypeinfo needs root)") from None
        parts.append(f"== {source}\n{text}")
    path.parent.mkdir(parents=True, exist_ok=True)
    with output_file(path) as tmp:
        tmp.write_text("".join(parts), encoding="utf-8")
        # A capture pagelab cannot read is refused, not left at `path`.
        interruptible(_pagelab.frag_snapshot, str(tmp), str(path))


def show(path: Path, out: Path | None, console: Console) -> None:
    s = interruptible(_pagelab.frag_snapshot, str(path))
    gib = s["frames"] * 4096 / 2**30
    table = narrow_table(f"{path}: {gib:.1f} GiB, F_i = {s['fi']:.3f}")
    for col in ("order", "block", "free", "unmovable", "movable", "reclaim.", "frag idx", "unusable"):
        numeric_column(table, col)
    for o, n in enumerate(s["free"]):
        cells = [s[k][o] if o < len(s[k]) else 0 for k in ("free_unmovable", "free_movable", "free_reclaimable")]
        fidx = s["fragmentation_index"][o]
        table.add_row(
            str(o), f"{4 << o} KiB" if o < 8 else f"{(4 << o) // 1024} MiB", f"{n:,}", *[f"{c:,}" for c in cells],
            "succeeds" if fidx < 0 else f"{fidx:.3f}", f"{s['unusable_index'][o]:.3f}",
        )
    console.print(table)
    console.print(
        "free: free blocks of the order (then by migratetype); frag idx: Linux's fragmentation index "
        "of the order; unusable: Linux's unusable free space index"
    )
    console.print("F_i: the fraction of memory that free 2 MiB blocks cannot back (Colored Huge Pages' definition).")
    if out:
        plot(s, path.name, out)
        console.print(f"wrote {out}")


def plot(s: dict, title: str, out: Path) -> None:
    plt = pyplot()
    orders = list(range(len(s["free"])))
    mib = [n * (4 << o) / 1024 for o, n in enumerate(s["free"])]
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.6))
    a.bar(orders, mib)
    a.set_xlabel("order (a block of order k is 2^k x 4 KiB)")
    a.set_ylabel("free memory in blocks of this order (MiB)")
    a.set_title(title)
    b.plot(orders, s["unusable_index"], marker="o", label="unusable free space index")
    b.plot(orders, [max(0.0, v) for v in s["fragmentation_index"]], marker="s", label="fragmentation index (>= 0)")
    b.set_xlabel("order")
    share_axis(b, "Linux's index (0 to 1)")
    legend_beside(fig)
    write_figure(fig, out)


def main(args: argparse.Namespace) -> int:
    console = Console()
    if args.frag_command == "capture":
        capture(Path(args.file))
        console.print(f"wrote {args.file}")
    else:
        show(Path(args.file), Path(args.out) if args.out else None, console)
    return 0
