"""The answering workflow of paper Fig. 4: assess a request, then infer, spend or reject.

:func:`assess` looks only at public quantities — the released history, the request's accuracy
requirement and the budget — never at the data, and draws no noise. It returns an immutable
:class:`Assessment` with the posterior of the answer, the decision and its reason, and the budget
before and after. :func:`release_fresh` is the only place that touches the cube: it draws noise from an
injected sampler and returns the fresh answer *unrecorded*; the caller must record it durably before
showing it (DESIGN §4) and then append ``answer.history_row()`` to the history.

Beyond the paper (DESIGN §2): with ``fusion=True`` (the default) a fresh answer to a query history can
already estimate is released fused with history's BLUE, so it is charged the smaller α of
:func:`dpdesk.engine.inference.fusion.plan_fusion` (never more than Thm 5.3's); with ``prior=BoundedPrior(N)``
the posterior is truncated to the answers a table of ``N`` records allows and intervals are
highest-density intervals (:mod:`dpdesk.engine.inference.prior`); with ``policy=SpendPolicy(floor, cap)`` fresh
answers are paced against the remaining budget (:mod:`dpdesk.engine.budget.policy`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from dpdesk.engine.budget.accounting import BudgetPreview, check_requirement, check_total_budget, preview
from dpdesk.engine.cube import Cube
from dpdesk.engine.errors import BudgetError, DpdeskError
from dpdesk.engine.inference.fusion import FusionPlan, fuse, fused_confidence, fusion_weight, plan_fusion
from dpdesk.engine.inference.history import Estimate, History, HistoryRow
from dpdesk.engine.mechanisms.base import meets
from dpdesk.engine.mechanisms.laplace import NoiseMechanism
from dpdesk.engine.mechanisms.noise import NoiseFamily, NoiseSampler
from dpdesk.engine.mechanisms.registry import check_method, family_for, noise_family
from dpdesk.engine.budget.policy import PolicyOutcome, SpendPolicy
from dpdesk.engine.inference.posterior import Posterior, posterior
from dpdesk.engine.inference.prior import BoundedPrior, TruncatedPosterior, truncate
from dpdesk.engine.queries.query import Query
from dpdesk.engine.schema import Schema

Decision = Literal["infer", "spend", "reject"]


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
    noise: NoiseMechanism  # the noise family a fresh answer is drawn from
    fresh_alpha: float
    budget: BudgetPreview
    cell_costs: np.ndarray
    method: str
    elapsed_ms: float
    interval_query: tuple[float, float] | None = None
    interval_probability: float | None = None
    schema: Schema | None = field(default=None, repr=False)
    # -- beyond the paper (DESIGN §2); defaults keep the paper's meaning --------------------------
    spend_alpha: float | None = None  # what "spend" charges: the fused α, else fresh_alpha
    fusion_weight: float | None = None  # t, weight of the new answer in the released value (None: no fusion)
    fused_confidence: float | None = None  # fused posterior mass on ±ε at spend_alpha
    fusion: bool = False  # whether fusion was considered
    prior: str = "flat"  # "flat" or "bounded [L, U]"
    prior_bounds: tuple[float, float] | None = None
    release_estimate: float | None = None  # what "infer" releases (θ̂, or θ̂ clipped into the best window)
    release_interval: tuple[float, float] | None = None  # what "infer" releases ([θ̂ ± ε], or the best 2ε window)
    policy: str = "greedy"  # the spend policy's description
    needed_alpha: float | None = None  # α the request needs (fused or Thm 5.3) before the spend policy
    headroom: float | None = None  # largest α the query's cells can still pay for (None without a policy)

    def __post_init__(self) -> None:
        if self.spend_alpha is None:
            object.__setattr__(self, "spend_alpha", self.fresh_alpha)

    @property
    def family(self) -> str:
        """The registered name of :attr:`noise`."""
        return self.noise.name

    @property
    def estimable(self) -> bool:
        return self.estimate.estimable

    @property
    def sensitivity(self) -> float:
        return self.request.query.sensitivity

    @property
    def cost(self) -> float:
        """Budget this decision spends (0 for infer and reject; ``spend_alpha`` for spend)."""
        return float(self.spend_alpha) if self.decision == "spend" else 0.0  # type: ignore[arg-type]

    @property
    def fused(self) -> bool:
        """True when a fresh answer would be released fused with history."""
        return self.fusion_weight is not None

    @property
    def saving(self) -> float:
        """Budget fusion saves on a fresh answer relative to Thm 5.3 (0 without fusion)."""
        return self.fresh_alpha - float(self.spend_alpha)  # type: ignore[arg-type]

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
            "spend_alpha": self.spend_alpha,
            "fusion": self.fusion,
            "fusion_weight": self.fusion_weight,
            "fused_confidence": self.fused_confidence,
            "prior": self.prior,
            "prior_bounds": list(self.prior_bounds) if self.prior_bounds else None,
            "release_estimate": self.release_estimate,
            "release_interval": list(self.release_interval) if self.release_interval else None,
            "policy": self.policy,
            "needed_alpha": self.needed_alpha,
            "headroom": self.headroom if self.headroom is None or math.isfinite(self.headroom) else None,
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
    fusion: bool = True,
    prior: BoundedPrior | None = None,
    policy: SpendPolicy | None = None,
) -> Assessment:
    """Decide how to answer ``request`` given ``history`` (paper Fig. 4, DESIGN §1).

    1. If the query is estimable from history and the posterior puts at least ``1−δ`` on
       ``[θ̂−ε, θ̂+ε]``: *infer* — release ``θ̂`` for free.
    2. Else, if a fresh answer with ``α = fresh_alpha(S, ε, δ)`` keeps every cell within the total
       budget: *spend*.
    3. Else *reject*, naming the cell that would overflow.

    With ``fusion=True`` step 2 charges ``spend_alpha``, the smallest α whose fresh answer *fused with
    history's BLUE* meets ``(ε, δ)`` (never above Thm 5.3's α; equal to it when the query is not
    estimable); ``fusion=False`` is the paper's system. With ``prior=BoundedPrior(N)`` step 1 uses the
    posterior truncated to the query's bounds: the interval is the highest-density interval, and the
    confidence at ε is that of the best window of width 2ε (released instead of ``[θ̂ ± ε]``). Budgets
    never depend on the prior. With a ``policy`` (:class:`~dpdesk.engine.budget.policy.SpendPolicy`) a request
    needing more than ``cap`` of its cells' headroom is *rejected* (declined), and a fresh answer is
    charged at least ``floor`` of the headroom (fused with history when that still meets ``(ε, δ)``).

    Nothing here reads the data or draws privacy noise; ``rng`` only drives Monte Carlo inference.
    """
    t0 = time.perf_counter()
    check_total_budget(total_budget)
    check_method(method)
    if interval is not None:
        lo, hi = float(interval[0]), float(interval[1])
        if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
            raise DpdeskError(f"interval [{interval[0]}, {interval[1]}] must be finite with L ≤ U")
        interval = (lo, hi)
    q = request.query
    noise = family_for(q) if family is None else noise_family(family)
    est = history.estimate(q)
    post: Posterior | TruncatedPosterior | None = None
    ci = ci_conf = conf_eps = prob = None
    bounds = prior.bounds(q) if prior is not None else None
    release_est: float | None = None
    release_iv: tuple[float, float] | None = None
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
            align=request.eps,
        )
        if bounds is not None:
            post = truncate(post, *bounds)
            window = post.best_window(2.0 * request.eps)
            conf_eps = window.confidence
            release_iv = (window.low, window.high)
            release_est = min(max(est.estimate, window.low), window.high)
        else:
            conf_eps = post.central_mass(request.eps)  # a lower bound: decisions err on the safe side
            release_iv = (est.estimate - request.eps, est.estimate + request.eps)
            release_est = est.estimate
        cred = post.interval(request.delta)
        ci, ci_conf = (cred.low, cred.high), cred.confidence
        if interval is not None:
            prob = post.prob_between(*interval)
    alpha = noise.alpha_for(q.sensitivity, request.eps, request.delta)
    plan: FusionPlan | None = None
    spend = alpha
    if fusion and est.estimable and not meets(conf_eps, request.delta):
        # public quantities only: history's A, scales, families and the requirement (flat prior always)
        plan = plan_fusion(est, q.sensitivity, request.eps, request.delta, noise, method=_fusion_method(method))
        spend = min(plan.alpha, alpha)
    costs = history.cell_costs
    weight = fconf = None
    if plan is not None and plan.fused and spend < alpha:
        weight, fconf = plan.weight, plan.confidence
    needed = spend
    paced: PolicyOutcome | None = None
    infer = meets(conf_eps, request.delta)
    if policy is not None and not infer:
        paced = policy.apply(q, spend, costs, total_budget)
        if paced.raised:
            raised: float | None = paced.alpha
            w_r = c_r = None
            if fusion and est.estimable and est.variance:
                # fusing is the BLUE; keep it when its posterior still meets (ε, δ) at the raised α
                c = fused_confidence(est, paced.alpha, q.sensitivity, noise, request.eps, method=_fusion_method(method))
                if meets(c, request.delta):
                    w_r, c_r = fusion_weight(est.variance, noise.variance(q.sensitivity / paced.alpha)), c
            if w_r is None and paced.alpha < alpha:
                # a plain answer meets (ε, δ) alone only from Thm 5.3's α; if that does not fit, keep the plan
                raised = alpha if alpha <= paced.headroom else None
            if raised is not None:
                spend, weight, fconf = raised, w_r, c_r
    budget = preview(costs, total_budget, noise.charge_for(q, spend))
    fused = weight is not None
    if infer:
        decision: Decision = "infer"
        reason = (
            f"answerable from history — costs 0 (confidence {conf_eps:.4f} ≥ {1 - request.delta:.4f} at ±{_fmt(request.eps)})"
        )
    elif paced is not None and paced.declined and budget.fits:
        decision = "reject"
        cell = paced.limiting_cell
        where = schema.describe_cell(cell) if (schema is not None and cell is not None) else f"#{cell}"
        reason = (
            f"declined by the spend policy — needs α = {_fmt(needed)}, {needed / paced.headroom:.0%} of what "
            f"cell {where} can still pay (α ≤ {_fmt(paced.headroom)}); the policy declines requests over "
            f"{policy.cap:.0%}"  # type: ignore[union-attr]
        )
    elif budget.fits:
        decision = "spend"
        why = (
            "not estimable from history"
            if not est.estimable
            else f"history reaches only {conf_eps:.4f} < {1 - request.delta:.4f} at ±{_fmt(request.eps)}"
        )
        if paced is not None and spend > needed:
            price = (
                f"costs α = {_fmt(spend)} (spend policy: at least {policy.floor:.0%} of the "  # type: ignore[union-attr]
                f"headroom {_fmt(paced.headroom)}; the request alone needs {_fmt(needed)}"
                f"{', fused with history' if fused else ''})"
            )
        elif fused:
            price = f"costs α = {_fmt(spend)} instead of {_fmt(alpha)} thanks to history"
        else:
            price = f"costs α = {_fmt(alpha)}"
        reason = (
            f"needs a fresh answer — {price}; system cost "
            f"{_fmt(budget.system_cost)} → {_fmt(budget.system_cost_after or 0.0)} ({why})"
        )
    else:
        decision = "reject"
        cell = budget.limiting_cell
        where = schema.describe_cell(cell) if (schema is not None and cell is not None) else f"#{cell}"
        cheaper = f" even at α = {_fmt(spend)} (fused with history)" if fused else ""
        reason = (
            f"cannot answer — would exceed the total budget in cell {where}{cheaper} "
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
        noise=noise,
        fresh_alpha=alpha,
        budget=budget,
        cell_costs=costs,
        method=method,
        elapsed_ms=(time.perf_counter() - t0) * 1000.0,
        interval_query=interval,
        interval_probability=prob,
        schema=schema,
        spend_alpha=spend,
        fusion_weight=weight,
        fused_confidence=fconf,
        fusion=fusion,
        prior="flat" if prior is None else prior.describe(q),
        prior_bounds=bounds,
        release_estimate=release_est,
        release_interval=release_iv,
        policy="greedy" if policy is None else policy.describe(),
        needed_alpha=needed,
        headroom=paced.headroom if paced is not None else None,
    )


def _fusion_method(method: str) -> str:
    # the α search evaluates many posteriors and must be deterministic: Monte Carlo is not used for it
    return "fft" if method == "mc" else method


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
    released: float | None = None  # the value released: fused t·ỹ + (1−t)·θ̂_H, or ỹ without fusion
    fusion_weight: float | None = None  # t (None: no fusion)
    history_estimate: float | None = None  # θ̂_H that was fused (None: no fusion)

    def __post_init__(self) -> None:
        if self.released is None:
            object.__setattr__(self, "released", self.answer)

    @property
    def interval(self) -> tuple[float, float]:
        """``[ỹ − ε, ỹ + ε]`` around the raw noisy answer (the paper's release)."""
        return (self.answer - self.eps, self.answer + self.eps)

    @property
    def released_interval(self) -> tuple[float, float]:
        """``[released − ε, released + ε]``: the interval that meets the requirement; release this one."""
        r = float(self.released)  # type: ignore[arg-type]
        return (r - self.eps, r + self.eps)

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
    alpha = float(assessment.spend_alpha)  # type: ignore[arg-type]
    scale = q.sensitivity / alpha  # privacy map: Laplace(S/α) on sensitivity S is α-DP
    answer = true_answer(q, cube) + sampler.draw(assessment.noise, scale)
    t = assessment.fusion_weight
    theta_h = assessment.estimate.estimate if t is not None else None
    released = fuse(theta_h, answer, t) if t is not None and theta_h is not None else answer
    return FreshAnswer(
        request_id=assessment.request.id,
        query=q,
        alpha=alpha,
        sensitivity=q.sensitivity,
        family=assessment.family,
        answer=answer,
        eps=assessment.request.eps,
        sampler=sampler.name,
        released=released,
        fusion_weight=t,
        history_estimate=theta_h,
    )
