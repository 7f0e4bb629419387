"""Zero-cost estimates and synthetic tables of a project: plans from its ledger, files after recording.

The plans are the estimates' kinds' (``Project.plan(AdHoc("estimate", …))``, through the one assess
function); :func:`ledger_inputs` and :func:`query_inputs` copy what they read out of one moment of the
ledger view for a dialog that fits on a worker; ``Project.release(plan)`` records them like every release. Nothing here reads the table: a project
whose source is gone still estimates and exports (post-processing of what was released).
:func:`write_rows` and :func:`write_report` write the synthetic table and its fit report — only
after the release is recorded, and atomically (a failed write leaves no partial file).
"""

from __future__ import annotations

import csv
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from dpdesk.engine.errors import Cancelled, DpdeskError
from dpdesk.engine.estimates.plans import HistoryInputs, history_inputs
from dpdesk.engine.estimates.synthetic import SyntheticPlan
from dpdesk.engine.mechanisms.base import Basis
from dpdesk.engine.queries.text import query_from_input
from dpdesk.store.atomic import check_target, write_atomically

__all__ = [
    "TABLE_FORMATS",
    "check_table_path",
    "ledger_inputs",
    "query_inputs",
    "report_path",
    "write_report",
    "write_rows",
]

TABLE_FORMATS = (".csv", ".parquet")
_CHUNK = 1 << 16


def ledger_inputs(
    project: Any, table_size: float | None = None, query: Any = None
) -> tuple[HistoryInputs, Any]:
    """The plans' inputs from one moment of the ledger view (and history's own estimate of ``query``)."""
    declared = None if project.prior is None else float(project.prior.table_size)
    settings = project.answering_settings().to_json()
    with project.view().assessing() as s:  # history, head and settings of one moment
        seq, head = s.head
        inputs = history_inputs(
            s.history,
            project.schema.names,
            Basis(head, seq, settings),
            table_size=table_size,
            declared_size=declared,
            left_out=len(s.structured),
        )
        unbiased = None if query is None else s.history.estimate(query)
    return inputs, unbiased


def query_inputs(project: Any, text: str, table_size: float | None = None) -> tuple[HistoryInputs, Any, Any]:
    """``(inputs, query, history's own estimate of it)`` for the query ``text`` (quick: run it on the caller's thread)."""
    schema = project.schema
    query = query_from_input(text, schema.n_cells, schema.shape, schema)
    inputs, unbiased = ledger_inputs(project, table_size, query)
    return inputs, query, unbiased


def check_table_path(out: str | os.PathLike[str]) -> Path:
    """``out`` if it names a CSV or Parquet file in an existing folder, else a one-line error."""
    path = Path(out)
    if path.suffix.lower() not in TABLE_FORMATS:
        raise DpdeskError(
            f"{path}: the synthetic table is written as {' or '.join(TABLE_FORMATS)} (by the name's ending)"
        )
    return check_target(path)


def _write_csv(
    codes: np.ndarray,
    schema: Any,
    path: Path,
    progress: Callable[[float], None] | None,
    cancelled: Callable[[], bool] | None,
) -> None:
    labels = [np.asarray(a.labels, dtype=object) for a in schema.attributes]
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(schema.names)
        for s in range(0, codes.shape[0], _CHUNK):
            if cancelled is not None and cancelled():
                raise Cancelled()
            block = codes[s : s + _CHUNK]
            w.writerows(zip(*(lab[block[:, d]] for d, lab in enumerate(labels))))
            if progress is not None:
                progress(min(1.0, (s + _CHUNK) / codes.shape[0]))


def write_rows(
    plan: SyntheticPlan,
    schema: Any,
    out: str | os.PathLike[str],
    *,
    progress: Callable[[float], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> Path:
    """Write the plan's synthetic rows (the schema's attributes, by label) to ``out`` (.csv or .parquet)."""
    path = check_table_path(out)
    if path.suffix.lower() == ".csv":
        write_atomically(path, lambda tmp: _write_csv(plan.codes, schema, tmp, progress, cancelled))
        return path

    def parquet(tmp: Path) -> None:
        import duckdb

        with tempfile.TemporaryDirectory(dir=path.parent) as folder:
            staged = Path(folder) / "rows.csv"
            _write_csv(plan.codes, schema, staged, progress, cancelled)
            con = duckdb.connect()
            try:
                columns = {n: "VARCHAR" for n in schema.names}  # labels stay text, as in the CSV
                con.execute(
                    f"COPY (SELECT * FROM read_csv(?, header=true, columns={columns!r})) "
                    f"TO '{str(tmp).replace(chr(39), chr(39) * 2)}' (FORMAT PARQUET)",
                    [str(staged)],
                )
            finally:
                con.close()

    write_atomically(path, parquet)
    return path


def report_path(table: str | os.PathLike[str]) -> Path:
    """Where the fit report of a synthetic table goes by default: ``NAME-fit.csv`` beside it."""
    path = Path(table)
    return path.with_name(f"{path.stem}-fit.csv")


def write_report(plan: SyntheticPlan, out: str | os.PathLike[str], describe: Callable[[Any], str]) -> Path:
    """The fit report as CSV: for every released row, the released value, the fit's and the table's."""
    path = Path(out)
    if not path.parent.is_dir():
        raise DpdeskError(f"{path}: folder {path.parent} does not exist")

    def write(tmp: Path) -> None:
        with tmp.open("w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(["row", "query", "released", "fitted", "synthetic"])
            for i, released, fitted, synthetic in plan.report():
                w.writerow(
                    [
                        i + 1,
                        describe(plan.released.queries[i]),
                        f"{released:.6g}",
                        f"{fitted:.6g}",
                        f"{synthetic:.6g}",
                    ]
                )

    write_atomically(path, write)
    return path
