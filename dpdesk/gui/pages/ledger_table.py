"""What the Audit page shows of a ledger, as data: the ledger table's rows and the requesters' accounts
read in one go (worker-thread safe), the cost curve as a held step line, an entry's details shortened
for display, and the table's filter by kind."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from PySide6.QtCore import QSortFilterProxyModel, Qt

from dpdesk.gui.widgets.models import ledger_rows
from dpdesk.gui.widgets.plots import pg
from dpdesk.store.ledger import thaw
from dpdesk.store.requesters import accounts, requester_of

if TYPE_CHECKING:
    from dpdesk.store.ledger import LedgerEntry
    from dpdesk.store.project import Project
    from dpdesk.store.requesters import RequesterAccount

__all__ = [
    "PEOPLE_HEADERS",
    "REPORT_PLOT_SIZE",
    "RESIZE_ROWS",
    "SHOWN_ITEMS",
    "KindFilter",
    "LedgerTable",
    "draw_cost_curve",
    "ledger_table",
    "shorten",
    "shortened",
    "staircase",
]

DETAIL_VALUES = 24  # released values shown in an entry's details (a partition release may hold millions)


def shortened(obj: dict) -> dict:
    """The entry for display: a long list of released values cut to its first :data:`DETAIL_VALUES`."""
    payload = dict(obj.get("payload", {}))
    values = thaw(payload.get("values", ()))
    flat = [v for g in values for v in (g if isinstance(g, list) else [g])]
    if len(flat) > DETAIL_VALUES:
        payload["values"] = (
            f"{len(flat):,} values: {', '.join(map(str, flat[:DETAIL_VALUES]))}, … (export the table)"
        )
        return {**obj, "payload": payload}
    return obj


class KindFilter(QSortFilterProxyModel):
    """The ledger table's search and sort, and its filter by entry kind."""

    def __init__(self) -> None:
        super().__init__()
        self.kind = "all"
        self.setSortRole(Qt.ItemDataRole.UserRole)
        self.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.setFilterKeyColumn(-1)

    def filterAcceptsRow(self, row: int, parent) -> bool:
        if self.kind != "all":
            if self.sourceModel().index(row, 2, parent).data() != self.kind:
                return False
        return super().filterAcceptsRow(row, parent)


def staircase(curve: list[tuple[int, float]]) -> tuple[np.ndarray, np.ndarray]:
    """The cost after each ledger entry as a step line that holds its last level (never drops to 0)."""
    if not curve:
        return np.zeros(1), np.zeros(1)
    xs, ys = [], []
    for (x, y), (x_next, _) in zip(curve, [*curve[1:], (curve[-1][0] + 0.5, None)]):
        xs += [x, x_next]
        ys += [y, y]
    return np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)


def draw_cost_curve(
    plot: pg.PlotWidget, curve: list[tuple[int, float]], total: float, accounting: Any = None
) -> None:
    """System cost after each ledger entry as a held step line, with the total budget marked; in a zCDP
    project (``accounting``; costs and total in ρ) the privacy loss ε each largest cell's ρ states."""
    plot.clear()
    plot.setLabel("bottom", "ledger entry")
    if accounting is not None:
        curve = [(seq, accounting.epsilon_of(cost)) for seq, cost in curve]
        total = accounting.epsilon
    plot.setLabel(
        "left",
        "system cost (max over cells)"
        if accounting is None
        else f"system cost: ε at δ = {accounting.delta:g} of the largest cell's ρ",
    )
    plot.showGrid(x=True, y=True, alpha=0.2)
    xs, ys = staircase(curve)
    plot.addItem(
        pg.PlotDataItem(xs, ys, pen=pg.mkPen("#1f5fa8", width=2), fillLevel=0, brush=(31, 95, 168, 40))
    )
    last = int(curve[-1][0]) if curve else 1
    # ledger entries are whole numbers: integer ticks, about ten of them
    plot.getAxis("bottom").setTickSpacing(max(1, math.ceil(last / 10)), 1)
    plot.setXRange(0, max(last, 1) + 0.5, padding=0.02)
    plot.addItem(
        pg.InfiniteLine(
            pos=total,
            angle=0,
            pen=pg.mkPen("#c0392b", width=1.5, style=Qt.PenStyle.DashLine),
            label=f"total budget {total:g}",
            labelOpts={"position": 0.1, "color": "#c0392b"},
        )
    )
    plot.setYRange(0, total * 1.08)


SHOWN_ITEMS = 12
RESIZE_ROWS = 200  # columns fit the first rows' contents (measuring thousands of rows stalls the window)


@dataclass(frozen=True)
class LedgerTable:
    """What the page shows of a ledger, read in one go (worker-thread safe: no Qt)."""

    entries: list[LedgerEntry]
    rows: list[tuple[object, ...]]
    accounts: list[RequesterAccount]
    curve: list[tuple[int, float]]


def ledger_table(project: Project) -> LedgerTable:
    """The ledger table's rows, the requesters' accounts and the cost curve of ``project`` (a Project)."""
    view, reqs, schema = project.view(), project.requests(), project.schema
    entries = list(view.entries)
    return LedgerTable(
        entries,
        ledger_rows(entries, schema, requester_of(reqs)),
        accounts(entries, reqs, describe=lambda r: r.describe(schema), schema=schema),
        view.cost_curve(),
    )


REPORT_PLOT_SIZE = (960, 420)
PEOPLE_HEADERS = ("requester", "answered", "rejected", "pending", "α spent")


def shorten(obj: Any) -> Any:
    """``obj`` with every list longer than SHOWN_ITEMS cut to its first items and a count."""
    if isinstance(obj, dict):
        return {k: shorten(v) for k, v in obj.items()}
    if isinstance(obj, list):
        items = [shorten(v) for v in obj[:SHOWN_ITEMS]]
        return (
            items + [f"… {len(obj) - SHOWN_ITEMS} more ({len(obj)} in all)"]
            if len(obj) > SHOWN_ITEMS
            else items
        )
    return obj
