"""The values a batch plan is made of: measurements, each request's outcome, the plan itself.

All are frozen and public: they are computed from the requests, their (ε, δ), the released history,
the per-cell costs and the curator's settings — never from the data.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from dpdesk.engine.answering.request import Request
from dpdesk.engine.budget.person import ROW_RULE, PersonRule
from dpdesk.engine.errors import BudgetError
from dpdesk.engine.mechanisms.base import Basis
from dpdesk.engine.mechanisms.charge import Charge, ChargeTerm
from dpdesk.engine.mechanisms.registry import noise_family
from dpdesk.engine.queries.query import Query, query_from_json

__all__ = [
    "STATUSES",
    "BatchPlan",
    "Candidate",
    "LookAhead",
    "Measurement",
    "PlannedRequest",
    "Resumption",
    "costs_after",
    "resume_plan",
]

# answerable: history already meets (ε, δ); planned: answerable once the plan is released;
# uncovered: the budget (or the spend policy) does not cover it in this plan
STATUSES = ("answerable", "planned", "uncovered")


@dataclass(frozen=True)
class Measurement:
    """One fresh noisy answer the plan releases: ``query`` at budget ``alpha`` with ``family`` noise."""

    query: Query
    alpha: float
    family: str

    @property
    def charge(self) -> Charge:
        """Its per-cell charge ``α|Q_j|/S`` (paper Thm 5.4)."""
        return noise_family(self.family).charge_for(self.query, self.alpha)


def costs_after(costs0: np.ndarray, rows: Sequence[Measurement]) -> np.ndarray:
    """The per-cell costs ``costs0`` plus every measurement's charge (Thm 5.4, per cell)."""
    return np.asarray(costs0 + sum((m.charge.dense(costs0.size) for m in rows), np.zeros_like(costs0)))


@dataclass(frozen=True)
class PlannedRequest:
    """One request of the batch and what the plan does for it."""

    request: Request
    status: str  # one of STATUSES
    alone: float | None  # system-cost increase if answered alone now (today's rules); None: refused alone
    confidence: (
        float | None
    )  # after the plan: history's confidence at ±ε (engine posterior, less its error bound)
    offer_eps: float | None = (
        None  # uncovered: narrowest ±ε a fresh answer at its δ could still get after the plan
    )
    free_eps: float | None = None  # uncovered: ±ε history alone gives at its δ after the plan (free)
    reason: str = ""
    alone_alpha: float | None = None  # the α it would spend on its cells alone now (0: free; None: refused)

    @property
    def id(self) -> str:
        return self.request.id

    def to_json(self) -> dict[str, Any]:
        r = self.request
        return {
            "id": r.id,
            "status": self.status,
            "eps": r.eps,
            "delta": r.delta,
            "alone": self.alone,
            "confidence": self.confidence,
            "offer_eps": self.offer_eps,
            "free_eps": self.free_eps,
            "reason": self.reason,
            "alone_alpha": self.alone_alpha,
        }


@dataclass(frozen=True)
class Candidate:
    """One strategy the planner tried: how many requests it makes answerable and at what system cost.

    ``checked`` False (one by one only, when a strategy beat it anyway): ``answered`` counts the requests
    today's rules answer at their turn, which bounds what its final history's exact check could answer.
    """

    name: str
    answered: int
    system_cost_after: float
    rows: int
    checked: bool = True

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "answered": self.answered,
            "system_cost_after": self.system_cost_after,
            "rows": self.rows,
            "checked": self.checked,
        }


@dataclass(frozen=True)
class LookAhead:
    """What a plan measures first for the queue's workload (:func:`~dpdesk.engine.planning.ahead.plan_ahead`).

    The plan's first ``measurements`` measurements are the look-ahead strategy ``strategy``, built from
    the batch and ``seen`` earlier requests of the queue and spending ``share`` of the room left on
    ``cells`` cells nobody had paid for; ``system_cost_after`` is the system cost after it alone.
    ``alone_answered``: how many of the batch the batch planned alone would answer — the look-ahead is
    judged for the queue, so its plan may answer fewer of this batch (None: not known).
    """

    strategy: str
    share: float
    measurements: int
    seen: int
    cells: int
    system_cost_after: float
    alone_answered: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "share": self.share,
            "measurements": self.measurements,
            "seen": self.seen,
            "cells": self.cells,
            "system_cost_after": self.system_cost_after,
            "alone_answered": self.alone_answered,
        }


@dataclass(frozen=True)
class Resumption:
    """A batch plan that was recorded (ledger entry ``entry``) and started: ``recorded`` of its ``count``
    measurements are in the ledger, the rest are the plan's ``measurements`` now."""

    entry: int
    recorded: int
    count: int

    def to_json(self) -> dict[str, Any]:
        return {"entry": self.entry, "recorded": self.recorded, "measurements": self.count}


@dataclass(frozen=True, eq=False)
class BatchPlan:
    """The chosen plan: measurements to release, then every *planned* request is answered from history."""

    strategy: str
    measurements: tuple[Measurement, ...]
    requests: tuple[PlannedRequest, ...]
    total_budget: float
    system_cost: float  # before the plan
    system_cost_after: float
    one_by_one: Candidate  # today's rules, request after request (the fallback)
    candidates: tuple[Candidate, ...]
    cell_costs_after: np.ndarray  # read-only
    elapsed_ms: float = 0.0
    # the ledger head and settings it was planned at (set by the store)
    basis: Basis = field(default_factory=Basis)
    left_out: tuple[str, ...] = ()  # measurements the search chose but left out, one line each (why)
    look_ahead: LookAhead | None = None  # the first measurements serve the queue's workload (plan_ahead)
    resumes: Resumption | None = None  # a recorded batch plan, started earlier: its measurements still to buy

    @property
    def charge(self) -> Charge:
        """The plan's total per-cell charge (the sum of its measurements')."""
        terms: list[ChargeTerm] = []
        for m in self.measurements:
            terms.extend(m.charge.terms)
        return Charge(tuple(terms))

    @property
    def increase(self) -> float:
        return self.system_cost_after - self.system_cost

    def ids(self, status: str) -> tuple[str, ...]:
        return tuple(p.id for p in self.requests if p.status == status)

    @property
    def answered(self) -> int:
        """Requests answerable after the plan (already answerable ones included)."""
        return sum(p.status != "uncovered" for p in self.requests)

    @property
    def one_by_one_answered(self) -> int:
        """What today's rules answer request after request, counted as :attr:`answered` is (the requests
        already answerable included): the one number "one by one" stands for."""
        return len(self.ids("answerable")) + self.one_by_one.answered

    def why(self) -> str:
        """One sentence: why the batch saves against one by one, or why it does not."""
        one, n_free = self.one_by_one, len(self.ids("answerable"))
        at_most = "" if one.checked else "at most "
        if self.strategy == "none":
            return "Nothing can be answered: the budget left on these requests' cells covers none of them."
        if self.strategy == "one by one":
            return (
                f"No saving: measured together, no strategy tried ({len(self.candidates) - 1}) answers more "
                f"than today's rules request after request ({self.answered} of {len(self.requests)}) or as "
                "many for less — these requests share too few cells for one measurement to serve several."
            )
        more = self.answered - self.one_by_one_answered
        gain = (
            f"answers {more} more ({self.answered} against {at_most}{self.one_by_one_answered})"
            if more > 0
            else f"answers as many ({self.answered}) for a system cost of {self.system_cost_after:.4g} "
            f"against {one.system_cost_after:.4g}"
        )
        return (
            f"The batch saves: {len(self.measurements)} measurement(s) of {self.strategy} are shared by "
            f"{len(self.ids('planned'))} request(s), each answered from history, where today's rules buy "
            f"{one.rows} answer(s) one at a time; it {gain}"
            + (f" ({n_free} already free from history)" if n_free else "")
            + "."
        )

    def check_affordable(
        self, cell_costs: np.ndarray, total: float, rule: PersonRule = ROW_RULE, measure: str = "epsilon"
    ) -> None:
        """Raise :class:`BudgetError` (one line) when the whole plan would pass ``total`` in some cell, or
        one person's loss (``rule``) would pass it."""
        after = np.asarray(cell_costs, dtype=float) + self.charge.dense(np.asarray(cell_costs).size)
        if after.size and float(after.max()) > total * (1 + 1e-12):
            raise BudgetError(
                f"the batch plan would raise cell #{int(after.argmax())}'s cost to "
                f"{float(after.max()):.6g}, over the total budget {total:g}; nothing was released"
            )
        person = rule.total(after, measure)
        if not rule.rows_are_people and person > total * (1 + 1e-12):
            raise BudgetError(
                f"the batch plan would raise one person's privacy loss to {person:.6g}, over the total "
                f"budget {total:g}; nothing was released"
            )

    def to_json(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "measurements": [
                {"query": m.query.to_json(), "alpha": m.alpha, "family": m.family} for m in self.measurements
            ],
            "requests": [p.to_json() for p in self.requests],
            "total_budget": self.total_budget,
            "system_cost": self.system_cost,
            "system_cost_after": self.system_cost_after,
            "answered": self.answered,
            "one_by_one": self.one_by_one.to_json(),
            "candidates": [c.to_json() for c in self.candidates],
            "elapsed_ms": self.elapsed_ms,
            "left_out": list(self.left_out),
            "look_ahead": None if self.look_ahead is None else self.look_ahead.to_json(),
            "resumes": None if self.resumes is None else self.resumes.to_json(),
        }

    def index_of(self, k: int) -> int:
        """Where measurement ``k`` of this plan stands in the plan as recorded (a resumed plan's first
        measurement is the first one not yet bought)."""
        return k + (self.resumes.recorded if self.resumes is not None else 0)

    @property
    def count(self) -> int:
        """Measurements in the plan as recorded (more than ``measurements`` when it resumes one)."""
        return self.resumes.count if self.resumes is not None else len(self.measurements)


def per_person(plan: BatchPlan, k: int, total: float) -> BatchPlan:
    """A plan made against a cell's room per row, ``total / k``, with its figures as one person's loss
    (``k`` is the person rule's factor: the rows per person in ε, their square in ρ under zCDP).

    A person may hold up to ``k`` rows in one cell, so their loss is ``k`` × the largest per-row cell cost
    (docs/person-level.md): a plan whose per-row system cost stays within ``total / k`` keeps every person
    within ``total``, and each of its system costs (before, after, each candidate's, the look-ahead's, a
    request's rise alone) is ``k`` × the per-row one, exactly.
    """
    if k == 1:
        return plan
    la = plan.look_ahead
    return replace(
        plan,
        total_budget=total,
        system_cost=k * plan.system_cost,
        system_cost_after=k * plan.system_cost_after,
        one_by_one=replace(plan.one_by_one, system_cost_after=k * plan.one_by_one.system_cost_after),
        candidates=tuple(replace(c, system_cost_after=k * c.system_cost_after) for c in plan.candidates),
        requests=tuple(replace(p, alone=None if p.alone is None else k * p.alone) for p in plan.requests),
        look_ahead=None if la is None else replace(la, system_cost_after=k * la.system_cost_after),
    )


def resume_plan(
    recorded: Mapping[str, Any],
    requests: Mapping[str, Request],
    shape: tuple[int, ...],
    cell_costs: np.ndarray,
    resumes: Resumption,
    rule: PersonRule = ROW_RULE,
    measure: str = "epsilon",
) -> BatchPlan:
    """The batch plan a ledger entry recorded (``recorded``: :meth:`BatchPlan.to_json`), resumed where it
    stopped: the measurements from ``resumes.recorded`` on, priced from ``cell_costs`` as they are now.

    ``requests`` are the batch's requests still waiting (the others are left out: answered, rejected or
    removed since). Nothing is planned again: what was decided before the first measurement stands.
    """
    n = math.prod(shape)
    rows = recorded["measurements"]
    measurements = tuple(
        Measurement(query_from_json(m["query"], n, shape), float(m["alpha"]), str(m["family"]))
        for m in rows[resumes.recorded :]
    )
    planned = tuple(
        PlannedRequest(
            requests[r["id"]],
            str(r["status"]),
            r.get("alone"),
            r.get("confidence"),
            r.get("offer_eps"),
            r.get("free_eps"),
            str(r.get("reason", "")),
        )
        for r in recorded["requests"]
        if r["id"] in requests
    )
    costs0 = np.asarray(cell_costs, dtype=float)
    after = costs_after(costs0, measurements)
    after.setflags(write=False)
    la = recorded.get("look_ahead")
    return BatchPlan(
        strategy=str(recorded["strategy"]),
        measurements=measurements,
        requests=planned,
        total_budget=float(recorded["total_budget"]),
        system_cost=rule.total(costs0, measure),
        system_cost_after=rule.total(after, measure),
        one_by_one=Candidate(**recorded["one_by_one"]),
        candidates=tuple(Candidate(**c) for c in recorded["candidates"]),
        cell_costs_after=after,
        left_out=tuple(recorded.get("left_out", ())),
        look_ahead=None if la is None else LookAhead(**la),
        resumes=resumes,
    )
