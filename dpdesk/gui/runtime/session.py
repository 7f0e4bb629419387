"""The open project as the views see it: the Qt-free :class:`~dpdesk.gui.model.state.ProjectState` (facts,
actions, jobs and the events views subscribe to) plus what needs Qt — the task runner and reading a
large project's ledger off the GUI thread.

Views receive a :class:`ProjectSession`; they never touch the project file. They read facts through it
(each delegated to the state), subscribe to ``session.state.events`` (``queue_changed``,
``entry_appended``, ``settings_changed``, ``claims_changed``, ``loaded``) and hand the task runner the
jobs the state makes. An assessment reads a consistent moment of the ledger view on a worker through the
one assess function (:class:`AssessInputs`); a release runs on a worker through a sibling connection
(:meth:`ProjectSession.release_job`), so scanning the table and drawing never stall the window.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
from PySide6.QtCore import QObject

from dpdesk.engine.budget.accounting import BudgetPreview
from dpdesk.engine.budget.mode import ZcdpAccounting
from dpdesk.engine.budget.policy import SpendPolicy
from dpdesk.engine.inference.prior import BoundedPrior
from dpdesk.engine.kinds.settings import Settings
from dpdesk.engine.mechanisms.base import Basis, ReleasePlan
from dpdesk.engine.schema import Schema
from dpdesk.gui.model.state import Job, PrivateWork, ProjectState, TaskProgress
from dpdesk.store.assessing import assess
from dpdesk.store.ledger import LedgerEntry
from dpdesk.store.project import Project
from dpdesk.store.requesters import RequesterAccount
from dpdesk.store.requests import StoredRequest
from dpdesk.store.view import LedgerView
from dpdesk.store.watching import ClaimStatus, claim_statuses

if TYPE_CHECKING:
    from dpdesk.engine.kinds.base import Asked
    from dpdesk.engine.planning.plan import BatchPlan
    from dpdesk.gui.runtime.tasks import TaskRunner
    from dpdesk.store.batch import BatchRelease
    from dpdesk.store.binding import SourceBinding
    from dpdesk.store.release import Release
    from dpdesk.store.verify import VerifyReport
    from dpdesk.store.watch import WatchedClaim

T = TypeVar("T")
Progress = Callable[[float], None] | None
Cancelled = Callable[[], bool] | None


@dataclass(frozen=True)
class AssessInputs:
    """Public inputs of one assessment, frozen so a worker thread can use them safely."""

    view: LedgerView  # the project's ledger view, extended on the GUI thread
    request: StoredRequest
    settings: Settings
    schema: Schema
    method: str
    delta_cap: float = 0.0


def run_assessment(
    inputs: AssessInputs, progress: Progress = None, cancelled: Cancelled = None
) -> ReleasePlan:
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
    inputs: AssessInputs, progress: Progress = None, cancelled: Cancelled = None
) -> tuple[ReleasePlan, list[ClaimStatus]]:
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
    """An open project (single writer): its state with its events, the task runner, and the loading of a
    large project.

    A large project (:data:`LARGE_LEDGER`) opens before its ledger view is read: :meth:`start_loading`
    reads it on a worker, and until it arrives ``loaded`` is False and views show that they are waiting
    (they redraw on the state's ``loaded`` event). Views build their tables through :meth:`run`, which runs
    the work inline for a small project and on a worker (a sibling connection) for a large one.
    """

    def __init__(self, path: str | Path, parent: QObject | None = None) -> None:
        from dpdesk.gui.runtime.tasks import TaskRunner

        super().__init__(parent)
        self.state = ProjectState.open(path)
        entries = self.state.head()[0]
        self.large = entries > LARGE_LEDGER or entries * self.state.schema.n_cells > LARGE_CELL_ENTRIES
        self.loaded = not self.large  # a small project's view is read when first asked for
        self.first_pending: str | None = (
            None  # of a large project, found while loading (the list comes later)
        )
        self.runner = TaskRunner(self)

    # -- loading a large project -----------------------------------------------------------------
    def start_loading(self, failed: Callable[[BaseException, str], None] | None = None) -> None:
        """Read the ledger view (from its cache, else by replaying the ledger) and the first pending
        request on a worker; then ``loaded`` turns True and the state's ``loaded`` event is emitted.
        Nothing for a small project (already ``loaded``)."""
        if self.loaded:
            return

        def work(sibling: Project) -> str | None:  # closing the sibling hands the view it read to the project
            sibling.view()
            return next((r.id for r in sibling.requests("pending")), None)

        self.runner.start(self.state.with_sibling(work), self._loaded, failed, label="reading the ledger")

    def _loaded(self, first_pending: str | None) -> None:
        self.first_pending, self.loaded = first_pending, True
        self.state.loaded()

    def run(
        self, runner: TaskRunner, work: Callable[[Project], T], done: Callable[[T], None], label: str = ""
    ) -> None:
        """``done(work(project))``: inline for a small project; for a large one ``work`` runs on ``runner``
        (a :class:`~dpdesk.gui.runtime.tasks.TaskRunner`) with a sibling connection opened on the worker, and
        ``done`` on the GUI thread when it finishes (a newer call on the same runner supersedes it)."""
        if not self.large:
            done(work(self.state.project))  # quick: on this thread's own connection
            return
        runner.start(self.state.with_sibling(work), done, label=label)

    @property
    def project(self) -> Project:
        """The store's project itself, for tests and scripts; no view reaches it (see the state's)."""
        return self.state.project

    # -- facts (the state's) ---------------------------------------------------------------------
    @property
    def path(self) -> Path:
        return self.state.path

    @property
    def name(self) -> str:
        return self.state.name

    @property
    def schema(self) -> Schema:
        return self.state.schema

    @property
    def total_budget(self) -> float:
        return self.state.total_budget

    @property
    def delta_cap(self) -> float:
        return self.state.delta_cap

    @property
    def accounting(self) -> ZcdpAccounting | None:
        return self.state.accounting

    def head(self) -> tuple[int, str]:
        return self.state.head()

    def requests(self, status: str | None = None) -> list[StoredRequest]:
        return self.state.requests(status)

    def request(self, request_id: str) -> StoredRequest:
        return self.state.request(request_id)

    def entry_for(self, request_id: str) -> LedgerEntry | None:
        return self.state.entry_for(request_id)

    def requesters(self) -> dict[str, str]:
        return self.state.requesters()

    def accounts(self) -> list[RequesterAccount]:
        return self.state.accounts()

    def view(self) -> LedgerView:
        return self.state.view()

    def ledger(self) -> list[LedgerEntry]:
        return self.state.ledger()

    def cell_costs(self) -> np.ndarray:
        return self.state.cell_costs()

    def budget(self) -> BudgetPreview:
        return self.state.budget()

    def spenders(self, cell: int) -> list[tuple[str, float]]:
        return self.state.spenders(cell)

    def cost_over_time(self) -> list[tuple[int, float]]:
        return self.state.cost_over_time()

    def source_description(self) -> str:
        return self.state.source_description()

    def source(self) -> SourceBinding:
        return self.state.source()

    def basis(self) -> Basis:
        return self.state.basis()

    def assess_inputs(self, request_id: str, method: str = "fft") -> AssessInputs:
        return AssessInputs(
            self.view(),
            self.request(request_id),
            self.state.answering_settings(),
            self.schema,
            method,
            self.delta_cap,
        )

    @property
    def spend_policy(self) -> SpendPolicy | None:
        return self.state.spend_policy

    @property
    def prior(self) -> BoundedPrior | None:
        return self.state.prior

    @property
    def look_ahead(self) -> float | None:
        return self.state.look_ahead

    def plan_inputs(self) -> dict[str, Any]:
        return self.state.plan_inputs()

    def plan(self, asked: Asked, **options: Any) -> ReleasePlan:
        return self.state.plan(asked, **options)

    def claim_statuses(self, plan: ReleasePlan | None = None) -> list[ClaimStatus]:
        return self.state.claim_statuses(plan)

    def claim_trace(self, claim_id: str) -> list[tuple[int, float | None]]:
        return self.state.claim_trace(claim_id)

    def verify(self) -> VerifyReport:
        return self.state.verify()

    # -- actions and jobs (the state's; each emits what it changed) -------------------------------
    def plan_job(
        self, request_id: str, private: Callable[[ReleasePlan, Schema], PrivateWork | None] | None = None
    ) -> Job[tuple[ReleasePlan, object, list[ClaimStatus]]]:
        """The work of planning a queued request of a kind other than a count, for the task runner: the
        plan from the one assess function on the worker, every watched claim's check on it (public inputs
        only, as for a count) and what its chart reads of the data (``private(plan, schema)``: a view's
        work on a sibling connection, e.g. a max/argmax's exact output law, for the curator's eyes only).
        It returns ``(plan, private values or None, claim statuses)``."""
        assess_job, schema = self.state.assess_job(request_id), self.schema

        def job(state: TaskProgress | None = None) -> tuple[ReleasePlan, object, list[ClaimStatus]]:
            plan, claims = assess_job(state)
            work = None if private is None else private(plan, schema)
            return plan, None if work is None else self.state.with_sibling(work)(state), claims

        return job

    def release_job(self, plan: ReleasePlan) -> Job[Release]:
        """The work of releasing exactly ``plan`` (on a sibling connection); call :meth:`released` on the
        GUI thread afterwards, whatever the outcome."""
        return self.state.release_job(plan)

    def answer_free_job(self, method: str = "fft") -> Job[list[Release]]:
        return self.state.answer_free_job(method)

    def claims_job(
        self, claim_id: str | None
    ) -> Job[tuple[list[ClaimStatus], list[tuple[int, float | None]]]]:
        return self.state.claims_job(claim_id)

    def batch_plan_job(self, request_ids: list[str], method: str, share: float | None) -> Job[BatchPlan]:
        return self.state.batch_plan_job(request_ids, method, share)

    def batch_release_job(self, plan: BatchPlan) -> Job[BatchRelease]:
        return self.state.batch_release_job(plan)

    def released(self) -> tuple[LedgerEntry, ...]:
        """A release finished or failed: the views hear what the ledger holds now."""
        return self.state.released()

    def set_spend_policy(self, policy: SpendPolicy | None) -> None:
        self.state.set_spend_policy(policy)

    def set_prior(self, prior: BoundedPrior | None) -> None:
        self.state.set_prior(prior)

    def set_look_ahead(self, share: float | None) -> None:
        self.state.set_look_ahead(share)

    def reject(self, request_id: str, reason: str = "") -> LedgerEntry:
        return self.state.reject(request_id, reason)

    def import_requests(self, path: str | Path) -> list[StoredRequest]:
        return self.state.import_requests(path)

    def add_request(
        self,
        query: str,
        eps: float | None = None,
        delta: float | None = None,
        requester: str = "",
        alpha: float | None = None,
    ) -> StoredRequest:
        return self.state.add_request(query, eps, delta, requester, alpha)

    def edit_request(
        self,
        request_id: str,
        query: object,
        eps: float | None,
        delta: float | None,
        requester: str = "",
        alpha: float | None = None,
    ) -> StoredRequest:
        return self.state.edit_request(request_id, query, eps, delta, requester, alpha)

    def delete_request(self, request_id: str) -> None:
        self.state.delete_request(request_id)

    def watch(
        self, query: str, low: float | None, high: float | None, threshold: float, risk: float, name: str = ""
    ) -> WatchedClaim:
        return self.state.watch(query, low, high, threshold, risk, name)

    def unwatch(self, claim_id: str, reason: str = "") -> LedgerEntry:
        return self.state.unwatch(claim_id, reason)

    def cache_job(self) -> Job[bool] | None:
        """The work of writing the ledger-view cache before the project closes (see the state's); the
        runner is shut down first: the view is complete (or was never read) before it is written."""
        self.runner.shutdown()
        return self.state.cache_job()

    def close(self, save_cache: bool = True) -> None:
        self.runner.shutdown()
        self.state.close(save_cache=save_cache)
