"""The open project as the views see it: one writer ``Project`` plus change signals.

Views receive a :class:`ProjectSession` and redraw on ``sigChanged``; they never touch the project
file directly. Every number shown comes from the store (ledger, requests) or the engine (History,
budget preview, assessment): the session only asks and relays. Store calls run on the GUI thread
because the project's SQLite connection belongs to the thread that opened it; they are short (one
fsync'd transaction). Slow work (assessments, cube builds) goes through :mod:`dpdesk.gui.tasks`
with inputs prepared here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import QObject, Signal

from dpdesk.engine.budget.accounting import BudgetPreview, preview
from dpdesk.engine.mechanisms.laplace import LAPLACE
from dpdesk.engine.inference.history import History
from dpdesk.engine.budget.policy import SpendPolicy
from dpdesk.engine.inference.prior import BoundedPrior
from dpdesk.engine.schema import Schema
from dpdesk.engine.answering.workflow import Assessment, assess
from dpdesk.store.ledger import LedgerEntry
from dpdesk.store.project import Project, Release
from dpdesk.store.requests import StoredRequest


@dataclass(frozen=True)
class AssessInputs:
    """Public inputs of one assessment, frozen so a worker thread can use them safely."""

    entries: tuple[LedgerEntry, ...]   # the ledger as read on the GUI thread
    request: Any
    total_budget: float
    schema: Schema
    method: str
    policy: SpendPolicy | None = None  # the project's spend policy when the inputs were taken
    prior: BoundedPrior | None = None  # the project's known-bounds prior (None: flat)
    cache: Any = field(default=None, compare=False, repr=False)  # the session's store.replay.HistoryCache


def run_assessment(inputs: AssessInputs, progress=None, cancelled=None) -> Assessment:
    """The engine's assessment (worker-thread safe: no project access).

    The History comes from the session's :class:`~dpdesk.store.replay.HistoryCache` (built from the
    ledger entries the GUI thread read, and only extended when new fresh entries arrive), so the slow
    first factorisation of a long ledger happens once, here, never on the GUI thread.
    """
    from dpdesk.store.replay import HistoryCache

    cache = inputs.cache if inputs.cache is not None else HistoryCache()
    with cache.lock:  # one assessment at a time extends and reads the cached factorisation
        history = cache.history(inputs.entries, inputs.schema)
        return assess(history, inputs.request, total_budget=inputs.total_budget, method=inputs.method,
                      schema=inputs.schema, progress=progress, cancelled=cancelled, policy=inputs.policy,
                      prior=inputs.prior)


class ProjectSession(QObject):
    """An open project (single writer) and the signals the views listen to."""

    sigChanged = Signal()  # the ledger or the request queue changed

    def __init__(self, path: str | Path, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.project = Project.open(path, "w")
        self._history: History | None = None
        from dpdesk.store.replay import HistoryCache

        self.history_cache = HistoryCache()  # worker-side: kept across assessments, extended as answers arrive
        self._gui_history = HistoryCache()  # GUI-thread side (cell costs): extended, never rebuilt per change
        self._curve: list[tuple[int, float]] = [(0, 0.0)]
        self._curve_hashes: list[str] = []
        self._curve_costs: Any = None  # engine.budget.costs.CellCosts once the curve is first drawn

    # -- facts ---------------------------------------------------------------------------------
    @property
    def path(self) -> Path:
        return self.project.path

    @property
    def name(self) -> str:
        return str(self.project.name)

    @property
    def schema(self) -> Schema:
        return self.project.schema

    @property
    def total_budget(self) -> float:
        return float(self.project.total_budget)

    def requests(self) -> list[StoredRequest]:
        return self.project.requests()

    def request(self, request_id: str) -> StoredRequest:
        return self.project.request(request_id)

    def ledger(self) -> list[LedgerEntry]:
        return self.project.ledger()

    def history(self) -> History:
        """The engine's History of the ledger (extended with new fresh entries when the ledger changes)."""
        if self._history is None:
            with self._gui_history.lock:
                self._history = self._gui_history.history(self.ledger(), self.schema)
        return self._history

    def cell_costs(self) -> np.ndarray:
        return self.history().cell_costs

    def budget(self) -> BudgetPreview:
        """System cost and remaining budget now (engine ``preview``)."""
        return preview(self.cell_costs(), self.total_budget)

    def source_description(self) -> str:
        src = self.project.source
        return f"{src.location}{f' (table {src.table})' if src.table else ''}"

    def assess_inputs(self, request_id: str, method: str = "fft") -> AssessInputs:
        return AssessInputs(tuple(self.ledger()), self.request(request_id).to_request(), self.total_budget,
                            self.schema, method, self.spend_policy, self.prior, self.history_cache)

    @property
    def spend_policy(self) -> SpendPolicy | None:
        return self.project.spend_policy

    @property
    def prior(self) -> BoundedPrior | None:
        return self.project.prior

    def spenders(self, cell: int) -> list[tuple[str, float]]:
        """(request id, budget it spent on ``cell``) for each fresh answer touching the cell (Thm 5.4 terms)."""
        out = []
        for e in self.ledger():
            if e.kind != "fresh":
                continue
            from dpdesk.store.replay import history_row

            row = history_row(e, self.schema)
            share = LAPLACE.charge_for(row.query, row.alpha).at(cell)
            if share > 0:
                out.append((e.request_id or f"entry {e.seq}", share))
        return out

    def cost_over_time(self) -> list[tuple[int, float]]:
        """(ledger seq, system cost after it): Thm 5.4's per-cell costs replayed entry by entry.

        Kept between calls and extended with the entries recorded since (the ledger only grows); a
        ledger that does not extend the one replayed (another file) starts over.
        """
        from dpdesk.engine.budget.costs import CellCosts
        from dpdesk.store.replay import history_row

        entries = self.ledger()
        done = len(self._curve_hashes)
        if [e.hash for e in entries[:done]] != self._curve_hashes or self._curve_costs is None:
            self._curve, self._curve_hashes, done = [(0, 0.0)], [], 0
            self._curve_costs = CellCosts(self.schema.shape)  # the engine's Thm 5.4 accumulation
        for e in entries[done:]:
            if e.kind == "fresh":
                row = history_row(e, self.schema)
                self._curve_costs.add(row.alpha / row.sensitivity, row.query)
            self._curve.append((e.seq, float(self._curve_costs.values.max())))
            self._curve_hashes.append(e.hash)
        return list(self._curve)

    # -- actions -------------------------------------------------------------------------------
    def _changed(self) -> None:
        self._history = None
        self.sigChanged.emit()

    def answer(self, request_id: str, expect: str, method: str = "fft") -> Release:
        """Release per the engine's decision (``expect`` is what the curator confirmed)."""
        try:
            return self.project.answer(request_id, expect=expect, method=method)
        finally:
            self._changed()

    def set_spend_policy(self, policy: SpendPolicy | None) -> None:
        """Store the project's spend policy; views re-assess under it."""
        try:
            self.project.set_spend_policy(policy)
        finally:
            self._changed()

    def set_prior(self, prior: BoundedPrior | None) -> None:
        """Store the declared table size (None: the flat prior); views re-assess under it."""
        try:
            self.project.set_prior(prior)
        finally:
            self._changed()

    def reject(self, request_id: str, reason: str = "") -> LedgerEntry:
        try:
            return self.project.reject(request_id, reason)
        finally:
            self._changed()

    def import_requests(self, path: str | Path) -> list[StoredRequest]:
        out = self.project.import_requests(path)
        self._changed()
        return out

    def add_request(self, query: str, eps: float, delta: float, requester: str = "") -> StoredRequest:
        out = self.project.add_request(query, eps, delta, requester)
        self._changed()
        return out

    def verify(self):
        return self.project.verify()

    def close(self) -> None:
        self.project.close()
