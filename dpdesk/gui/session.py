"""The open project as the views see it: one writer ``Project`` plus change signals.

Views receive a :class:`ProjectSession` and redraw on ``sigChanged``; they never touch the project
file directly. Every number shown comes from the store's ledger view (history, per-cell costs, cost
curve, who spent each cell) or the engine (budget preview, assessment): the session only asks and
relays. Quick store calls run on the GUI thread, which owns the project's SQLite connection. Slow work
goes through :mod:`dpdesk.gui.tasks`: an assessment reads a consistent moment of the ledger view on a
worker (:class:`AssessInputs`); a release runs on a worker through a sibling connection
(:meth:`ProjectSession.release_job`), so scanning the table and drawing never stall the window.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import QObject, Signal

from dpdesk.engine.answering.assessment import Assessment
from dpdesk.engine.budget.accounting import BudgetPreview, preview
from dpdesk.engine.budget.policy import SpendPolicy
from dpdesk.engine.inference.prior import BoundedPrior
from dpdesk.engine.kinds.settings import Settings
from dpdesk.engine.mechanisms.base import Basis, ReleasePlan
from dpdesk.engine.schema import Schema
from dpdesk.store.assessing import assess
from dpdesk.store.ledger import LedgerEntry
from dpdesk.store.project import Project
from dpdesk.store.release import Release
from dpdesk.store.requesters import RequesterAccount, accounts, requester_of
from dpdesk.store.requests import StoredRequest
from dpdesk.store.view import LedgerView
from dpdesk.store.watching import claim_statuses, claim_trace


@dataclass(frozen=True)
class AssessInputs:
    """Public inputs of one assessment, frozen so a worker thread can use them safely."""

    view: LedgerView  # the project's ledger view, extended on the GUI thread
    request: StoredRequest
    settings: Settings
    schema: Schema
    method: str
    delta_cap: float = 0.0


def run_assessment(inputs: AssessInputs, progress=None, cancelled=None) -> Assessment:
    """The request's plan from the one assess function (worker-thread safe: no project access).

    The History comes from the ledger view (built once, extended as releases arrive), so the slow first
    factorisation of a long ledger happens here, never on the GUI thread; the assessment records the
    head and costs of the same moment.
    """
    return assess(
        inputs.view,
        inputs.request,
        inputs.settings,
        delta_cap=inputs.delta_cap,
        method=inputs.method,
        progress=progress,
        cancelled=cancelled,
    )


def run_assessment_with_claims(
    inputs: AssessInputs, progress=None, cancelled=None
) -> tuple[Assessment, list]:
    """The assessment and every watched claim's check on it, both on the worker (public inputs only)."""
    a = run_assessment(inputs, progress, cancelled)
    prior = inputs.settings.prior
    return a, claim_statuses(inputs.view, a, None if prior is None else float(prior.table_size))


# A ledger longer than this, or whose entries times cells pass LARGE_CELL_ENTRIES (a replay's per-cell work),
# is "large": its view is read, and the request and ledger tables are built, on worker threads (the window
# shows "Reading the ledger…" meanwhile); a smaller one is read inline, at once.
LARGE_LEDGER = 500
LARGE_CELL_ENTRIES = 10**7  # e.g. 10 entries over a 10⁶-cell cube; the demo's (720 cells) stays small


class ProjectSession(QObject):
    """An open project (single writer) and the signals the views listen to.

    A large project (:data:`LARGE_LEDGER`) opens before its ledger view is read: :meth:`start_loading`
    reads it on a worker, and until it arrives ``loaded`` is False and views show that they are waiting
    (they redraw on ``sigChanged``, emitted when it arrives). Views build their tables through :meth:`run`,
    which runs the work inline for a small project and on a worker (a sibling connection) for a large one.
    """

    sigChanged = Signal()  # the ledger or the request queue changed

    def __init__(self, path: str | Path, parent: QObject | None = None) -> None:
        from dpdesk.gui.tasks import TaskRunner

        super().__init__(parent)
        self.project = Project.open(path, "w")
        entries = self.project.head()[0]
        self.large = entries > LARGE_LEDGER or entries * self.project.schema.n_cells > LARGE_CELL_ENTRIES
        self.loaded = not self.large  # a small project's view is read when first asked for
        self.first_pending: str | None = (
            None  # of a large project, found while loading (the list comes later)
        )
        self.runner = TaskRunner(self)

    # -- loading a large project -----------------------------------------------------------------
    def start_loading(self, failed: Callable[[BaseException, str], None] | None = None) -> None:
        """Read the ledger view (from its cache, else by replaying the ledger) and the first pending
        request on a worker; then ``loaded`` turns True and ``sigChanged`` is emitted. Nothing for a
        small project (already ``loaded``)."""
        if self.loaded:
            return
        project = self.project

        def job(state: Any = None) -> str | None:
            with project.sibling() as sibling:  # closing it hands the view it read to the project
                sibling.view()
                return next((r.id for r in sibling.requests("pending")), None)

        self.runner.start(job, self._loaded, failed, label="reading the ledger")

    def _loaded(self, first_pending: str | None) -> None:
        self.first_pending, self.loaded = first_pending, True
        self._changed()

    def run(
        self, runner: Any, work: Callable[[Project], Any], done: Callable[[Any], None], label: str = ""
    ) -> None:
        """``done(work(project))``: inline on this project for a small one; for a large one ``work`` runs on
        ``runner`` (a :class:`~dpdesk.gui.tasks.TaskRunner`) with a sibling connection opened on the worker,
        and ``done`` on the GUI thread when it finishes (a newer call on the same runner supersedes it)."""
        if not self.large:
            done(work(self.project))
            return
        project = self.project

        def job(state: Any = None) -> Any:
            with project.sibling() as sibling:
                return work(sibling)

        runner.start(job, done, label=label)

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

    def requesters(self) -> dict[str, str]:
        """Request id → requester, for every request in the queue (decided ones never leave it)."""
        return requester_of(self.requests())

    def accounts(self) -> list[RequesterAccount]:
        """What each requester asked for, received and cost (store/requesters.py)."""
        return accounts(
            self.ledger(), self.requests(), describe=lambda r: r.describe(self.schema), schema=self.schema
        )

    def view(self) -> LedgerView:
        """The project's ledger view, extended with whatever was recorded since it was last read."""
        return self.project.view()

    def ledger(self) -> list[LedgerEntry]:
        return list(self.view().entries)

    def cell_costs(self) -> np.ndarray:
        return self.view().cell_costs

    def budget(self) -> BudgetPreview:
        """System cost and remaining budget now (engine ``preview``)."""
        return preview(self.cell_costs(), self.total_budget)

    def spenders(self, cell: int) -> list[tuple[str, float]]:
        """(request id, budget its release charged ``cell``) for each release charging it (Thm 5.4 terms)."""
        return self.view().spenders(cell)

    def cost_over_time(self) -> list[tuple[int, float]]:
        """(ledger seq, system cost after it), from the ledger view."""
        return self.view().cost_curve()

    def source_description(self) -> str:
        src = self.project.source
        return f"{src.location}{f' (table {src.table})' if src.table else ''}"

    def basis(self) -> Basis:
        """The ledger head and settings a plan made now is priced against (see ``Project.basis``)."""
        return self.project.basis()

    def assess_inputs(self, request_id: str, method: str = "fft") -> AssessInputs:
        return AssessInputs(
            self.view(),
            self.request(request_id),
            self.project.answering_settings(),
            self.schema,
            method,
            float(self.project.delta_cap),
        )

    @property
    def spend_policy(self) -> SpendPolicy | None:
        return self.project.spend_policy

    @property
    def prior(self) -> BoundedPrior | None:
        return self.project.prior

    def plan_inputs(self) -> dict[str, Any]:
        """What a plan of another release kind is priced with now (``Project.plan_inputs``)."""
        return self.project.plan_inputs()

    # -- actions -------------------------------------------------------------------------------
    def _changed(self) -> None:
        self.sigChanged.emit()

    def plan_job(self, request_id: str) -> Callable[[Any], tuple[Any, Any, list]]:
        """The work of planning a queued max/argmax or posterior request, for the task runner.

        The job prices the plan on the worker through the one assess function (a consistent moment of
        the ledger view), checks it against the watched claims (public inputs only, as for a count) and,
        for a max/argmax, computes the mechanism's exact output probabilities from the data on a sibling
        connection (for the curator's eyes only). It returns ``(plan, probabilities or None, claim
        statuses)``.
        """
        req, view, project, schema = self.request(request_id), self.view(), self.project, self.schema
        settings, cap, size = project.answering_settings(), float(project.delta_cap), project.table_size()

        def job(state: Any = None) -> tuple[Any, Any, list]:
            plan = assess(view, req, settings, delta_cap=cap)
            statuses = claim_statuses(view, plan, size)
            rnm = getattr(plan, "rnm", None)  # a max/argmax: its private output law, for the chart
            if rnm is None:
                return plan, None, statuses
            with project.sibling() as sibling:  # the one step here that reads the data
                return plan, rnm.probabilities(sibling.cube().counts, schema), statuses

        return job

    def release_job(self, plan: ReleasePlan) -> Callable[[Any], Release]:
        """The work of releasing exactly ``plan``, for the task runner (or to call inline).

        It runs on a sibling connection opened in the calling thread, so the GUI thread's connection
        keeps serving the views; the first fresh answer's table scan happens there too. Call
        :meth:`released` on the GUI thread afterwards, whatever the outcome.
        """
        project = self.project

        def job(
            state: Any = None,
        ) -> Release:  # a TaskState: the table scan reports to it and stops on cancel
            with project.sibling() as sibling:
                release = sibling.release(
                    plan,
                    progress=getattr(state, "progress", None),
                    cancelled=getattr(state, "cancelled", None),
                )
                sibling.view()  # the shared view takes the new entry here (a 2·10⁶-count release takes a while)
                return release

        return job

    def answer_free_job(self, method: str = "fft") -> Callable[[Any], list[Release]]:
        """The work of releasing every pending request history answers for free, one ledger entry each.

        Each request is assessed under the project's settings and, when the engine decides "infer",
        exactly that assessment is released; the others stay pending. Runs on a sibling connection
        like :meth:`release_job`; call :meth:`released` on the GUI thread afterwards.
        """
        project = self.project

        def job(state: Any = None) -> list[Release]:
            out: list[Release] = []
            with project.sibling() as sibling:
                ids = [r.id for r in sibling.requests("pending") if r.kind == "count"]  # others always spend
                for i, rid in enumerate(ids):
                    if state is not None and state.cancelled():
                        break
                    a = sibling.assess(rid, method=method)
                    if a.decision == "infer":
                        out.append(sibling.release(a))
                    if state is not None:
                        state.progress((i + 1) / len(ids))
                sibling.view()  # the shared view takes the new entries here, not on the GUI thread
            return out

        return job

    def released(self) -> None:
        """A release finished or failed: the ledger may have grown; views redraw."""
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

    @property
    def look_ahead(self) -> float | None:
        """The batch plans' look-ahead share (None: off)."""
        return self.project.look_ahead

    def set_look_ahead(self, share: float | None) -> None:
        """Store the batch plans' look-ahead share (None: off). Only batch plans read it: no view redraws."""
        self.project.set_look_ahead(share)

    def reject(self, request_id: str, reason: str = "") -> LedgerEntry:
        try:
            return self.project.reject(request_id, reason)
        finally:
            self._changed()

    def import_requests(self, path: str | Path) -> list[StoredRequest]:
        out = self.project.import_requests(path)
        self._changed()
        return out

    def add_request(
        self,
        query: str,
        eps: float | None = None,
        delta: float | None = None,
        requester: str = "",
        alpha: float | None = None,
    ) -> StoredRequest:
        """Queue a request of any kind (``alpha``: a max/argmax or posterior priced by its per-cell budget)."""
        out = self.project.add_request(query, eps, delta, requester, alpha=alpha)
        self._changed()
        return out

    def edit_request(
        self,
        request_id: str,
        query: Any,
        eps: float | None,
        delta: float | None,
        requester: str = "",
        alpha: float | None = None,
    ) -> StoredRequest:
        out = self.project.edit_request(request_id, query, eps, delta, requester, alpha)
        self._changed()
        return out

    def delete_request(self, request_id: str) -> None:
        try:
            self.project.delete_request(request_id)
        finally:
            self._changed()

    # -- watched claims (store/watching.py) -------------------------------------------------------
    def claim_statuses(self, plan: Any = None) -> list:
        """Each watched claim with Pr(C) now and, given a plan, its check (public inputs only; nothing to
        do without claims; with claims, prefer :meth:`claims_job` off the GUI thread)."""
        return self.project.claim_statuses(plan)

    def claim_trace(self, claim_id: str) -> list[tuple[int, float | None]]:
        """Pr(claim) over the ledger (reads released values: for the curator's eyes)."""
        return claim_trace(self.view(), claim_id)

    def claims_job(self, claim_id: str | None) -> Callable[[Any], tuple[list, list]]:
        """A task-runner job: the claims' statuses now and ``claim_id``'s Pr(claim) over the ledger. The
        view is extended here, on the GUI thread; the job reads only the view."""
        view, size = self.view(), self.project.table_size()

        def job(state: Any = None) -> tuple[list, list]:
            statuses = claim_statuses(view, None, size)
            ids = [st.watched.id for st in statuses]
            chosen = claim_id if claim_id in ids else (ids[0] if ids else None)
            return statuses, ([] if chosen is None else claim_trace(view, chosen))

        return job

    def watch(
        self, query: str, low: float | None, high: float | None, threshold: float, risk: float, name: str = ""
    ) -> Any:
        out = self.project.watch(query, low, high, threshold, risk, name)
        self._changed()
        return out

    def unwatch(self, claim_id: str, reason: str = "") -> LedgerEntry:
        try:
            return self.project.unwatch(claim_id, reason)
        finally:
            self._changed()

    def verify(self):
        return self.project.verify()

    def cache_job(self) -> Callable[[Any], bool] | None:
        """The work of writing the ledger-view cache before the project closes, for a task runner (a long
        ledger's chain check and arrays take ~20 s of CPU once); None when there is nothing worth writing.

        It runs on a sibling connection (which shares the view); :meth:`close` with ``save_cache=False``
        afterwards, whatever its outcome. A cancelled or failed job writes nothing: the cache is only an
        accelerator, checked when read (``store/view_cache.py``), and the next opening replays the ledger.
        """
        self.runner.shutdown()  # the view is complete (or was never read) before it is written
        project = self.project
        if not project.view_cache_worth_saving():
            return None

        def job(state: Any = None) -> bool:
            with project.sibling() as sibling:
                return sibling.save_view_cache(
                    progress=getattr(state, "progress", None), cancelled=getattr(state, "cancelled", None)
                )

        return job

    def close(self, save_cache: bool = True) -> None:
        self.runner.shutdown()
        self.project.close(save_cache=save_cache)
