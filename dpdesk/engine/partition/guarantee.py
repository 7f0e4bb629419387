"""What a partition release will be good for, priced before anything is spent (public inputs only).

Two kinds of accuracy statement, always labelled:

- **per query** (dpdesk's): for a class of queries (every interval of an ordered attribute, every
  cell, every cell of a marginal) the BLUE from the release's rows has an exactly known error law
  (:mod:`.grouped`); the statement is the ``1−δ`` half-width of the class member with the largest
  posterior variance, e.g. "every interval of age within ±37 at 95 %". Each query gets this guarantee
  on its own; the engine assesses every later request against everything released.
- **simultaneous** (the seed's, Thm 4.2 via Lemma 4.1, in counts): with probability ``1−δ`` *every*
  0/1 query over the cells of a cell release is within ``β·b·ln(2β/((1+p)δ))`` at once (the
  discrete-Laplace form of ``β·ln(β/δ)/α``; ``β`` cells, ``b = 1/α``). It grows like ``β ln β`` and only
  applies to the seed's own release (every cell).

An accuracy target ``(E, δ)`` for one class is turned into the smallest α meeting it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpdesk.engine.budget.accounting import BudgetPreview, check_total_budget
from dpdesk.engine.budget.accounting import preview as budget_preview
from dpdesk.engine.budget.mode import ZcdpAccounting
from dpdesk.engine.budget.person import ROW_RULE, PersonRule
from dpdesk.engine.errors import BudgetError, PlanError
from dpdesk.engine.limits import MAX_ALPHA, check_alpha, check_eps
from dpdesk.engine.partition.classes import QueryClass, check_class, default_classes, describe_box
from dpdesk.engine.partition.grouped import GroupedPosterior, discrete_variance, grouped_terms
from dpdesk.engine.partition.plan import PartitionPlan
from dpdesk.engine.partition.privacy_map import PARTITION
from dpdesk.engine.partition.solver import PlanSolver, pieces_dense
from dpdesk.engine.queries.query import Query, Term
from dpdesk.engine.schema import Schema
from dpdesk.engine.vocabulary import accuracy_text

__all__ = [
    "Guarantee",
    "PlanPreview",
    "QueryClass",
    "SimultaneousBound",
    "alpha_for_accuracy",
    "default_classes",
    "describe_box",
    "preview",
    "query_terms",
    "simultaneous_bound",
]

_CANDIDATES = 3  # class members (largest variance first) whose exact posterior is computed


def plain_number(x: float) -> str:
    """A count-sized number as people read it: ``796,800`` rather than ``7.968e+05``; small ones to four
    significant digits."""
    return f"{x:,.0f}" if abs(x) >= 10_000 else f"{x:.4g}"


@dataclass(frozen=True, eq=False)
class Guarantee:
    """Per-query accuracy of one query class from the release alone (exact posterior)."""

    query_class: QueryClass
    delta: float
    estimable: bool
    halfwidth: float | None = None  # E: the worst member is within ±E with probability ≥ confidence
    confidence: float | None = None  # proven lower bound of Pr(|error| ≤ E), ≥ 1 − δ
    std: float | None = None  # posterior standard deviation of the worst member
    worst: Query | None = None
    kind: str = "per query (exact posterior)"

    def text(self, schema: Schema | None = None) -> str:
        """The release's own guarantee for one query class, in plain numbers (the ledger keeps ``kind``)."""
        what = self.query_class.describe()
        if not self.estimable:
            return f"each query, {what}: not estimable from this release"
        worst = (
            f"; widest: {describe_box(schema, self.worst)}"
            if self.worst is not None and schema is not None
            else ""
        )
        assert self.halfwidth is not None  # an estimable class has one
        return (
            f"each query, {what}: within ±{plain_number(self.halfwidth)} at "
            f"{100 * (1 - self.delta):.4g} % confidence (this release's exact posterior){worst}"
        )

    def to_json(self, schema: Schema | None = None) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "query_class": self.query_class.to_json(),
            "description": self.query_class.describe(),
            "delta": self.delta,
            "estimable": self.estimable,
            "halfwidth": self.halfwidth,
            "confidence": self.confidence,
            "std": self.std,
            "worst_query": None if self.worst is None or schema is None else describe_box(schema, self.worst),
        }


@dataclass(frozen=True)
class SimultaneousBound:
    """The seed's bound for all 0/1 queries over the cells at once (Thm 4.2, Lemma 4.1, in counts)."""

    applies: bool
    delta: float
    cells: int
    halfwidth: float | None = None
    note: str = ""
    kind: str = "simultaneous (seed Thm 4.2)"

    def text(self) -> str:
        """A looser bound, after the release's own guarantee: all count queries at once (no paper numbers)."""
        if not self.applies:
            return f"all count queries at once: no such bound here ({self.note})"
        assert self.halfwidth is not None  # a bound that applies has one
        return (
            f"all count queries at once (a looser bound): every count over the {self.cells:,} cells within "
            f"±{plain_number(self.halfwidth)}, all together at {100 * (1 - self.delta):.4g} % confidence"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "applies": self.applies,
            "delta": self.delta,
            "cells": self.cells,
            "halfwidth": self.halfwidth,
            "note": self.note,
        }


@dataclass(frozen=True, eq=False)
class PlanPreview:
    """Everything the curator sees before a partition release: cost, budget after, guarantees."""

    plan: PartitionPlan
    alpha: float  # what every cell pays (paper Thm 5.4)
    row_alpha: float  # each released count's budget (α / coverage)
    scale: float  # discrete-Laplace scale of every count, 1/row_alpha
    delta: float
    budget: BudgetPreview  # the system cost now and after (every cell pays α)
    guarantees: tuple[Guarantee, ...]
    simultaneous: SimultaneousBound
    target: float | None = None  # the accuracy target α was chosen for, if any
    elapsed_ms: float = 0.0

    @property
    def n_rows(self) -> int:
        return self.plan.n_rows

    @property
    def fits(self) -> bool:
        return self.budget.fits

    def to_json(self) -> dict[str, Any]:
        s = self.plan.schema
        return {
            "plan": self.plan.to_json(),
            "description": self.plan.description,
            "rows": self.n_rows,
            "coverage": self.plan.coverage,
            "alpha": self.alpha,
            "cell_charge": self.alpha,
            "row_alpha": self.row_alpha,
            "noise": {"family": "discrete_laplace", "scale": self.scale},
            "delta": self.delta,
            "accuracy_target": self.target,
            "total_budget": self.budget.total,
            "system_cost": self.budget.system_cost,
            "system_cost_after": self.budget.system_cost_after,
            "remaining": self.budget.remaining,
            "remaining_after": self.budget.remaining_after,
            "limiting_cell": self.budget.limiting_cell,
            "fits": self.fits,
            "guarantees": [g.to_json(s) for g in self.guarantees],
            "simultaneous": self.simultaneous.to_json(),
            "elapsed_ms": self.elapsed_ms,
        }


def _query(shape: tuple[int, ...], factors: list[np.ndarray]) -> Query:
    return Query(shape, terms=(Term(1.0, tuple(factors)),))


def _unit(k: int) -> np.ndarray:
    e = np.zeros(k)
    e[0] = 1.0
    return e


def _candidates(solver: PlanSolver, qc: QueryClass, count: int) -> list[Query]:
    """The class members of largest posterior variance (the variance ordering does not depend on α)."""
    plan = solver.plan
    shape = plan.shape
    s = plan.schema
    if qc.kind == "cell":
        return [_query(shape, [_unit(k) for k in shape])]
    if qc.kind == "marginal":
        return [
            _query(
                shape, [_unit(a.size) if a.name in qc.attributes else np.ones(a.size) for a in s.attributes]
            )
        ]
    axis = s.axis(qc.attribute)  # type: ignore[arg-type]
    k = shape[axis]
    fixed = [np.ones(kd) if qc.within == "all" else _unit(kd) for kd in shape]
    K = np.zeros((k, k))
    for c, ops in solver.terms:
        w = c * math.prod(op.quad(f, f) for d, (op, f) in enumerate(zip(ops, fixed)) if d != axis)
        K += w * ops[axis].to_dense()
    P = np.zeros((k + 1, k + 1))
    P[1:, 1:] = K.cumsum(0).cumsum(1)
    lo, hi = np.triu_indices(k)
    var = P[hi + 1, hi + 1] - P[lo, hi + 1] - P[hi + 1, lo] + P[lo, lo]
    count = min(count, var.size)
    top = np.argpartition(-var, count - 1)[:count]
    order = top[np.argsort(-var[top], kind="stable")]
    out = []
    for i in order:
        f = np.zeros(k)
        f[lo[i] : hi[i] + 1] = 1.0
        factors = list(fixed)
        factors[axis] = f
        out.append(_query(shape, factors))
    return out


def query_terms(solver: PlanSolver, query: Query) -> tuple[np.ndarray, np.ndarray]:
    """Distinct ``|A_k|`` of the BLUE's coefficients over all released rows, and their multiplicities."""
    vals: list[np.ndarray] = []
    cnts: list[np.ndarray] = []
    for g, coef in zip(solver.plan.groups, solver.group_coefficients(query)):
        if isinstance(coef, np.ndarray):
            v, m = grouped_terms(coef)
        elif len(coef) == 1:
            w, vecs = coef[0]
            v, m = np.array([abs(w)]), np.array([1], dtype=np.int64)
            for vec in vecs:
                uv, uc = grouped_terms(vec)
                v, m = grouped_terms(np.outer(v, uv).ravel(), np.outer(m, uc).ravel())
        elif coef:
            v, m = grouped_terms(pieces_dense(coef, g.shape))
        else:
            continue
        vals.append(v)
        cnts.append(m)
    if not vals:
        return np.zeros(0), np.zeros(0, dtype=np.int64)
    return grouped_terms(np.concatenate(vals), np.concatenate(cnts))


def _halfwidth(solver: PlanSolver, query: Query, scale: float, delta: float) -> tuple[float, float, float]:
    u, m = query_terms(solver, query)
    post = GroupedPosterior(u, m, scale)
    e, conf = post.halfwidth(delta)
    return e, conf, post.std


def _class_guarantee(
    solver: PlanSolver, qc: QueryClass, scale: float, delta: float, candidates: list[Query] | None = None
) -> Guarantee:
    cands = candidates if candidates is not None else _candidates(solver, qc, _CANDIDATES)
    if not _class_estimable(solver, qc, cands):
        return Guarantee(qc, delta, estimable=False)
    best: tuple[float, float, float, Query] | None = None
    for q in cands:
        e, conf, std = _halfwidth(solver, q, scale, delta)
        if best is None or e > best[0]:
            best = (e, conf, std, q)
    assert best is not None
    return Guarantee(qc, delta, True, halfwidth=best[0], confidence=best[1], std=best[2], worst=best[3])


def _class_estimable(solver: PlanSolver, qc: QueryClass, cands: list[Query]) -> bool:
    probe = list(cands)
    if qc.kind == "interval":  # the finest member too: estimability can fail at single labels only
        axis = solver.plan.schema.axis(qc.attribute)  # type: ignore[arg-type]
        f = [f_.copy() for f_ in cands[0].terms[0].factors]  # type: ignore[index]
        f[axis] = _unit(solver.shape[axis])
        probe.append(_query(solver.shape, f))
    return all(solver.estimable(q) for q in probe)


def simultaneous_bound(plan: PartitionPlan, alpha: float, delta: float) -> SimultaneousBound:
    """The seed's Lemma 4.1 union bound in counts, for discrete-Laplace noise of scale ``b = 1/α``.

    ``Pr(|N| > t) = 2p^{⌊t⌋+1}/(1+p) ≤ 2e^{-t/b}/(1+p)``; with ``t = E/β`` for each of the ``β`` cells,
    ``Σ|N_i| ≤ E`` fails with probability at most ``β·2e^{-E/(βb)}/(1+p) = δ``.
    """
    beta = plan.schema.n_cells
    if plan.kind != "cells":
        return SimultaneousBound(False, delta, beta, note="only a release of every cell has one")
    b = 1.0 / plan.row_alpha(alpha)
    p = math.exp(-1.0 / b)
    e = beta * b * math.log(2 * beta / ((1 + p) * delta))
    return SimultaneousBound(True, delta, beta, halfwidth=e)


def _check_number(name: str, x: float, *, upper: float | None = None) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float, np.floating)) or not math.isfinite(x) or x <= 0:
        raise BudgetError(f"{name} ({x!r}) must be a positive finite number")
    if upper is not None and x >= upper:
        raise BudgetError(f"{name} ({x!r}) must be below {upper}")
    return float(x)


def alpha_for_accuracy(
    plan: PartitionPlan, accuracy: float, delta: float, query_class: QueryClass | None = None
) -> float:
    """The smallest α (found to 0.2 %) whose release meets ``±accuracy`` at ``1−δ`` for ``query_class``."""
    accuracy = _check_number("accuracy", accuracy)
    delta = _check_number("delta", delta, upper=1.0)
    qc = query_class or default_classes(plan)[0]
    check_class(plan, qc)
    solver = PlanSolver(plan)
    cands = _candidates(solver, qc, _CANDIDATES)
    if not _class_estimable(solver, qc, cands):
        raise PlanError(f"accuracy target: {qc.describe()} is not estimable from this plan")

    def width(alpha: float, qs: list[Query]) -> float:
        return max(_halfwidth(solver, q, plan.coverage / alpha, delta)[0] for q in qs)

    top = cands[:1]
    alpha = 1.0
    for _ in range(2):  # the half-width scales nearly like 1/α
        w = width(alpha, top)
        if w == 0:  # a discrete count's half-width reaches 0 at a large α: met, the search below walks down
            break
        alpha *= w / accuracy
    lo, hi = alpha / 1.02, alpha * 1.02
    while width(hi, top) > accuracy:
        if hi > MAX_ALPHA:  # no budget meets it (preview says so)
            return hi
        lo, hi = hi, hi * 1.05
    while width(lo, top) <= accuracy and lo > 1e-12:
        hi, lo = lo, lo / 1.05
    while hi / lo > 1.002:
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if width(mid, top) <= accuracy else (mid, hi)
    while width(hi, cands) > accuracy:  # the other large-variance members, in case one is wider
        hi *= 1.002
    return hi


def preview(
    plan: PartitionPlan,
    *,
    alpha: float | None = None,
    accuracy: float | None = None,
    delta: float = 0.05,
    total_budget: float,
    cell_costs: np.ndarray | None = None,
    classes: Sequence[QueryClass] | None = None,
    accounting: ZcdpAccounting | None = None,
    rule: PersonRule = ROW_RULE,
) -> PlanPreview:
    """Price and describe a release of ``plan`` at ``alpha`` (or the α meeting ``accuracy``) — spends nothing.

    Parameters
    ----------
    plan : PartitionPlan
    alpha, accuracy : float
        Give exactly one: the budget every cell pays, or the ``±E`` the first query class must meet.
    delta : float
        The guarantees' ``δ``.
    total_budget : float
    cell_costs : ndarray, optional
        Per-cell costs already spent (public; the ledger's ``B``).
    classes : sequence of QueryClass, optional
        What to report (default :func:`default_classes`).
    accounting : ZcdpAccounting, optional
        A zCDP project's: ``total_budget`` and ``cell_costs`` are then in ρ, and the release (pure ε, α per
        cell) costs ``α²/2`` per cell.
    rule : PersonRule, optional
        How per-cell costs add up to one person's loss (:mod:`dpdesk.engine.budget.person`).
    """
    t0 = time.perf_counter()
    if not isinstance(plan, PartitionPlan):
        raise PlanError(f"plan must be a PartitionPlan, got {type(plan).__name__}")
    check_total_budget(total_budget)
    delta = _check_number("delta", delta, upper=1.0)
    if (alpha is None) == (accuracy is None):
        raise BudgetError("give exactly one of alpha and accuracy")
    qcs = tuple(classes) if classes else default_classes(plan)
    for qc in qcs:
        check_class(plan, qc)
    target = None
    if accuracy is not None:
        target = check_eps(_check_number("accuracy", accuracy), "accuracy")
        alpha = alpha_for_accuracy(plan, target, delta, qcs[0])
        if alpha > MAX_ALPHA:
            raise BudgetError(
                f"accuracy {accuracy_text(target, delta, short=True)} would need ε = {alpha:.3g} per cell, more than any "
                f"budget ({MAX_ALPHA:g})"
            )
    alpha = check_alpha(_check_number("epsilon", alpha))  # type: ignore[arg-type]
    row_alpha = plan.row_alpha(alpha)
    scale = 1.0 / row_alpha
    solver = PlanSolver(plan)
    guarantees = tuple(_class_guarantee(solver, qc, scale, delta) for qc in qcs)
    costs = np.zeros(plan.schema.n_cells) if cell_costs is None else np.asarray(cell_costs, dtype=float)
    if costs.size != plan.schema.n_cells:
        raise PlanError(f"cell costs have {costs.size} entries, the cube has {plan.schema.n_cells} cells")
    # every cell pays α: one count per group, each at α/coverage
    budget = budget_preview(
        costs, float(total_budget), PARTITION.charge_for(plan.coverage, scale), accounting, rule
    )
    return PlanPreview(
        plan=plan,
        alpha=alpha,
        row_alpha=row_alpha,
        scale=scale,
        delta=delta,
        budget=budget,
        guarantees=guarantees,
        simultaneous=simultaneous_bound(plan, alpha, delta),
        target=target,
        elapsed_ms=1000 * (time.perf_counter() - t0),
    )


def row_variance(scale: float) -> float:
    """Noise variance of one released count (discrete Laplace of ``scale``)."""
    return discrete_variance(scale)
