"""The audit exports of a project: the ledger CSV and the self-contained HTML audit report.

Both only read the project (the ledger is never touched by an export), so they may run on a worker
thread through a sibling connection (``Project.sibling``); on a long project they take long (the
report's integrity check replays the whole ledger: minutes on thousands of entries over 10⁶ cells), so
they report progress and stop when asked (:class:`~dpdesk.engine.errors.Cancelled`). The file is
written whole or not at all (:mod:`dpdesk.store.atomic`): a cancel or a failure leaves no half-written
file and an older export under that name as it was.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from dpdesk.engine.budget.accounting import preview
from dpdesk.engine.errors import Cancelled
from dpdesk.store.atomic import write_atomically
from dpdesk.store.report import CELLS_LISTED, cells_csv_parts, html_parts, write_csv
from dpdesk.store.requesters import accounts, requester_of
from dpdesk.store.verify import VerifyReport

__all__ = ["export_csv", "export_report", "report_html", "report_parts"]

Progress = Callable[[float], None] | None
Cancel = Callable[[], bool] | None
VERIFY_SHARE = 0.85  # of the report's progress bar: the integrity check is nearly all of its time
_CELL_CHUNK = 4096
_PART_STEP = 256  # pieces of the report written between progress reports and cancel checks


def _part(progress: Progress, start: float, width: float) -> Progress:
    return None if progress is None else (lambda f: progress(start + width * f))


def export_csv(
    project: Any, out: str | os.PathLike[str], *, progress: Progress = None, cancelled: Cancel = None
) -> int:
    """Write the ledger CSV (:func:`~dpdesk.store.report.ledger_csv`'s text) of ``project`` to ``out``;
    returns the number of entries written."""
    view = project.view()
    entries = list(view.entries)
    charges, requesters = view.largest_charges(), requester_of(project.requests())

    def write(tmp: Path) -> None:
        with tmp.open("w", encoding="utf-8", newline="") as f:
            write_csv(f, entries, charges, requesters, progress=progress, cancelled=cancelled)

    write_atomically(out, write, cancelled)
    return len(entries)


def report_html(
    project: Any, images: Mapping[str, bytes], *, progress: Progress = None, cancelled: Cancel = None
) -> tuple[str, VerifyReport]:
    """The audit report of ``project`` as one HTML string, with the integrity check it states.

    ``images``: title → PNG bytes (the app draws them on its GUI thread before the rest runs elsewhere).
    """
    parts, verdict = report_parts(project, images, progress=progress, cancelled=cancelled)
    return "".join(parts), verdict


def report_parts(
    project: Any,
    images: Mapping[str, bytes],
    *,
    progress: Progress = None,
    cancelled: Cancel = None,
    cells_file: str | None = None,
    cell_rows_out: list[tuple[str, float]] | None = None,
) -> tuple[list[str], VerifyReport]:
    """:func:`report_html`'s text in pieces (``report.html_parts``), so it is written without being built
    whole: one 268 MB string, and its encoding, would hold the interpreter for seconds at a time."""
    verdict = project.verify(progress=_part(progress, 0.0, VERIFY_SHARE), cancelled=cancelled)
    view, schema = project.view(), project.schema
    costs = view.cell_costs
    budget = preview(  # in the project's unit (ε or ρ), one person's
        costs, project.answering_settings().total_budget, accounting=view.accounting, rule=view.rule
    )
    touched = np.flatnonzero(costs)
    cell_rows: list[tuple[str, float]] = []
    rest = _part(progress, VERIFY_SHARE, 1.0 - VERIFY_SHARE)
    for i in range(0, len(touched), _CELL_CHUNK):  # a box over a 10⁶-cell cube touches many cells
        if cancelled is not None and cancelled():
            raise Cancelled("report cancelled")
        cell_rows += [(schema.describe_cell(int(c)), float(costs[c])) for c in touched[i : i + _CELL_CHUNK]]
        if rest is not None:
            rest(0.5 * min(len(touched), i + _CELL_CHUNK) / len(touched))
    entries, reqs = list(view.entries), project.requests()
    parts = html_parts(
        name=str(project.name),
        path=str(project.path),
        total_budget=budget.total,
        remaining=budget.remaining,
        system_cost=budget.system_cost,
        entries=entries,
        cell_rows=cell_rows,
        verify=verdict,
        images=dict(images),
        charges=view.largest_charges(),
        delta_cap=project.delta_cap,
        delta_spent=view.delta_spent,
        requesters=requester_of(reqs),
        accounts=accounts(entries, reqs, describe=lambda r: r.describe(schema), schema=schema),
        claims=[{**c.watched.to_json(), **c.to_json()} for c in project.claim_statuses()],
        accounting=project.accounting,
        cells_file=cells_file,
        n_cells=schema.n_cells,
        cost_words="most-spent cell" if view.rule.rows_are_people else view.rule.words(),
    )
    if cell_rows_out is not None:
        cell_rows_out.extend(cell_rows)
    if progress is not None:
        progress(1.0)
    return parts, verdict


def cells_file_for(out: str | os.PathLike[str]) -> Path:
    """Where a report's whole per-cell table goes: ``REPORT-cells.csv`` beside ``REPORT.html``."""
    out = Path(out)
    return out.with_name(f"{out.stem}-cells.csv")


def export_report(
    project: Any,
    out: str | os.PathLike[str],
    images: Mapping[str, bytes],
    *,
    progress: Progress = None,
    cancelled: Cancel = None,
) -> VerifyReport:
    """Write :func:`report_html` of ``project`` to ``out``; returns the integrity check it states.

    A project with more costed cells than the page lists also gets the whole table as
    :func:`cells_file_for` ``(out)``, written before the report that names it."""
    cells_path = cells_file_for(out)
    rows: list[tuple[str, float]] = []
    parts, verdict = report_parts(
        project,
        images,
        progress=_part(progress, 0.0, 0.95),
        cancelled=cancelled,
        cells_file=cells_path.name,
        cell_rows_out=rows,
    )
    if len(rows) > CELLS_LISTED:
        text = cells_csv_parts(rows)

        def write_cells(tmp: Path) -> None:
            with tmp.open("w", encoding="utf-8", newline="") as f:
                f.writelines(text)

        write_atomically(cells_path, write_cells, cancelled)

    def write(tmp: Path) -> None:
        with tmp.open("w", encoding="utf-8", newline="\n") as f:
            for i, part in enumerate(parts):
                if i % _PART_STEP == 0:
                    if cancelled is not None and cancelled():
                        raise Cancelled("report cancelled")
                    if progress is not None:
                        progress(0.95 + 0.05 * i / len(parts))
                f.write(part)

    write_atomically(out, write, cancelled)
    if progress is not None:
        progress(1.0)
    return verdict
