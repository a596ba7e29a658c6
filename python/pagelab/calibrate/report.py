"""The table `pagelab calibrate` prints and writes: each row measured
against predicted, which rows judge the model, and the targets."""

from __future__ import annotations

import dataclasses
import io

from rich.console import Console

from pagelab.calibrate.native import MIB
from pagelab.calibrate.predict import MODES, Row
from pagelab.table import narrow_table, numeric_column, text_column

CSV_COLUMNS = ["loop", "page_size", "footprint_mib", "measured_ns",
               "predicted_native_ns", "predicted_virt4k_ns", "predicted_virt2m_ns"]
#: The issue's targets: a judged row's predicted / measured, and the THP
#: speedup's predicted / measured.
ROW_TARGET = (0.67, 1.5)
SPEEDUP_TARGET = (0.8, 1.25)


@dataclasses.dataclass(frozen=True)
class Table:
    """Measured and predicted ns per access of every row, and the L2 TLB's
    reach in each page size (a row beyond it judges the model)."""

    rows: list[Row]
    measured: dict[Row, float]
    predicted: dict[tuple[Row, str], float]
    reach: dict[str, int]

    def judges(self, row: Row) -> bool:
        return row.footprint > self.reach[row.page_size]

    def ratio(self, row: Row, mode: str) -> float:
        return self.predicted[(row, mode)] / self.measured[row]

    def speedups(self) -> list[tuple[str, int, Row, Row]]:
        """(loop, footprint, 4 KiB row, THP row) where both were run."""
        by_key = {(r.loop, r.page_size, r.footprint): r for r in self.rows}
        return [(loop, fp, by_key[(loop, "4k", fp)], by_key[(loop, "thp", fp)])
                for (loop, size, fp) in by_key if size == "4k" and (loop, "thp", fp) in by_key]

    def measured_speedup(self, small: Row, huge: Row) -> float:
        return self.measured[small] / self.measured[huge]

    def predicted_speedup(self, small: Row, huge: Row, mode: str) -> float:
        return self.predicted[(small, mode)] / self.predicted[(huge, mode)]


def csv_text(table: Table) -> str:
    """calibrate.csv: one line per row, the columns of `CSV_COLUMNS`."""
    out = io.StringIO()
    out.write(",".join(CSV_COLUMNS) + "\n")
    for row in table.rows:
        values = [row.loop, row.page_size, f"{row.footprint // MIB}", f"{table.measured[row]:.3f}"]
        values += [f"{table.predicted[(row, mode)]:.3f}" for mode in MODES]
        out.write(",".join(values) + "\n")
    return out.getvalue()


def _within(value: float, target: tuple[float, float]) -> bool:
    return target[0] <= value <= target[1]


def targets(table: Table) -> dict[str, dict[str, str]]:
    """Per mode, how many judged rows and THP speedups meet their targets."""
    judged = [r for r in table.rows if table.judges(r)]
    pairs = table.speedups()
    out = {}
    for mode in MODES:
        rows_ok = sum(_within(table.ratio(r, mode), ROW_TARGET) for r in judged)
        speed_ok = sum(_within(table.predicted_speedup(s, h, mode) / table.measured_speedup(s, h), SPEEDUP_TARGET)
                       for _, _, s, h in pairs)
        out[mode] = {"judged_rows": f"{rows_ok}/{len(judged)}", "thp_speedups": f"{speed_ok}/{len(pairs)}"}
    return out


def print_tables(table: Table, console: Console | None = None) -> None:
    console = console or Console()
    rows = narrow_table("ns per access, measured and predicted (x = predicted / measured)")
    text_column(rows, "loop", [r.loop for r in table.rows])
    text_column(rows, "page", [r.page_size for r in table.rows])
    for header in ["MiB", "judges", "measured", "native", "x", "virt4k", "x", "virt2m", "x"]:
        numeric_column(rows, header)
    for r in table.rows:
        cells = [r.loop, r.page_size, f"{r.footprint // MIB}", "yes" if table.judges(r) else "-",
                 f"{table.measured[r]:.1f}"]
        for mode in MODES:
            cells += [f"{table.predicted[(r, mode)]:.1f}", f"{table.ratio(r, mode):.2f}"]
        rows.add_row(*cells)
    console.print(rows)
    speed = narrow_table("THP speedup, 4 KiB ns / THP ns (x = predicted / measured)")
    text_column(speed, "loop", [loop for loop, *_ in table.speedups()])
    for header in ["MiB", "measured", "native", "x", "virt4k", "x", "virt2m", "x"]:
        numeric_column(speed, header)
    for loop, fp, small, huge in table.speedups():
        m = table.measured_speedup(small, huge)
        cells = [loop, f"{fp // MIB}", f"{m:.2f}"]
        for mode in MODES:
            p = table.predicted_speedup(small, huge, mode)
            cells += [f"{p:.2f}", f"{p / m:.2f}"]
        speed.add_row(*cells)
    console.print(speed)
    for mode, met in targets(table).items():
        console.print(f"{mode}: judged rows within {ROW_TARGET[0]}-{ROW_TARGET[1]}x: {met['judged_rows']}; "
                      f"THP speedups within {SPEEDUP_TARGET[0]}-{SPEEDUP_TARGET[1]}x: {met['thp_speedups']}")
