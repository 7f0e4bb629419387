"""Batch plans of a project: plan the pending requests together, then release the plan on the one path.

:func:`plan_pending` computes a :class:`~dpdesk.engine.planning.plan.BatchPlan` for some (or all) pending
count requests from the ledger view — history rows, per-cell costs, settings — and records its basis
(ledger head and settings). Nothing is spent and no data is read.

:func:`release_batch` refuses the plan in one line, *before anything is spent*, if the ledger or the
settings moved since it was planned or if the whole plan would pass the total budget; otherwise it
releases the measurements one by one through :meth:`Project.release <dpdesk.store.releasing.Releasing.release>`
(one ledger entry each, vetted noise, recorded before it is shown) and then answers every request of
the batch that history now meets at its (ε, δ) — each an ordinary inferred answer, assessed and
released on the same path. A request the plan did not cover stays pending.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

from dpdesk.engine.errors import Cancelled
from dpdesk.engine.mechanisms.base import Basis
from dpdesk.engine.mechanisms.noise import NoiseSampler
from dpdesk.engine.planning import BatchPlan, plan_batch
from dpdesk.engine.planning.release import MeasurementPlan
from dpdesk.engine.queries.text import describe_query
from dpdesk.store.errors import RequestStateError, StaleAssessment
from dpdesk.store.release import Release

__all__ = ["BatchRelease", "plan_pending", "release_batch"]


@dataclass(frozen=True)
class BatchRelease:
    """What releasing a batch plan recorded: the measurements, then the answers (all in ledger order)."""

    plan: BatchPlan
    measurements: tuple[Release, ...]
    answers: tuple[Release, ...]
    left_pending: tuple[str, ...]  # requests of the batch still pending (not covered, or not met after all)

    def to_json(self) -> dict[str, Any]:
        return {
            "strategy": self.plan.strategy,
            "measurements": [r.entry.seq for r in self.measurements],
            "answers": [{"request": r.request_id, "kind": r.kind, "answer": r.answer,
                         "interval": list(r.interval) if r.interval else None, "witness": r.witness}
                        for r in self.answers],
            "left_pending": list(self.left_pending),
            "system_cost_after": self.plan.system_cost_after,
        }


def plan_pending(project: Any, request_ids: Sequence[str] | None = None, *, method: str = "fft",
                 progress: Callable[[float], None] | None = None,
                 cancelled: Callable[[], bool] | None = None) -> BatchPlan:
    """Plan the listed pending requests (None: every pending count request, in queue order)."""
    if request_ids is None:  # other kinds (max/argmax, posterior) have release plans of their own
        stored = [r for r in project.requests("pending") if r.kind == "count"]
    else:
        stored = []
        for rid in request_ids:
            r = project.request(rid)
            if r.status != "pending":
                raise RequestStateError(f"request {rid!r} is {r.status}, not pending: it cannot join a batch")
            if r.kind != "count":
                raise RequestStateError(f"request {rid!r} is a {r.kind} request: a batch plans count requests only")
            stored.append(r)
    if not stored:
        raise RequestStateError("there are no pending count requests to plan")
    settings = project.answering_settings()
    ordered = [a.kind == "numeric" for a in project.schema.attributes]
    with project.view().assessing() as s:
        plan = plan_batch(s.history, [r.to_request() for r in stored], settings, cell_costs=s.cell_costs,
                          ordered=ordered, method=method, releases=s.releases, progress=progress,
                          cancelled=cancelled)
        seq, head = s.head
    return replace(plan, basis=Basis(head, seq, settings.to_json(), method))


def release_batch(project: Any, plan: BatchPlan, sampler: NoiseSampler | None = None, *,
                  progress: Callable[[float], None] | None = None,
                  cancelled: Callable[[], bool] | None = None) -> BatchRelease:
    """Release ``plan`` (see the module docstring); returns what was recorded."""
    project._require_writer()
    seq, now = project.head()
    b = plan.basis
    if b.ledger_head != now:
        raise StaleAssessment(f"the batch plan was made at ledger entry #{b.ledger_seq} but the ledger is now at "
                              f"entry #{seq}; nothing was released — plan the batch again")
    if dict(b.settings) != project.answering_settings().to_json():
        raise StaleAssessment("the batch plan was made under other answering settings; nothing was released — "
                              "plan the batch again")
    plan.check_affordable(project.view().cell_costs, float(project.total_budget))
    report = progress or (lambda f: None)
    ids = plan.ids("planned") + plan.ids("answerable")
    steps = max(1, len(plan.measurements) + len(ids))
    measured: list[Release] = []
    for k, m in enumerate(plan.measurements):
        if cancelled is not None and cancelled():
            break  # what is recorded stays recorded; the rest is not spent
        mp = MeasurementPlan(m, project.basis(), plan.strategy, k, len(plan.measurements), ids,
                             text=describe_query(m.query, project.schema))
        measured.append(project.release(mp, sampler))
        report((k + 1) / steps)
    answers: list[Release] = []
    left: list[str] = []
    complete = len(measured) == len(plan.measurements)
    for k, p in enumerate(plan.requests):
        if p.status == "uncovered" or not complete:
            left.append(p.id)
            continue
        a = project.assess(p.id, method=plan.basis.method or "fft")
        if a.decision != "infer":  # the check said it would be met; never spend for it here
            left.append(p.id)
            continue
        answers.append(project.release(a))
        report((len(measured) + len(answers)) / steps)
    if not complete and cancelled is not None and cancelled():
        raise Cancelled(f"batch release cancelled after {len(measured)} of {len(plan.measurements)} measurements "
                        "(recorded; nothing else was spent)")
    return BatchRelease(plan, tuple(measured), tuple(answers), tuple(left))
