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

**Looking ahead.** With a look-ahead share (the project's setting :attr:`Project.look_ahead
<dpdesk.store.releasing.Releasing.look_ahead>`, off by default, or ``look_ahead=`` here), the plan is
:func:`~dpdesk.engine.planning.ahead.plan_ahead`'s: it first measures, on cells nobody has paid for yet,
a strategy for the queue's workload — the batch and the project's other count requests, answered or
pending (:func:`queue_workload`: their queries and (ε, δ), public inputs; nothing read from the data) —
spending that share of those cells' room, then plans the batch on top. Every request is still checked
with the engine's exact posterior, and the look-ahead is kept when it serves the queue at least as well
as the plain plan (:func:`~dpdesk.engine.planning.ahead.queue_score`: the batch's answers plus the
workload requests its rows meet without having been bought for them).
Its measurements come first in the plan (``plan.look_ahead`` says how many, what they cost and on how
many cells), so the preview (alone vs in batch, the total, the heatmap) shows them before anything is
spent, and they are screened and released like every other measurement. Each look-ahead entry's
payload says so: ``batch.look_ahead = {"share": s}`` (absent on the batch's own measurements and in
ledgers written before it; the hash chain covers it like the rest of the payload).

Watched claims (:mod:`dpdesk.store.watch`) are checked before anything is spent: :func:`claim_screen`
walks the plan's measurements in the order they will be released, each through the gate the release
path runs (the history and the claims' spent risk as they will be by then; no released value is read).
:func:`plan_pending` leaves out the measurements a claim would decline and checks the requests again
without them (those no longer met stay uncovered, the claim named); :func:`release_batch` refuses, in
one line and before the first measurement, a plan some claim would stop midway.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from dpdesk.engine.answering.request import Request
from dpdesk.engine.budget.person import person_rule
from dpdesk.engine.errors import Cancelled
from dpdesk.engine.inference.history import HistoryRow
from dpdesk.engine.mechanisms.base import Basis
from dpdesk.engine.mechanisms.noise import NoiseSampler
from dpdesk.engine.planning import BatchPlan, plan_batch
from dpdesk.engine.planning.ahead import plan_ahead
from dpdesk.engine.planning.checks import without
from dpdesk.engine.planning.plan import LookAhead, Resumption, costs_after, per_person, resume_plan
from dpdesk.engine.planning.release import MeasurementPlan
from dpdesk.engine.queries.text import describe_query
from dpdesk.store import view as view_module
from dpdesk.store.answering import FROM_PROJECT, check_share
from dpdesk.store.canonical import canonical_json
from dpdesk.store.errors import PersonLevelUnavailable, RequestStateError, StaleAssessment
from dpdesk.store.release import Release
from dpdesk.store.releasing import person_level_refusal
from dpdesk.store.view import AssessState
from dpdesk.store.watch import ClaimDeclined, gate

__all__ = [
    "BatchRelease",
    "claim_screen",
    "look_ahead_share",
    "plan_pending",
    "queue_workload",
    "release_batch",
    "resumed",
    "unfinished",
]


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
            "answers": [
                {
                    "request": r.request_id,
                    "kind": r.kind,
                    "answer": r.answer,
                    "interval": list(r.interval) if r.interval else None,
                    "witness": r.witness,
                }
                for r in self.answers
            ],
            "left_pending": list(self.left_pending),
            "system_cost_after": self.plan.system_cost_after,
        }


def batchable(r: Any) -> bool:
    """Whether a stored request can join a batch plan: a count of records (a sum over measures, a mean and
    the other kinds are answered one by one)."""
    return bool(r.kind == "count" and getattr(r.query, "layout", None) is None)


def _stored(project: Any, request_ids: Sequence[str] | None) -> list[Any]:
    """The stored requests a batch plans (None: every pending count request, in queue order)."""
    if request_ids is None:  # other kinds (max/argmax, posterior) have release plans of their own
        stored = [r for r in project.requests("pending") if batchable(r)]
    else:
        stored = []
        for rid in request_ids:
            r = project.request(rid)
            if r.status != "pending":
                raise RequestStateError(f"request {rid!r} is {r.status}, not pending: it cannot join a batch")
            if not batchable(r):
                what = "a sum over measures" if r.kind == "count" else f"a {r.kind} request"
                raise RequestStateError(f"request {rid!r} is {what}: a batch plans count requests only")
            stored.append(r)
    if not stored:
        raise RequestStateError("there are no pending count requests to plan")
    return stored


def plan_pending(
    project: Any,
    request_ids: Sequence[str] | None = None,
    *,
    method: str = "fft",
    look_ahead: float | str | None = FROM_PROJECT,
    progress: Callable[[float], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
    replan: bool = False,
) -> BatchPlan:
    """Plan the listed pending requests (None: every pending count request, in queue order).

    ``look_ahead`` is the share of the room left on cells nobody has paid for that a look-ahead
    strategy for the queue's workload may spend first (see the module docstring); None (or 0) plans the
    batch alone; the default is the project's setting.

    A batch that was started and stopped before its last measurement (a crash, a cancel) is resumed as it
    was planned (:func:`resumed`) when the same requests are asked for (or all pending ones); ``replan``
    plans them afresh instead — what the stopped batch bought is history then, credited like any release.
    """
    refusal = person_level_refusal(project.schema, "measurement")
    if refusal is not None:
        raise PersonLevelUnavailable(refusal.replace("; nothing was released", "; nothing was planned"))
    if not replan:
        again = resumed(project, request_ids)
        if again is not None:
            return again
    share = look_ahead_share(project, look_ahead)
    stored = _stored(project, request_ids)
    settings = project.answering_settings()
    # a person holds up to k rows of one cell: the plan is made against a cell's room per row, total / k
    # (total / k² in ρ under zCDP: a person's k rows in one cell cost k² × its ρ)
    k = person_rule(project.schema).factor(settings.measure)
    per_row = settings if k == 1 else replace(settings, total_budget=settings.total_budget / k)
    ordered = [a.kind == "numeric" for a in project.schema.attributes]
    batch = [r.to_request() for r in stored]
    seen = queue_workload(project, [r.id for r in stored]) if share is not None else []
    with project.view().assessing() as s:
        common = dict(
            cell_costs=s.cell_costs,
            ordered=ordered,
            method=method,
            releases=s.releases,
            progress=progress,
            cancelled=cancelled,
        )
        if share is None:
            plan = plan_batch(s.history, batch, per_row, **common)
        else:
            plan = plan_ahead(s.history, batch, per_row, seen=seen, share=share, **common)
        seq, head = s.head
        declined = claim_screen(project, plan, s)
        if declined:
            ids = sorted({cid for _k, cid, _why in declined})
            because = (
                f"not covered without the measurement{'s' if len(declined) > 1 else ''} watched "
                f"claim{'s' if len(ids) > 1 else ''} {', '.join(ids)} would decline "
                f"(#{', #'.join(str(k + 1) for k, _c, _w in declined)} of the plan); assessed alone it is "
                "offered what the claims allow"
            )
            drop = [k for k, _c, _w in declined]
            trimmed = _look_ahead_without(plan, drop, np.asarray(s.cell_costs, dtype=float))
            plan = without(
                plan, s.history, drop, because, method=method, releases=s.releases, cancelled=cancelled
            )
            plan = replace(
                plan,
                left_out=tuple(f"measurement #{k + 1}: {why}" for k, _c, why in declined),
                look_ahead=trimmed,
            )
    plan = per_person(plan, k, settings.total_budget)
    return replace(plan, basis=Basis(head, seq, settings.to_json(), method))


def unfinished(project: Any) -> tuple[int, dict[str, Any], int] | None:
    """The newest recorded batch plan — its ledger entry, the plan as recorded and how many of its
    measurements are in the ledger — when fewer than all of them are; else None.

    A newer plan supersedes an older one (verify refuses measurements of a superseded plan), so only the
    newest can be unfinished.
    """
    conn = project.connection
    row = conn.execute(
        "SELECT seq, payload FROM ledger WHERE kind = 'batch' ORDER BY seq DESC LIMIT 1"
    ).fetchone()
    if row is None:
        return None
    seq, recorded = int(row[0]), json.loads(row[1])
    done = sum(
        1
        for (text,) in conn.execute(
            "SELECT payload FROM ledger WHERE kind = 'measurement' AND seq > ?", (seq,)
        )
        if json.loads(text).get("batch", {}).get("plan") == seq
    )
    return (seq, recorded, done) if done < len(recorded["measurements"]) else None


def resumed(project: Any, request_ids: Sequence[str] | None = None) -> BatchPlan | None:
    """The unfinished batch plan (:func:`unfinished`) with only its measurements still to buy, priced from
    the ledger now, when ``request_ids`` is None or names the same requests; None when there is none, or
    none of its requests is still pending.
    """
    found = unfinished(project)
    if found is None:
        return None
    seq, recorded, done = found
    ids = [r["id"] for r in recorded["requests"]]
    if request_ids is not None and set(request_ids) != set(ids):
        return None
    waiting = {}
    for rid in ids:
        try:
            r = project.request(rid)
        except RequestStateError:  # removed from the queue since
            continue
        if r.status == "pending" and batchable(r):
            waiting[rid] = r.to_request()
    if not waiting:
        return None
    settings = project.answering_settings()
    with project.view().assessing() as s:
        plan = resume_plan(
            recorded,
            waiting,
            project.schema.shape,
            s.cell_costs,
            Resumption(seq, done, len(recorded["measurements"])),
            person_rule(project.schema),
            project.answering_settings().measure,
        )
        head_seq, head = s.head
    return replace(plan, basis=Basis(head, head_seq, settings.to_json(), recorded.get("method") or "fft"))


def look_ahead_share(project: Any, look_ahead: float | str | None = FROM_PROJECT) -> float | None:
    """The look-ahead share a batch plan uses: ``look_ahead`` checked (0 or None: off), or the project's."""
    if isinstance(look_ahead, str):
        if look_ahead != FROM_PROJECT:
            raise ValueError(f"look_ahead={look_ahead!r}: a share, None, or {FROM_PROJECT!r}")
        share: float | None = project.look_ahead
        return share
    if look_ahead is None or (not isinstance(look_ahead, bool) and look_ahead == 0):
        return None
    return check_share(look_ahead)


def queue_workload(project: Any, batch: Sequence[str]) -> list[Request]:
    """The queue's other count requests, answered or pending, in queue order: what a look-ahead serves.

    Public inputs only — each request's query and (ε, δ) as the requester sent them; rejected requests
    are left out (the curator declined them), and nothing released or read from the data enters.
    """
    skip = set(batch)
    return [
        r.to_request()
        for r in project.requests()
        if batchable(r) and r.status in ("answered", "pending") and r.id not in skip
    ]


def _look_ahead_without(plan: BatchPlan, drop: Sequence[int], costs0: np.ndarray) -> LookAhead | None:
    """``plan.look_ahead`` once the measurements ``drop`` are left out (None: none of it is left)."""
    la = plan.look_ahead
    if la is None:
        return None
    kept = [m for k, m in enumerate(plan.measurements[: la.measurements]) if k not in set(drop)]
    if not kept:
        return None
    after = costs_after(costs0, kept)
    return replace(
        la,
        measurements=len(kept),
        cells=int(np.count_nonzero(after > costs0)),
        system_cost_after=float(after.max()),
    )


def _share_of(plan: BatchPlan, k: int) -> float | None:
    """The look-ahead's share when measurement ``k`` of ``plan`` is one of its look-ahead rows, else None."""
    la = plan.look_ahead
    return la.share if la is not None and plan.index_of(k) < la.measurements else None


def claim_screen(project: Any, plan: BatchPlan, state: AssessState) -> list[tuple[int, str, str]]:
    """``(index, claim id, why)`` of each measurement of ``plan`` a watched claim would decline when the plan
    is released in order from ``state`` (empty: none, or no claims watched).

    Each measurement meets the gate ``Project.release`` runs on it (:func:`dpdesk.store.watch.gate`), on the
    history as it will be by then (the rows of the measurements before it that pass; their values are
    not needed) and with the risk those spent on each claim. A declined one is skipped, as
    :func:`plan_pending` leaves it out. Public inputs only.
    """
    if not state.claims or not plan.measurements:
        return []
    claims = list(state.claims)
    history = state.history.copy()
    shape = project.schema.shape
    out: list[tuple[int, str, str]] = []
    for k, m in enumerate(plan.measurements):
        mp = MeasurementPlan(
            m, plan.basis, plan.strategy, plan.index_of(k), plan.count, look_ahead=_share_of(plan, k)
        )
        # the rows as the recorded entry will give them back (the gate after the draw reads those)
        payload = json.loads(canonical_json({**mp.record(), "answer": 0.0, "values": [0.0]}))
        rows = [(r.query, r.alpha, r.family) for r in mp.mechanism.contribution(payload, shape).rows]
        checks = gate(
            claims,
            history,
            rows,
            charge=mp.charge,
            needs_data=True,
            structured=bool(state.structured),
            row_limit=view_module.HISTORY_ROW_LIMIT,
            table_size=project.table_size(),
        )
        bad = [(w, c) for w, c in checks if not c.allowed]
        if bad:
            out.append((k, bad[0][0].id, f"declined by watched claim {bad[0][0].id}: {bad[0][1].reason}"))
            continue
        spent = {w.id: c.risk for w, c in checks if c.touches}
        claims = [replace(w, spent=w.spent + spent[w.id]) if w.id in spent else w for w in claims]
        for q, a, f in rows:
            history.append(HistoryRow(q, a, 0.0, f))
    return out


def release_batch(
    project: Any,
    plan: BatchPlan,
    sampler: NoiseSampler | None = None,
    *,
    progress: Callable[[float], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> BatchRelease:
    """Release ``plan`` (see the module docstring); returns what was recorded."""
    project.require_writer()
    seq, now = project.head()
    b = plan.basis
    if b.ledger_head != now:
        raise StaleAssessment(
            f"the batch plan was made at ledger entry #{b.ledger_seq} but the ledger is now at "
            f"entry #{seq}; nothing was released — plan the batch again"
        )
    if dict(b.settings) != project.answering_settings().to_json():
        raise StaleAssessment(
            "the batch plan was made under other answering settings; nothing was released — "
            "plan the batch again"
        )
    view, settings = project.view(), project.answering_settings()
    plan.check_affordable(view.cell_costs, settings.total_budget, view.rule, settings.measure)
    with project.view().assessing() as state:
        declined = claim_screen(project, plan, state)
    if declined:
        k, _cid, why = declined[0]
        more = f" (and {len(declined) - 1} more)" if len(declined) > 1 else ""
        raise ClaimDeclined(
            f"the batch plan's measurement #{k + 1} would be {why}{more}; nothing was released — "
            "plan the batch again (the plan then leaves out what watched claims decline)"
        )
    report = progress or (lambda f: None)
    ids = plan.ids("planned") + plan.ids("answerable")
    steps = max(1, len(plan.measurements) + len(ids))
    entry = _recorded(project, plan, cancelled or (lambda: False))
    measured: list[Release] = []
    for k, m in enumerate(plan.measurements):
        if cancelled is not None and cancelled():
            break  # what is recorded stays recorded; the rest is not spent (and is resumed as planned)
        mp = MeasurementPlan(
            m,
            project.basis(),
            plan.strategy,
            plan.index_of(k),
            plan.count,
            ids,
            text=describe_query(m.query, project.schema),
            look_ahead=_share_of(plan, k),
            plan_entry=entry,
        )
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
        raise Cancelled(
            f"batch release cancelled after {len(measured)} of {len(plan.measurements)} measurements "
            "(recorded; nothing else was spent — planning the batch again resumes it as planned)"
        )
    return BatchRelease(plan, tuple(measured), tuple(answers), tuple(left))


def _recorded(project: Any, plan: BatchPlan, cancelled_now: Callable[[], bool]) -> int | None:
    """The ledger entry of ``plan`` as recorded before its first measurement: recorded now for a new plan
    with measurements (a plan that only answers from history records none), or the entry it resumes."""
    if plan.resumes is not None:
        return plan.resumes.entry
    if not plan.measurements:
        return None
    if cancelled_now():
        raise Cancelled("batch release cancelled before its first measurement; nothing was recorded")
    payload = _finite({**plan.to_json(), "method": plan.basis.method or "fft"})
    del payload["resumes"], payload["elapsed_ms"]  # the plan, not how long finding it took
    return int(project.book.record("batch", None, payload, None).seq)


def _finite(obj: Any) -> Any:
    """``obj`` with every non-finite number (an unbounded ±ε offer, say) as None: the ledger holds JSON."""
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_finite(v) for v in obj]
    if isinstance(obj, float) and not np.isfinite(obj):
        return None
    return obj
