"""Qt item models over values the views show: a bounded table preview, the request queue, the ledger.

Models hold plain lists (or one DataFrame) handed to them; they never query the project themselves.
The preview model is virtual: Qt asks only for the visible cells, so a 100,000-row preview costs
nothing until scrolled.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QObject, QPersistentModelIndex, Qt
from PySide6.QtGui import QBrush, QColor

if TYPE_CHECKING:
    import pandas as pd

    from dpdesk.engine.schema import Schema
    from dpdesk.store.ledger import LedgerEntry
    from dpdesk.store.requests import StoredRequest

Index = QModelIndex | QPersistentModelIndex
STATUS_COLOURS = {"pending": "#1f5fa8", "answered": "#237a36", "rejected": "#a8321f"}


class DataFrameModel(QAbstractTableModel):
    """Read-only view of a pandas DataFrame (the private preview of a table)."""

    def __init__(self, frame: pd.DataFrame | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._df = frame

    def set_frame(self, frame: pd.DataFrame | None) -> None:
        self.beginResetModel()
        self._df = frame
        self.endResetModel()

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if self._df is None or parent.isValid() else len(self._df)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if self._df is None or parent.isValid() else len(self._df.columns)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role == Qt.ItemDataRole.DisplayRole and self._df is not None:
            v = self._df.iat[index.row(), index.column()]
            return "" if v is None or (isinstance(v, float) and v != v) else str(v)
        return None

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if role != Qt.ItemDataRole.DisplayRole or self._df is None:
            return None
        if orientation == Qt.Orientation.Horizontal:
            return str(self._df.columns[section])
        return str(section + 1)


# four significant digits for the privacy losses a table lists (the details and the ledger keep them all)
FLOAT_FORMATS = {"α spent": ".4g", "risk left": ".4g"}


class RowsModel(QAbstractTableModel):
    """A table of rows given as tuples, with fixed headers; ``payload(row)`` returns the source object."""

    def __init__(self, headers: Sequence[str], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._headers = list(headers)
        self._rows: list[tuple[Any, ...]] = []
        self._payloads: list[object] = []
        self._tips: list[tuple[Any, ...] | None] = []

    def set_rows(
        self,
        rows: Sequence[tuple[Any, ...]],
        payloads: Sequence[object],
        tips: Sequence[tuple[Any, ...] | None] | None = None,
    ) -> None:
        """Show ``rows``. Rows appended after the ones shown are inserted and rows changed in place are
        updated, so a view repaints only those (a release decides one request of thousands); anything
        else resets the model. ``tips``: per row, a tuple of tooltips (None: a cell's tooltip is its
        text)."""
        new, old = list(rows), self._rows
        self._tips = list(tips) if tips is not None else []
        if len(new) < len(old) or not old or (new[: len(old)] != old and len(new) != len(old)):
            self.beginResetModel()
            self._rows, self._payloads = new, list(payloads)
            self.endResetModel()
            return
        self._payloads = list(payloads)
        changed = [i for i in range(len(old)) if new[i] != old[i]]
        self._rows[: len(old)] = new[: len(old)]
        for i in changed:
            self.dataChanged.emit(self.index(i, 0), self.index(i, len(self._headers) - 1))
        if len(new) > len(old):
            self.beginInsertRows(QModelIndex(), len(old), len(new) - 1)
            self._rows.extend(new[len(old) :])
            self.endInsertRows()

    def payload(self, row: int) -> Any:
        return self._payloads[row]

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self._headers)

    def _text(self, value: Any, column: int) -> str:
        if isinstance(value, str):
            return value
        if value is None:
            return ""
        if isinstance(value, float):
            return format(value, FLOAT_FORMATS.get(self._headers[column], "g"))
        return str(value)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        value = self._rows[index.row()][index.column()]
        if role == Qt.ItemDataRole.DisplayRole:
            return self._text(value, index.column())
        if role == Qt.ItemDataRole.ToolTipRole:  # a cell cut by its column reads whole on hover
            tips = self._tips[index.row()] if index.row() < len(self._tips) else None
            return (tips[index.column()] if tips else None) or self._text(value, index.column()) or None
        if role == Qt.ItemDataRole.UserRole:  # sort key
            return value
        if role == Qt.ItemDataRole.ForegroundRole and self._headers[index.column()] in ("status", "kind"):
            colour = STATUS_COLOURS.get(str(value)) or {"fresh": "#a8321f", "inferred": "#237a36"}.get(
                str(value)
            )
            return QBrush(QColor(colour)) if colour else None
        return None

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return self._headers[section]
        return None


def plural(n: int, one: str, many: str | None = None) -> str:
    """``1 request``, ``2 requests`` (``many`` for irregular plurals)."""
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


def asks(text: str) -> str:
    """What a count asks, short enough for a narrow column: ``count(sex="F", age="0-30")`` reads
    ``sex=F · age=0-30`` (the labels first, not ``count(sex="…``); a weighted or combined query, or
    another kind, keeps its text. The full text is the cell's tooltip."""
    t = text.strip()
    if not (t.startswith("count(") and t.endswith(")")) or t.count("count(") != 1:
        return t
    inner = t[len("count(") : -1].strip()
    if not inner:
        return "every record"
    if "[" in inner:  # label lists: keep them as typed, without the count( ) around
        return inner
    parts = [p.strip() for p in inner.split(",")]
    if not all("=" in p for p in parts):
        return inner
    return " · ".join(
        f"{p.split('=', 1)[0].strip()}={p.split('=', 1)[1].strip().strip(chr(34))}" for p in parts
    )


def request_rows(requests: Sequence[StoredRequest], schema: Schema | None = None) -> list[tuple[Any, ...]]:
    return [
        (
            r.id,
            r.requester,
            asks(r.describe(schema)),
            r.eps if r.eps is not None else r.terms(),
            "" if r.delta is None else r.delta,
            r.status,
        )
        for r in requests
    ]


def request_tips(requests: Sequence[StoredRequest], schema: Schema | None = None) -> list[tuple[Any, ...]]:
    """The queue's tooltips: the query's full text form."""
    return [(None, None, r.describe(schema), None, None, None) for r in requests]


REQUEST_HEADERS = ("id", "requester", "query", "±ε", "δ", "status")
# "released" as in the CSV export: what the requester received (the CSV's "answer" is the raw noisy ỹ)
LEDGER_HEADERS = ("seq", "time", "kind", "request", "requester", "released", "α spent", "summary")


def query_summary(payload: Mapping[str, Any], schema: Schema | None) -> str:
    """A ledger entry's query as typed, or by its cells' labels (never a list of indices)."""
    if payload.get("query_text"):
        return str(payload["query_text"])
    from dpdesk.store.ledger import thaw

    raw = thaw(payload.get("query", {}))  # the ledger keeps payloads frozen (tuples); the parser reads lists
    if schema is not None and raw:
        from dpdesk.engine.queries.query import query_from_json
        from dpdesk.engine.queries.text import describe_query

        try:
            return describe_query(query_from_json(raw, schema.n_cells, schema.shape), schema)
        except ValueError:
            pass  # an entry this schema cannot read: show it raw rather than hide it
    return json.dumps(raw, default=list)


def ledger_rows(
    entries: Sequence[LedgerEntry], schema: Schema | None = None, requesters: dict[str, str] | None = None
) -> list[tuple[Any, ...]]:
    """Rows of the ledger table (``requesters``: request id → requester, joined from the queue)."""
    requesters = requesters or {}
    from dpdesk.engine.answering.rounding import shown_value
    from dpdesk.store.report import entry_summary

    rows = []
    for e in entries:
        p = e.payload
        # what the requester received (fused, when fresh and fused), as shown everywhere: a count rounded to
        # an integer (engine/answering/rounding.py; the ledger keeps it exact); None for several values
        answer = None if e.released is None else shown_value(e.released, e.integral)
        alpha = float(p.get("alpha", 0.0)) if e.kind not in ("inferred", "rejected", "rebind") else 0.0
        if e.kind in ("fresh", "inferred"):
            summary = query_summary(p, schema)
        elif e.kind in ("rejected", "rebind"):
            summary = str(p.get("reason", "source data re-bound" if e.kind == "rebind" else ""))
        else:  # another release kind: its text form (or mechanism) and what it released
            values = p.get("values")
            shown = (
                ""
                if not values or answer is not None or len(values) > 12
                else " → " + ", ".join(f"{float(v):.4g}" for v in values if isinstance(v, (int, float)))
            )
            delta = float(dict(p.get("charge") or {}).get("delta", 0.0))
            summary = f"{entry_summary(e) or p.get('mechanism', '')}{shown}" + (
                f"  (δ = {delta:.3g})" if delta else ""
            )
        rows.append(
            (
                e.seq,
                e.time[:19].replace("T", " "),
                e.kind,
                e.request_id or "",
                requesters.get(e.request_id or "", ""),
                answer,
                alpha,
                summary,
            )
        )
    return rows


@dataclass(frozen=True)
class QueueRows:
    """The queue as the table shows it, read in one go (worker-thread safe: no Qt)."""

    rows: list[tuple]
    ids: list[str]
    statuses: dict[str, str]  # every request's status, shown or not
    tips: list[tuple] | None = None  # the full query text of each row


def queue_rows(project, status: str) -> QueueRows:
    """The rows of the requests with ``status`` ("all": every one) of ``project`` (a :class:`Project`)."""
    reqs = project.requests()
    shown = [r for r in reqs if status in ("all", r.status)]
    return QueueRows(
        request_rows(shown, project.schema),
        [r.id for r in shown],
        {r.id: r.status for r in reqs},
        request_tips(shown, project.schema),
    )
