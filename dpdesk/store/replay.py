"""Ledger entries back into the engine's history: the one place fresh entries become HistoryRows.

Sensitivities are re-derived from the recorded query, never read from the entry, so a replayed
history is exactly what the engine would have built as the answers were released.
"""

from __future__ import annotations

from typing import Iterable

from dpdesk.engine.history import History, HistoryRow
from dpdesk.engine.query import query_from_json
from dpdesk.engine.schema import Schema
from dpdesk.store.ledger import LedgerEntry, thaw


def history_row(entry: LedgerEntry, schema: Schema) -> HistoryRow:
    """A fresh ledger entry as an engine history row (sensitivity re-derived from the query)."""
    p = entry.payload
    q = query_from_json(thaw(p["query"]), schema.n_cells, schema.shape)
    return HistoryRow(q, float(p["alpha"]), float(p["answer"]), str(p["family"]))  # type: ignore[arg-type]


def history_from_ledger(entries: Iterable[LedgerEntry], schema: Schema) -> History:
    """The engine's History of the fresh entries among ``entries``, in ledger order."""
    h = History(schema.shape)
    for e in entries:
        if e.kind == "fresh":
            h.append(history_row(e, schema))
    return h
