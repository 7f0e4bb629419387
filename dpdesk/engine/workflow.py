"""The answering workflow of paper Fig. 4: assess a request, then infer, spend or reject.

:func:`assess` looks only at public quantities — the released history, the request's accuracy
requirement and the budget — never at the data, and draws no noise. It returns an immutable
:class:`Assessment` with the posterior of the answer, the decision and its reason, and the budget
before and after. :func:`release_fresh` is the only place that touches the cube: it draws noise from an
injected sampler and returns the fresh answer *unrecorded*; the caller must record it durably before
showing it (DESIGN §4) and then append ``answer.history_row()`` to the history.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from dpdesk.engine.budget import BudgetPreview, check_requirement, check_total_budget, fresh_alpha, preview
from dpdesk.engine.cube import Cube
from dpdesk.engine.errors import BudgetError, DpdeskError
from dpdesk.engine.history import Estimate, History, HistoryRow
from dpdesk.engine.noise import NoiseFamily, NoiseSampler
from dpdesk.engine.posterior import Posterior, posterior
from dpdesk.engine.query import Query
from dpdesk.engine.schema import Schema

Decision = Literal["infer", "spend", "reject"]
METHODS = ("fft", "direct", "mc")


@dataclass(frozen=True)
class Request:
    """A data user's question: the query and the accuracy requirement ``Pr(|answer − θ| ≤ ε) ≥ 1 − δ``."""

    id: str
    query: Query
    eps: float
    delta: float
    requester: str = ""

    def __post_init__(self) -> None:
        check_requirement(self.eps, self.delta)


def default_family(query: Query) -> NoiseFamily:
    """Integer-coefficient queries get exact discrete Laplace noise, others continuous Laplace."""
    return "discrete_laplace" if query.is_integer else "laplace"


@dataclass(frozen=True)
class Assessment:
    """Everything the curator sees before deciding; computed from public quantities only."""

    request: Request
    decision: Decision
    reason: str
    estimate: Estimate
    posterior: Posterior | None
    interval: tuple[float, float] | None
    interval_confidence: float | None
    confidence_at_eps: float | None
    family: NoiseFamily
    fresh_alpha: float
    budget: BudgetPreview
    cell_costs: np.ndarray
    method: str
    elapsed_ms: float
    interval_query: tuple[float, float] | None = None
    interval_probability: float | None = None
    schema: Schema | None = field(default=None, repr=False)

    @property
    def estimable(self) -> bool:
        return self.estimate.estimable

    @property
    def sensitivity(self) -> float:
        return self.request.query.sensitivity

    @property
    def cost(self) -> float:
        """Budget this decision spends (0 for infer and reject)."""
        return self.fresh_alpha if self.decision == "spend" else 0.0

    def to_json(self) -> dict[str, Any]:
        """The DESIGN §6 assessment object (fields that do not apply are null)."""
        est = self.estimate
        b = self.budget
        out: dict[str, Any] = {
            "request_id": self.request.id,
            "estimable": est.estimable,
            "estimate": est.estimate,
            "std": est.std,
            "interval": list(self.interval) if self.interval else None,
            "interval_confidence": self.interval_confidence,
            "confidence_at_eps": self.confidence_at_eps,
            "eps": self.request.eps,
            "delta": self.request.delta,
            "decision": self.decision,
            "reason": self.reason,
            "sensitivity": self.sensitivity,
            "family": self.family,
            "fresh_alpha": self.fresh_alpha,
            "system_cost": b.system_cost,
            "system_cost_after": b.system_cost_after,
            "remaining": b.remaining,
            "remaining_after": b.remaining_after,
            "total_budget": b.total,
            "cell_costs": [float(c) for c in self.cell_costs],
            "history_size": est.history_size,
            "coefficients": None if est.coefficients is None else [float(a) for a in est.coefficients],
            "method": self.method,
            "elapsed_ms": self.elapsed_ms,
        }
        if self.interval_query is not None:
            out["interval_query"] = list(self.interval_query)
            out["interval_probability"] = self.interval_probability
        return out


def _fmt(x: float) -> str:
    return f"{x:.4g}"


def assess(
    history: History,
    request: Request,
    *,
    total_budget: float,
    method: str = "fft",
    family: NoiseFamily | None = None,
    interval: tuple[float, float] | None = None,
    schema: Schema | None = None,
    rng: np.random.Generator | None = None,
    progress=None,
    cancelled=None,
) -> Assessment:
    """Decide how to answer ``request`` given ``history`` (paper Fig. 4, DESIGN §1).

    1. If the query is estimable from history and the posterior puts at least ``1−δ`` on
       ``[θ̂−ε, θ̂+ε]``: *infer* — release ``θ̂`` for free.
    2. Else, if a fresh answer with ``α = fresh_alpha(S, ε, δ)`` keeps every cell within the total
       budget: *spend*.
    3. Else *reject*, naming the cell that would overflow.

    Nothing here reads the data or draws privacy noise; ``rng`` only drives Monte Carlo inference.
    """
    t0 = time.perf_counter()
    check_total_budget(total_budget)
    if method not in METHODS:
        raise DpdeskError(f"method ({method!r}) must be one of {', '.join(METHODS)}")
    if interval is not None:
        lo, hi = float(interval[0]), float(interval[1])
        if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
            raise DpdeskError(f"interval [{interval[0]}, {interval[1]}] must be finite with L ≤ U")
        interval = (lo, hi)
    q = request.query
    family = family or default_family(q)
    est = history.estimate(q)
    post: Posterior | None = None
    ci = ci_conf = conf_eps = prob = None
    if est.estimable:
        assert est.estimate is not None and est.coefficients is not None and est.noise_scales is not None
        post = posterior(
            est.estimate,
            est.coefficients,
            est.noise_scales,
            list(est.families),
            method=method,
            rng=rng,
            progress=progress,
            cancelled=cancelled,
        )
        cred = post.interval(request.delta)
        ci, ci_conf = (cred.low, cred.high), cred.confidence
        conf_eps = post.prob_between(est.estimate - request.eps, est.estimate + request.eps)
        if interval is not None:
            prob = post.prob_between(*interval)
    alpha = fresh_alpha(q.sensitivity, request.eps, request.delta, family)
    costs = history.cell_costs
    budget = preview(costs, total_budget, q, alpha)
    need = 1.0 - request.delta
    if conf_eps is not None and conf_eps >= need:
        decision: Decision = "infer"
        reason = (
            f"answerable from history — costs 0 (confidence {conf_eps:.4f} ≥ {need:.4f} at ±{_fmt(request.eps)})"
        )
    elif budget.fits:
        decision = "spend"
        why = (
            "not estimable from history"
            if not est.estimable
            else f"history reaches only {conf_eps:.4f} < {need:.4f} at ±{_fmt(request.eps)}"
        )
        reason = (
            f"needs a fresh answer — costs α = {_fmt(alpha)}; system cost "
            f"{_fmt(budget.system_cost)} → {_fmt(budget.system_cost_after or 0.0)} ({why})"
        )
    else:
        decision = "reject"
        cell = budget.limiting_cell
        where = schema.describe_cell(cell) if (schema is not None and cell is not None) else f"#{cell}"
        reason = (
            f"cannot answer — would exceed the total budget in cell {where} "
            f"({_fmt(budget.system_cost_after or 0.0)} > {_fmt(total_budget)})"
        )
    return Assessment(
        request=request,
        decision=decision,
        reason=reason,
        estimate=est,
        posterior=post,
        interval=ci,
        interval_confidence=ci_conf,
        confidence_at_eps=conf_eps,
        family=family,
        fresh_alpha=alpha,
        budget=budget,
        cell_costs=costs,
        method=method,
        elapsed_ms=(time.perf_counter() - t0) * 1000.0,
        interval_query=interval,
        interval_probability=prob,
        schema=schema,
    )


@dataclass(frozen=True)
class FreshAnswer:
    """A noisy answer just drawn, not yet recorded. Record it durably before revealing ``answer``."""

    request_id: str
    query: Query
    alpha: float
    sensitivity: float
    family: NoiseFamily
    answer: float
    eps: float
    sampler: str

    @property
    def interval(self) -> tuple[float, float]:
        return (self.answer - self.eps, self.answer + self.eps)

    def history_row(self) -> HistoryRow:
        return HistoryRow(self.query, self.alpha, self.answer, self.family)


def true_answer(query: Query, cube: Cube) -> float:
    """``θ = Q·x`` — private; used only inside :func:`release_fresh` and in tests."""
    if query.n_cells != cube.schema.n_cells:
        raise DpdeskError(f"query has {query.n_cells} coefficients, the cube has {cube.schema.n_cells} cells")
    if query.terms is not None and all(len(t.factors) == cube.counts.ndim for t in query.terms):
        total = 0.0
        x = cube.counts.astype(float)
        for t in query.terms:
            v = x
            for f in reversed(t.factors):  # contract the last axis each time
                v = v @ f
            total += t.weight * float(v)
        return total
    idx, val = query.sparse()
    return float(val @ cube.flat[idx])


def release_fresh(
    assessment: Assessment, cube: Cube, sampler: NoiseSampler, *, allow_insecure: bool = False
) -> FreshAnswer:
    """Draw the fresh noisy answer of a *spend* assessment (α-DP for sensitivity S, scale S/α).

    The returned value is not recorded anywhere; the caller records it durably before showing it.
    ``allow_insecure`` must be set to use a non-secure (seeded) sampler, which only test projects do.
    """
    if assessment.decision != "spend":
        raise BudgetError(f"request {assessment.request.id!r}: decision is {assessment.decision!r}, not 'spend'")
    if not assessment.budget.fits:
        raise BudgetError(f"request {assessment.request.id!r}: a fresh answer would exceed the total budget")
    if not getattr(sampler, "secure", False) and not allow_insecure:
        raise BudgetError(f"sampler {getattr(sampler, 'name', sampler)!r} is not secure; releases need the vetted sampler")
    q = assessment.request.query
    alpha = assessment.fresh_alpha
    scale = q.sensitivity / alpha  # privacy map: Laplace(S/α) on sensitivity S is α-DP
    noise = sampler.draw(assessment.family, scale)
    return FreshAnswer(
        request_id=assessment.request.id,
        query=q,
        alpha=alpha,
        sensitivity=q.sensitivity,
        family=assessment.family,
        answer=true_answer(q, cube) + noise,
        eps=assessment.request.eps,
        sampler=sampler.name,
    )
