"""What a fresh answer costs and what the per-cell accounting looks like before and after it.

``fresh_alpha`` is paper Thm 5.3 with its stray factor removed (DESIGN §1) for continuous Laplace
noise, and the exact equivalent for discrete Laplace noise on an integer query. Per-cell costs follow
paper Thm 5.4: ``B = (α/S)ᵀ|H|``; the system cost is ``max B``; a fresh answer to ``Q`` with budget
``α`` adds ``α|Q_j|/S_Q`` to cell ``j``. The comparison with the total budget is strict and exact —
a release that would exceed the total by any amount is refused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpdesk.engine.errors import BudgetError
from dpdesk.engine.queries.query import Query
from dpdesk.engine.queries.algebra import abs_dense


def check_requirement(eps: float, delta: float) -> None:
    """Raise a one-line BudgetError unless ε > 0 and δ ∈ (0, 1)."""
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not math.isfinite(eps) or eps <= 0:
        raise BudgetError(f"eps ({eps!r}) must be a positive finite number")
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not 0 < delta < 1:
        raise BudgetError(f"delta ({delta!r}) must be strictly between 0 and 1")


def check_total_budget(total: float) -> None:
    if isinstance(total, bool) or not isinstance(total, (int, float)) or not math.isfinite(total) or total <= 0:
        raise BudgetError(f"total budget ({total!r}) must be a positive finite number")


def discrete_tail(alpha: float, sensitivity: float, eps: float) -> float:
    """``Pr(|K| > ε)`` for discrete Laplace ``K`` with scale ``S/α`` (mass ∝ exp(-|k|α/S))."""
    p = math.exp(-alpha / sensitivity)
    k = math.floor(eps)
    return 2.0 * p ** (k + 1) / (1.0 + p)


def fresh_alpha(sensitivity: float, eps: float, delta: float, family: str = "laplace") -> float:
    """Smallest budget whose fresh answer alone is within ±ε with probability ≥ 1−δ.

    Continuous Laplace: ``α = S·ln(1/δ)/ε`` (paper Thm 5.3, corrected). Discrete Laplace on an integer
    query: the smallest α with ``2p^{⌊ε⌋+1}/(1+p) ≤ δ``, ``p = e^{-α/S}`` (exact for integer noise).

    Examples
    --------
    >>> round(fresh_alpha(1.0, 10.0, 0.05), 6)
    0.299573
    """
    check_requirement(eps, delta)
    if not (math.isfinite(sensitivity) and sensitivity > 0):
        raise BudgetError(f"sensitivity ({sensitivity!r}) must be positive")
    if family == "laplace":
        return sensitivity * math.log(1.0 / delta) / eps
    if family == "discrete_laplace":
        from scipy.optimize import brentq  # imported here: scipy.optimize is slow to load

        # tail is decreasing in α; bracket between a tiny α and the continuous answer × 2
        hi = 2.0 * sensitivity * math.log(1.0 / delta) / eps + 1e-12
        while discrete_tail(hi, sensitivity, eps) > delta:
            hi *= 2.0
        lo = hi
        while discrete_tail(lo, sensitivity, eps) <= delta and lo > 1e-300:
            lo /= 2.0
        alpha = brentq(lambda a: discrete_tail(a, sensitivity, eps) - delta, lo, hi, xtol=1e-15, rtol=1e-14)
        # land on the safe side of the root
        while discrete_tail(alpha, sensitivity, eps) > delta:
            alpha = math.nextafter(alpha, math.inf)
        return alpha
    raise BudgetError(f"family ({family!r}) must be 'laplace' or 'discrete_laplace'")


def query_cell_costs(query: Query, alpha: float) -> np.ndarray:
    """``α|Q_j|/S_Q`` per cell: what a fresh answer adds to each cell's loss (paper Thm 5.4)."""
    return (alpha / query.sensitivity) * abs_dense(query)


@dataclass(frozen=True)
class BudgetPreview:
    """System cost and remaining budget now and after a hypothetical fresh answer."""

    total: float
    system_cost: float
    remaining: float
    system_cost_after: float | None = None
    remaining_after: float | None = None
    limiting_cell: int | None = None  # the cell reaching system_cost_after
    cell_costs_after: np.ndarray | None = None

    @property
    def fits(self) -> bool:
        return self.system_cost_after is not None and self.system_cost_after <= self.total


def preview(cell_costs: np.ndarray, total: float, query: Query | None = None, alpha: float | None = None) -> BudgetPreview:
    """Budget figures now and, if ``query``/``alpha`` are given, after releasing a fresh answer."""
    check_total_budget(total)
    now = float(cell_costs.max()) if cell_costs.size else 0.0
    if query is None or alpha is None:
        return BudgetPreview(total=total, system_cost=now, remaining=total - now)
    after = cell_costs + query_cell_costs(query, alpha)
    after.setflags(write=False)
    j = int(np.argmax(after))
    return BudgetPreview(
        total=total,
        system_cost=now,
        remaining=total - now,
        system_cost_after=float(after[j]),
        remaining_after=total - float(after[j]),
        limiting_cell=j,
        cell_costs_after=after,
    )
