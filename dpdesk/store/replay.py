"""Ledger entries back into the engine's history: the one place fresh entries become HistoryRows.

Sensitivities are re-derived from the recorded query, never read from the entry, so a replayed
history is exactly what the engine would have built as the answers were released.
"""

from __future__ import annotations

from typing import Iterable

from dpdesk.engine.inference.history import History, HistoryRow
from dpdesk.engine.queries.query import query_from_json
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


class HistoryCache:
    """One History kept between assessments and extended as fresh entries are recorded.

    Building the factorisation is the slow part of the first estimate on a long ledger (a minute for
    thousands of rows on a large cube); appending one row afterwards is cheap. :meth:`history` returns
    the cached History when the ledger's fresh entries extend the ones it was built from (same hashes,
    in order), appending the new rows; any other ledger rebuilds it. The History is mutable (estimates
    extend its factorisation), so callers hold :attr:`lock` while they use it.
    """

    def __init__(self) -> None:
        import threading

        self.lock = threading.Lock()
        self._hashes: list[str] = []
        self._history: History | None = None
        self._schema: Schema | None = None
        self.rebuilds = 0  # how often the cache started over (visible to tests)

    def history(self, entries: Iterable[LedgerEntry], schema: Schema) -> History:
        """The History of the fresh entries among ``entries`` (call with :attr:`lock` held)."""
        fresh = [e for e in entries if e.kind == "fresh"]
        hashes = [e.hash for e in fresh]
        k = len(self._hashes)
        if self._history is None or schema != self._schema or hashes[:k] != self._hashes:
            self._history, self._hashes, self._schema, k = History(schema.shape), [], schema, 0
            self.rebuilds += 1
        for e in fresh[k:]:
            self._history.append(history_row(e, schema))
            self._hashes.append(e.hash)
        return self._history
