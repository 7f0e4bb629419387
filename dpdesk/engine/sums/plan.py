"""A mean request as a release plan: answered free from history when history meets its ``±a``, else
fresh (a sum and a count of values), priced and decided from public inputs only.

:func:`plan_mean` reads history's estimates of the box's sum and count of values; when both are
estimable and their noise meets ``±a at 1 − δ`` under the request's assumption
(:func:`~dpdesk.engine.sums.accuracy.history_failure`), the mean is inferred (free) with its interval
(:func:`~dpdesk.engine.sums.ratio.mean_interval`, which holds at every table). Otherwise it is priced
fresh (:func:`~dpdesk.engine.sums.accuracy.fresh_mean`), charged per cell (:func:`~.mechanism.mean_charge`)
and previewed against the budget. ``draw`` is the one step reading the data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dpdesk.engine.budget.accounting import BudgetPreview
from dpdesk.engine.budget.accounting import preview as accounting_preview
from dpdesk.engine.budget.person import ROW_RULE, PersonRule
from dpdesk.engine.errors import BudgetError, DpdeskError
from dpdesk.engine.inference.history import History
from dpdesk.engine.mechanisms.base import Basis, Mechanism
from dpdesk.engine.mechanisms.charge import Charge
from dpdesk.engine.mechanisms.laplace import LAPLACE
from dpdesk.engine.mechanisms.registry import noise_family
from dpdesk.engine.queries.layout import Layout
from dpdesk.engine.queries.measured import exact_answer
from dpdesk.engine.queries.query import Query
from dpdesk.engine.schema import Schema
from dpdesk.engine.sums.accuracy import FreshMean, MeanAccuracy, fresh_mean, history_failure
from dpdesk.engine.sums.mechanism import FRESH_MEAN, MEAN_INFERENCE, mean_charge
from dpdesk.engine.sums.query import MeanQuery
from dpdesk.engine.sums.ratio import MeanInterval, RatioLaw, mean_interval

__all__ = ["MeanPlan", "fresh_law", "history_mean", "plan_mean"]


def _noisy(sampler: Any, family: Any, query: Query, cube: Any, alpha: float) -> float:
    """The exact ``θ = Q·x`` released by the sampler with ``family`` noise of scale ``S/α``: the sampler
    applies its measurement to θ itself, as it does for every fresh count (noise never meets θ elsewhere)."""
    scale = family.scale(query.sensitivity, alpha)
    return float(sampler.release(family, exact_answer(query, cube), scale, query.sensitivity))


def fresh_law(bound: float, price: FreshMean) -> RatioLaw:
    """The noise of a fresh mean's two releases: ``Ŝ − θ_S = N_S``, ``Ĉ − θ_C = N_C``."""
    return RatioLaw(
        np.array([1.0, 0.0]),
        np.array([0.0, 1.0]),
        np.array([bound / price.alpha_sum, 1.0 / price.alpha_count]),
        (LAPLACE.name, price.count_family),
    )


@dataclass(frozen=True, eq=False)
class MeanPlan:
    """A decided mean: ``infer`` (free, from history), ``spend`` (fresh) or ``reject``."""

    mean: MeanQuery
    accuracy: MeanAccuracy
    schema: Schema
    total: Query  # sum(m | box)
    size: Query  # count(m | box)
    decision: str
    why: str
    budget: BudgetPreview
    basis: Basis
    request_id: str | None = None
    price: FreshMean | None = None  # the fresh price (None when no fresh mean meets ±a)
    history_failure: float | None = None  # history's failure bound (None: not estimable)
    inferred: MeanInterval | None = None  # history's mean and interval (decision infer)

    @property
    def mechanism(self) -> Mechanism:
        return MEAN_INFERENCE if self.decision == "infer" else FRESH_MEAN

    @property
    def releasable(self) -> bool:
        return self.decision != "reject"

    @property
    def needs_data(self) -> bool:
        return self.decision == "spend"

    @property
    def bounds(self) -> tuple[float, float]:
        return self.mean.bounds(self.schema)

    @property
    def alpha(self) -> float:
        return 0.0 if self.decision != "spend" or self.price is None else self.price.alpha

    @property
    def per_cell_alpha(self) -> float:
        """What each cell of the box pays (``α_S + α_C``; its charge's terms are per-cell loads)."""
        return self.alpha

    @property
    def charge(self) -> Charge:
        if self.decision != "spend" or self.price is None:
            return Charge()
        p = self.price
        return mean_charge(self.total, self.size, p.alpha_sum, p.alpha_count, p.count_family)

    @property
    def reason(self) -> str:
        return self.why

    def noisy_rows(self) -> tuple[tuple[Query, float, str], ...]:
        """The linear rows a fresh mean adds to history (what watched claims weigh before the draw)."""
        if self.decision != "spend" or self.price is None:
            return ()
        p = self.price
        return ((self.total, p.alpha_sum, LAPLACE.name), (self.size, p.alpha_count, p.count_family))

    def record(self) -> dict[str, Any]:
        """The ledger payload known before any data is touched."""
        a = self.accuracy
        out: dict[str, Any] = {
            "query_text": self.mean.text,
            "measure": self.mean.measure,
            "half_width": a.half_width,
            "delta": a.delta,
            "min_count": a.min_count,
            "bounds": list(self.bounds),
        }
        if self.decision == "infer":
            iv = self.inferred
            assert iv is not None
            out.update(
                estimate=iv.estimate,
                interval=[iv.low, iv.high],
                history_failure=self.history_failure,
                history_prefix=None,
                values=[iv.estimate if iv.estimate is not None else 0.5 * (iv.low + iv.high)],
            )
        elif self.decision == "spend":
            p = self.price
            assert p is not None
            out.update(
                sum_query=self.total.to_json(),
                count_query=self.size.to_json(),
                alpha_sum=p.alpha_sum,
                alpha_count=p.alpha_count,
                alpha=p.alpha,
                count_family=p.count_family,
                failure=p.failure,
                system_cost_after=self.budget.system_cost_after,
            )
        return out

    def draw(self, cube: Any, sampler: Any, *, allow_insecure: bool = False) -> dict[str, Any]:
        """The fresh sum and count (raw: they join history) and the mean with its interval. Empty for infer."""
        if self.decision != "spend":
            return {}
        if not self.budget.fits:
            raise BudgetError(f"request {self.request_id!r}: a fresh mean would exceed the total budget")
        if not getattr(sampler, "secure", False) and not allow_insecure:
            raise BudgetError(
                f"sampler {getattr(sampler, 'name', sampler)!r} is not secure; releases need the vetted sampler"
            )
        p = self.price
        assert p is not None
        fam = noise_family(p.count_family)
        layout = self.total.layout
        if layout is None or layout != Layout.of(cube.schema) or self.size.layout != layout:
            raise DpdeskError("a fresh mean reads measures this cube does not hold")
        # private: the true sum and count enter only the sampler, which returns the noisy answers
        s = _noisy(sampler, LAPLACE, self.total, cube, p.alpha_sum)
        c = _noisy(sampler, fam, self.size, cube, p.alpha_count)
        lower, upper = self.bounds
        iv = mean_interval(fresh_law(self.total.sensitivity, p), s, c, self.accuracy.delta, lower, upper)
        shown = iv.estimate if iv.estimate is not None else 0.5 * (iv.low + iv.high)
        return {
            "sum_answer": s,
            "count_answer": c,
            "estimate": iv.estimate,
            "interval": [iv.low, iv.high],
            "sampler": sampler.name,
            "values": [shown],
        }

    def to_json(self) -> dict[str, Any]:
        b = self.budget
        out = {
            **self.record(),
            "decision": self.decision,
            "mechanism": self.mechanism.name,
            "request_id": self.request_id,
            "releasable": self.releasable,
            "reason": self.reason,
            "assumption": self.accuracy.assumption(),
            "budget": {
                "total": b.total,
                "system_cost": b.system_cost,
                "system_cost_after": b.system_cost_after,
                "remaining_after": b.remaining_after,
            },
        }
        if self.price is not None and self.decision != "spend":
            out["fresh_alpha"] = self.price.alpha
        return out


def history_mean(
    history: History | None, total: Query, size: Query, acc: MeanAccuracy, lower: float, upper: float
) -> tuple[float | None, MeanInterval | None]:
    """History's failure bound for the mean and its interval (None, None when either is not estimable)."""
    if history is None or len(history) == 0:
        return None, None
    est_s, est_c = history.estimate(total), history.estimate(size)
    if not (est_s.estimable and est_c.estimable):
        return None, None
    assert est_s.estimate is not None and est_c.estimate is not None
    law = RatioLaw.of(est_s, est_c)
    failure = history_failure(law, acc, lower, upper)
    return failure, mean_interval(law, est_s.estimate, est_c.estimate, acc.delta, lower, upper)


def plan_mean(
    mean: MeanQuery,
    accuracy: MeanAccuracy,
    schema: Schema,
    history: History | None,
    cell_costs: np.ndarray,
    total_budget: float,
    basis: Basis | None = None,
    request_id: str | None = None,
    accounting: Any = None,
    rule: PersonRule = ROW_RULE,
) -> MeanPlan:
    """Infer the mean from history when it meets ``accuracy``, else price it fresh (public inputs only).

    ``accounting`` (None: pure ε; under zCDP the costs and total are in ρ) and ``rule`` (how per-cell costs
    add up to one person's loss) are the project's, as every kind's preview takes them."""

    def budget_preview(costs: np.ndarray, total: float, charge: Charge | None = None) -> BudgetPreview:
        return accounting_preview(costs, total, charge, accounting, rule)

    total, size = mean.total(schema), mean.size(schema)
    lower, upper = mean.bounds(schema)
    if not lower < upper:
        raise DpdeskError(
            f"measure {mean.measure!r}: its bounds [{lower:g}, {upper:g}] leave no mean to estimate"
        )
    failure, inferred = history_mean(history, total, size, accuracy, lower, upper)
    target = f"±{accuracy.half_width:g} at {1 - accuracy.delta:.0%} {accuracy.assumption()}"
    try:
        price: FreshMean | None = fresh_mean(total.sensitivity, lower, upper, accuracy)
    except BudgetError:
        price = None

    def made(decision: str, why: str, budget: BudgetPreview, iv: MeanInterval | None = None) -> MeanPlan:
        return MeanPlan(
            mean, accuracy, schema, total, size, decision, why, budget, basis or Basis(), request_id,
            price, failure, iv,
        )  # fmt: skip

    if failure is not None and failure <= accuracy.delta and inferred is not None:
        why = f"answerable from history — costs 0 (failure ≤ {failure:.3g} ≤ {accuracy.delta:g} for {target})"
        return made("infer", why, budget_preview(cell_costs, total_budget), inferred)
    known = "not estimable from history" if failure is None else f"history's failure bound {failure:.3g}"
    if price is None:
        return made(
            "reject",
            f"reject: no fresh mean meets {target} ({known})",
            budget_preview(cell_costs, total_budget),
        )
    charge = mean_charge(total, size, price.alpha_sum, price.alpha_count, price.count_family)
    budget = budget_preview(cell_costs, total_budget, charge)
    if not budget.fits:
        why = (
            f"reject: a fresh mean needs ε = {price.alpha:.4g}, taking the system cost to "
            f"{budget.system_cost_after:.4g}, over the total {budget.total:g} ({known})"
        )
        return made("reject", why, budget)
    why = (
        f"needs a fresh answer — a sum at ε = {price.alpha_sum:.4g} and a count of values at "
        f"ε = {price.alpha_count:.4g}, ε = {price.alpha:.4g} on each cell of the box ({known})"
    )
    return made("spend", why, budget)
