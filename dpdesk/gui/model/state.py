"""The open project as the app's views see it, Qt-free: the one writer ``Project`` behind facts, actions
and the work of long tasks, and the fine-grained events each action emits (:mod:`.events`).

Views never touch the project: they read facts here (the queue, the ledger view's history, costs and
curve, the settings), ask for actions (queue a request, reject, set a policy, watch a claim) and hand the
task runner the jobs made here (a release, a plan, an export), then redraw on the events they subscribe
to. Every number shown comes from the store's ledger view or the engine; this layer only asks, relays
and says what changed. Quick store calls run on the GUI thread, which owns the project's SQLite
connection; a job runs on a worker through a sibling connection opened there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import numpy as np

from dpdesk.engine.budget.accounting import BudgetPreview, preview
from dpdesk.engine.budget.mode import ZcdpAccounting
from dpdesk.engine.budget.policy import SpendPolicy
from dpdesk.engine.inference.prior import BoundedPrior
from dpdesk.engine.kinds.settings import Settings
from dpdesk.engine.mechanisms.base import Basis, ReleasePlan
from dpdesk.engine.registry import claim_kinds
from dpdesk.engine.schema import Schema
from dpdesk.gui.model.events import ProjectEvents
from dpdesk.store.assessing import assess
from dpdesk.store.ledger import LedgerEntry
from dpdesk.store.project import Project
from dpdesk.store.release import Release
from dpdesk.store.requesters import RequesterAccount, accounts, requester_of
from dpdesk.store.requests import StoredRequest
from dpdesk.store.view import LedgerView
from dpdesk.store.watching import ClaimStatus, claim_statuses, claim_trace

if TYPE_CHECKING:
    from dpdesk.engine.estimates.plans import HistoryInputs
    from dpdesk.engine.kinds.base import Asked
    from dpdesk.engine.planning.plan import BatchPlan
    from dpdesk.store.batch import BatchRelease
    from dpdesk.store.binding import SourceBinding
    from dpdesk.store.verify import VerifyReport
    from dpdesk.store.watch import WatchedClaim

__all__ = ["Job", "PrivateWork", "ProjectState", "TaskProgress"]


class TaskProgress(Protocol):
    """What a job is handed by the task runner (``gui/tasks.TaskState``): report progress, ask to stop."""

    def progress(self, fraction: float) -> None: ...

    def cancelled(self) -> bool: ...


T = TypeVar("T")
Job = Callable[[TaskProgress | None], T]  # work for the task runner, called on a worker with its task state


PrivateWork = Callable[[Project], object]  # a view's read of the data on a worker's sibling connection


def _progress(state: TaskProgress | None) -> Callable[[float], None] | None:
    return None if state is None else state.progress


def _cancelled(state: TaskProgress | None) -> Callable[[], bool] | None:
    return None if state is None else state.cancelled


class ProjectState:
    """An open project (single writer) and its events. See the module docstring."""

    def __init__(self, project: Project) -> None:
        self._project = project
        self.events = ProjectEvents()
        self._seen = project.head()[0]  # entries the views were told about

    @classmethod
    def open(cls, path: str | Path) -> ProjectState:
        return cls(Project.open(path, "w"))

    @property
    def project(self) -> Project:
        """The store's project itself, for tests and scripts: no view reaches it
        (``tests/gui/test_model_layer.py`` reads the views' source to hold that)."""
        return self._project

    # -- facts -------------------------------------------------------------------------------------
    @property
    def path(self) -> Path:
        return self._project.path

    @property
    def name(self) -> str:
        return str(self._project.name)

    @property
    def schema(self) -> Schema:
        return self._project.schema

    @property
    def total_budget(self) -> float:
        """The total budget in the unit per-cell costs are kept in: the total ε, or under zCDP the ρ the
        total (ε, δ) allows (:attr:`accounting` states it back as ε)."""
        return self.answering_settings().total_budget

    @property
    def delta_cap(self) -> float:
        return float(self._project.delta_cap)

    @property
    def accounting(self) -> ZcdpAccounting | None:
        """The project's zCDP accounting (None: pure ε): per-cell costs are then ρ, shown as ε at its δ."""
        return self._project.accounting

    def head(self) -> tuple[int, str]:
        """``(seq, hash)`` of the newest ledger entry."""
        return self._project.head()

    def requests(self, status: str | None = None) -> list[StoredRequest]:
        return self._project.requests(status)

    def request(self, request_id: str) -> StoredRequest:
        return self._project.request(request_id)

    def entry_for(self, request_id: str) -> LedgerEntry | None:
        """The ledger entry that decided ``request_id``, if any."""
        return self._project.entry_for(request_id)

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
        return self._project.view()

    def ledger(self) -> list[LedgerEntry]:
        return list(self.view().entries)

    def cell_costs(self) -> np.ndarray:
        return self.view().cell_costs

    def budget(self) -> BudgetPreview:
        """System cost and remaining budget now (engine ``preview``), in the project's unit (ε, or ρ
        under zCDP: :attr:`accounting` states it as ε), one person's (the view's person rule)."""
        view = self.view()
        return preview(
            view.cell_costs,
            self.answering_settings().total_budget,
            accounting=self.accounting,
            rule=view.rule,
        )

    def spenders(self, cell: int) -> list[tuple[str, float]]:
        """(request id, budget its release charged ``cell``) for each release charging it."""
        return self.view().spenders(cell)

    def cost_over_time(self) -> list[tuple[int, float]]:
        """(ledger seq, system cost after it), from the ledger view."""
        return self.view().cost_curve()

    def source_description(self) -> str:
        src = self._project.source
        return f"{src.location}{f' (table {src.table})' if src.table else ''}"

    def source(self) -> SourceBinding:
        """The current source binding (location, table, when it was bound)."""
        return self._project.source

    def basis(self) -> Basis:
        """The ledger head and settings a plan made now is priced against (see ``Project.basis``)."""
        return self._project.basis()

    def answering_settings(self) -> Settings:
        return self._project.answering_settings()

    def plan_inputs(self) -> dict[str, Any]:
        """What a plan of another release kind is priced with now (``Project.plan_inputs``)."""
        return self._project.plan_inputs()

    @property
    def spend_policy(self) -> SpendPolicy | None:
        return self._project.spend_policy

    @property
    def prior(self) -> BoundedPrior | None:
        return self._project.prior

    @property
    def look_ahead(self) -> float | None:
        """The batch plans' look-ahead share (None: off)."""
        return self._project.look_ahead

    def table_size(self) -> float | None:
        return self._project.table_size()

    def claim_statuses(self, plan: ReleasePlan | None = None) -> list[ClaimStatus]:
        """Each watched claim with Pr(C) now and, given a plan, its check (public inputs only)."""
        return self._project.claim_statuses(plan)

    def claim_trace(self, claim_id: str) -> list[tuple[int, float | None]]:
        """Pr(claim) over the ledger (reads released values: for the curator's eyes)."""
        return claim_trace(self.view(), claim_id)

    def plan(self, asked: Asked, **options: Any) -> ReleasePlan:
        """The plan of ``asked`` now, from the one assess function (quick kinds, or a script)."""
        return self._project.plan(asked, **options)

    # -- what changed ------------------------------------------------------------------------------
    def released(self) -> tuple[LedgerEntry, ...]:
        """A release (or several) finished or failed on a worker: tell the views what the ledger holds
        now. Emits ``entry_appended`` with the new entries, ``queue_changed`` with the requests they
        decided and ``claims_changed`` when one adds or removes a claim or claims are watched."""
        view = self.view()
        seq = view.head[0]
        new = tuple(view.entries[self._seen :]) if seq > self._seen else ()
        self._seen = seq
        self._announce(new)
        return new

    def _announce(self, new: Sequence[LedgerEntry]) -> None:
        if not new:
            return
        self.events.entry_appended.emit(tuple(new))
        decided = tuple(e.request_id for e in new if e.request_id is not None)
        if decided:
            self.events.queue_changed.emit(decided)
        if self.view().claims or any(e.kind in claim_kinds() for e in new):
            self.events.claims_changed.emit()

    def loaded(self) -> None:
        """A large project's ledger view was read on a worker."""
        self._seen = self.head()[0]
        self.events.loaded.emit()

    # -- actions -------------------------------------------------------------------------------------
    def set_spend_policy(self, policy: SpendPolicy | None) -> None:
        """Store the project's spend policy; views re-assess under it."""
        try:
            self._project.set_spend_policy(policy)
        finally:
            self.events.settings_changed.emit()

    def set_prior(self, prior: BoundedPrior | None) -> None:
        """Store the declared table size (None: the flat prior); views re-assess under it."""
        try:
            self._project.set_prior(prior)
        finally:
            self.events.settings_changed.emit()

    def set_look_ahead(self, share: float | None) -> None:
        """Store the batch plans' look-ahead share (None: off)."""
        try:
            self._project.set_look_ahead(share)
        finally:
            self.events.settings_changed.emit()

    def reject(self, request_id: str, reason: str = "") -> LedgerEntry:
        try:
            return self._project.reject(request_id, reason)
        finally:
            self.released()

    def import_requests(self, path: str | Path) -> list[StoredRequest]:
        out = self._project.import_requests(path)
        self.events.queue_changed.emit(tuple(r.id for r in out))
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
        out = self._project.add_request(query, eps, delta, requester, alpha=alpha)
        self.events.queue_changed.emit((out.id,))
        return out

    def edit_request(
        self,
        request_id: str,
        query: object,
        eps: float | None,
        delta: float | None,
        requester: str = "",
        alpha: float | None = None,
    ) -> StoredRequest:
        out = self._project.edit_request(request_id, query, eps, delta, requester, alpha)
        self.events.queue_changed.emit((request_id,))
        return out

    def delete_request(self, request_id: str) -> None:
        try:
            self._project.delete_request(request_id)
        finally:
            self.events.queue_changed.emit((request_id,))

    def watch(
        self, query: str, low: float | None, high: float | None, threshold: float, risk: float, name: str = ""
    ) -> WatchedClaim:
        try:
            return self._project.watch(query, low, high, threshold, risk, name)
        finally:
            self.released()

    def unwatch(self, claim_id: str, reason: str = "") -> LedgerEntry:
        try:
            return self._project.unwatch(claim_id, reason)
        finally:
            self.released()

    def verify(self) -> VerifyReport:
        return self._project.verify()

    # -- jobs for the task runner (each opens a sibling connection on its worker) ---------------------
    def with_sibling(self, work: Callable[[Project], T]) -> Job[T]:
        """``work(sibling)`` as a job: a connection to this project opened on the worker that runs it."""
        return self.task(lambda sibling, _state: work(sibling))

    def task(self, work: Callable[[Project, TaskProgress | None], T]) -> Job[T]:
        """``work(sibling, task state)`` as a job: the task state reports progress and asks for cancel."""
        project = self._project

        def job(state: TaskProgress | None = None) -> T:
            with project.sibling() as sibling:
                return work(sibling, state)

        return job

    def verify_job(self) -> Job[VerifyReport]:
        """The integrity check (a long ledger's replay takes minutes), with progress and cancel."""
        return self.task(lambda sib, st: sib.verify(progress=_progress(st), cancelled=_cancelled(st)))

    def report_job(self, path: str, images: dict[str, bytes]) -> Job[object]:
        """The HTML audit report written to ``path`` (its integrity check included)."""
        from dpdesk.store import audit_export

        return self.task(
            lambda sib, st: audit_export.export_report(
                sib, path, images, progress=_progress(st), cancelled=_cancelled(st)
            )
        )

    def csv_job(self, path: str) -> Job[int]:
        """The ledger CSV written to ``path``; returns the number of entries."""
        from dpdesk.store import audit_export

        return self.task(
            lambda sib, st: audit_export.export_csv(
                sib, path, progress=_progress(st), cancelled=_cancelled(st)
            )
        )

    def report_html(self, images: dict[str, bytes]) -> str:
        """The audit report, built here (quick on a short ledger; exports use :meth:`report_job`)."""
        from dpdesk.store import audit_export

        return audit_export.report_html(self._project, images)[0]

    def estimate_inputs(self, text: str) -> tuple[HistoryInputs, Any, Any]:
        """``(inputs, query, history's own estimate)`` of a zero-cost estimate of ``text`` now."""
        from dpdesk.store.estimating import query_inputs

        return query_inputs(self._project, text)

    def synthetic_inputs(self) -> HistoryInputs:
        """The synthetic table's public inputs now (one moment of the ledger)."""
        from dpdesk.store.estimating import ledger_inputs

        return ledger_inputs(self._project)[0]

    def assess_job(self, request_id: str, method: str = "fft") -> Job[tuple[ReleasePlan, list[ClaimStatus]]]:
        """The plan of a queued request of any kind, from the one assess function on a consistent moment
        of the ledger view (read on the worker: a long ledger's first factorisation happens there), with
        every watched claim's check on it."""
        view, req = self.view(), self.request(request_id)
        settings, cap, size = self.answering_settings(), self.delta_cap, self.table_size()

        def job(state: TaskProgress | None = None) -> tuple[ReleasePlan, list[ClaimStatus]]:
            plan = assess(
                view,
                req,
                settings,
                delta_cap=cap,
                method=method,
                progress=_progress(state),
                cancelled=_cancelled(state),
            )
            return plan, claim_statuses(view, plan, size)

        return job

    def release_job(self, plan: ReleasePlan) -> Job[Release]:
        """The work of releasing exactly ``plan`` (on a sibling connection); call :meth:`released` on the
        GUI thread afterwards, whatever the outcome. The task state: the table scan reports to it, stops
        on cancel."""

        def work(sibling: Project, state: TaskProgress | None) -> Release:
            release = sibling.release(plan, progress=_progress(state), cancelled=_cancelled(state))
            sibling.view()  # the shared view takes the new entry here (a 2·10⁶-count release takes a while)
            return release

        return self.task(work)

    def answer_free_job(self, method: str = "fft") -> Job[list[Release]]:
        """Release every pending count history answers for free, one ledger entry each (on a sibling)."""

        def work(sibling: Project, state: TaskProgress | None) -> list[Release]:
            out: list[Release] = []
            ids = [r.id for r in sibling.requests("pending") if r.kind == "count"]  # others always spend
            for i, rid in enumerate(ids):
                if state is not None and state.cancelled():
                    break
                a = sibling.assess(rid, method=method)
                if getattr(a, "decision", None) == "infer":
                    out.append(sibling.release(a))
                if state is not None:
                    state.progress((i + 1) / len(ids))
            sibling.view()  # the shared view takes the new entries here, not on the GUI thread
            return out

        return self.task(work)

    def batch_plan_job(self, request_ids: list[str], method: str, share: float | None) -> Job[BatchPlan]:
        """A batch plan of ``request_ids`` (:func:`dpdesk.store.batch.plan_pending`) on a sibling."""
        from dpdesk.store.batch import plan_pending

        return self.task(
            lambda sib, st: plan_pending(
                sib,
                request_ids,
                method=method,
                look_ahead=share,
                progress=_progress(st),
                cancelled=_cancelled(st),
            )
        )

    def batch_release_job(self, plan: BatchPlan) -> Job[BatchRelease]:
        """Release a batch plan's measurements and answers (:func:`dpdesk.store.batch.release_batch`) on
        a sibling; call :meth:`released` on the GUI thread afterwards, whatever the outcome."""
        from dpdesk.store.batch import release_batch

        return self.task(
            lambda sib, st: release_batch(sib, plan, progress=_progress(st), cancelled=_cancelled(st))
        )

    def claims_job(
        self, claim_id: str | None
    ) -> Job[tuple[list[ClaimStatus], list[tuple[int, float | None]]]]:
        """The claims' statuses now and ``claim_id``'s Pr(claim) over the ledger (reads the view only)."""
        view, size = self.view(), self.table_size()

        def job(
            state: TaskProgress | None = None,
        ) -> tuple[list[ClaimStatus], list[tuple[int, float | None]]]:
            statuses = claim_statuses(view, None, size)
            ids = [st.watched.id for st in statuses]
            chosen = claim_id if claim_id in ids else (ids[0] if ids else None)
            return statuses, ([] if chosen is None else claim_trace(view, chosen))

        return job

    def cache_job(self) -> Job[bool] | None:
        """Writing the ledger-view cache before the project closes (None: nothing worth writing)."""
        if not self._project.view_cache_worth_saving():
            return None
        return self.task(
            lambda sib, st: sib.save_view_cache(progress=_progress(st), cancelled=_cancelled(st))
        )

    def close(self, save_cache: bool = True) -> None:
        self._project.close(save_cache=save_cache)
