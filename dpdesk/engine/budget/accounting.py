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
from dpdesk.engine.mechanisms.base import check_requirement
from dpdesk.engine.mechanisms.charge import Charge
from dpdesk.engine.mechanisms.noise import NoiseFamily
from dpdesk.engine.mechanisms.registry import noise_family

__all__ = ["BudgetPreview", "check_requirement", "check_total_budget", "fresh_alpha", "preview"]


def check_total_budget(total: float) -> None:
    if (
        isinstance(total, bool)
        or not isinstance(total, (int, float))
        or not math.isfinite(total)
        or total <= 0
    ):
        raise BudgetError(f"total budget ({total!r}) must be a positive finite number")


def check_delta_cap(cap: float) -> None:
    """A project's δ cap: a number in [0, 1) (0: only pure α-DP releases)."""
    if (
        isinstance(cap, bool)
        or not isinstance(cap, (int, float))
        or not math.isfinite(cap)
        or not 0 <= cap < 1
    ):
        raise BudgetError(f"delta cap ({cap!r}) must be a number in [0, 1)")


def fresh_alpha(sensitivity: float, eps: float, delta: float, family: NoiseFamily = "laplace") -> float:
    """Smallest budget whose fresh answer alone is within ±ε with probability ≥ 1−δ (the family's
    :meth:`~dpdesk.engine.mechanisms.laplace.NoiseMechanism.alpha_for`; paper Thm 5.3, corrected).

    Examples
    --------
    >>> round(fresh_alpha(1.0, 10.0, 0.05), 6)
    0.299573
    """
    return noise_family(family).alpha_for(sensitivity, eps, delta)


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


def preview(cell_costs: np.ndarray, total: float, charge: Charge | None = None) -> BudgetPreview:
    """Budget figures now and, if a release's per-cell ``charge`` is given, after it."""
    check_total_budget(total)
    now = float(cell_costs.max()) if cell_costs.size else 0.0
    if charge is None:
        return BudgetPreview(total=total, system_cost=now, remaining=total - now)
    after = cell_costs + charge.dense(cell_costs.size)
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
