"""What a fresh answer costs and what the per-cell accounting looks like before and after it.

``fresh_alpha`` is paper Thm 5.3 with its stray factor removed (DESIGN §1) for continuous Laplace
noise, and the exact equivalent for discrete Laplace noise on an integer query. Per-cell costs follow
paper Thm 5.4: ``B = (α/S)ᵀ|H|``; the system cost is ``max B`` (one person's loss: ``k · max B`` or a
sum of the largest when a person holds up to ``k`` rows, docs/person-level.md); a fresh answer to ``Q`` with budget
``α`` adds ``α|Q_j|/S_Q`` to cell ``j``. The comparison with the total budget is strict and exact —
a release that would exceed the total by any amount is refused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from dpdesk.engine.budget.mode import ZcdpAccounting, in_unit
from dpdesk.engine.budget.peaks import Peaks, peaks_of
from dpdesk.engine.budget.person import ROW_RULE, PersonRule
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
    """System cost and remaining budget now and after a hypothetical fresh answer.

    ``cell_costs_after`` (every cell's cost after the release, read-only) is built when first read:
    the figures above it come from the cells the release touches alone.
    """

    total: float
    system_cost: float
    remaining: float
    system_cost_after: float | None = None
    remaining_after: float | None = None
    limiting_cell: int | None = None  # the cell reaching system_cost_after
    cell_costs: np.ndarray | None = field(default=None, repr=False)
    charge: Charge | None = field(default=None, repr=False)
    # zCDP (None: pure ε): then the figures above are per-cell ρ and the ρ budget; :meth:`shown` states ε
    accounting: ZcdpAccounting | None = field(default=None, repr=False)

    def shown(self, cost: float | None) -> float:
        """A per-cell figure above as the privacy loss ε it states (under zCDP at the project's δ)."""
        c = 0.0 if cost is None else float(cost)
        return c if self.accounting is None else self.accounting.epsilon_of(c)

    def words(self) -> str:
        """``0.1 now → 0.3 after (total 1)``; under zCDP in ε at the project's δ, the ρ named."""
        after = self.system_cost if self.system_cost_after is None else self.system_cost_after
        acc = self.accounting
        if acc is None:
            return f"{self.system_cost:.6g} now → {after:.6g} after (total {self.total:g})"
        return (
            f"ε = {self.shown(self.system_cost):.6g} now → {self.shown(after):.6g} after (total ε = "
            f"{acc.epsilon:g} at δ = {acc.delta:g}; zCDP, largest cell's ρ {self.system_cost:.6g} → "
            f"{after:.6g} of {self.total:.6g}, {acc.conversion} conversion)"
        )

    @property
    def fits(self) -> bool:
        return self.system_cost_after is not None and self.system_cost_after <= self.total

    @cached_property
    def cell_costs_after(self) -> np.ndarray | None:
        if self.charge is None or self.cell_costs is None:
            return None
        after: np.ndarray = self.cell_costs + self.charge.dense(self.cell_costs.size)
        after.setflags(write=False)
        return after


def preview(
    cell_costs: np.ndarray,
    total: float,
    charge: Charge | None = None,
    accounting: ZcdpAccounting | None = None,
    rule: PersonRule = ROW_RULE,
) -> BudgetPreview:
    """Budget figures now and, if a release's per-cell ``charge`` is given, after it.

    Under zCDP (``accounting``) ``cell_costs`` and ``total`` are in ρ and ``charge`` is converted to ρ
    first (a pure ε charge as ``ε_j²/2``); in a pure project a charge in ρ is refused
    (:func:`~dpdesk.engine.budget.mode.in_unit`).

    The system cost is one person's total under ``rule`` (:mod:`~dpdesk.engine.budget.person`): the
    largest cell's when one row is one person; ``k`` × it (``k²`` in ρ) or a sum of the largest cells'
    when a person holds up to ``k`` rows. A charge of one query (a fresh count, a measurement) is
    previewed on the cells the query touches and the largest cost among the others
    (:mod:`~dpdesk.engine.budget.peaks`); any other charge, or a sum of the largest cells, on the dense
    vector. Both give the same numbers, to the bit, and the same limiting cell.
    """
    check_total_budget(total)
    if rule.group_axes is not None and not rule.rows_are_people:
        unit = None if charge is None else in_unit(accounting, charge, cell_costs.size)
        return _preview_dense(cell_costs, total, unit, rule, accounting)
    factor = rule.factor("epsilon" if accounting is None else "rho")
    peaks = peaks_of(cell_costs)
    now = peaks.max * factor if factor != 1 else peaks.max
    if charge is None:
        return BudgetPreview(total=total, system_cost=now, remaining=total - now, accounting=accounting)
    charge = in_unit(accounting, charge, cell_costs.size)
    top = _after_touched(cell_costs, peaks, charge)
    if top is None:
        after = cell_costs + charge.dense(cell_costs.size)
        j = int(np.argmax(after))
        top = float(after[j]), j
    value, j = top
    if factor != 1:
        value *= factor
    return BudgetPreview(
        total=total,
        system_cost=now,
        remaining=total - now,
        system_cost_after=value,
        remaining_after=total - value,
        limiting_cell=j,
        cell_costs=cell_costs,
        charge=charge,
        accounting=accounting,
    )


def _preview_dense(
    cell_costs: np.ndarray,
    total: float,
    charge: Charge | None,
    rule: PersonRule,
    accounting: ZcdpAccounting | None,
) -> BudgetPreview:
    """:func:`preview` when a person's rows fall in distinct cells or slices (a sum of the largest);
    ``charge`` already in the project's unit."""
    measure = "epsilon" if accounting is None else "rho"
    now = rule.total(cell_costs, measure)
    if charge is None:
        return BudgetPreview(total=total, system_cost=now, remaining=total - now, accounting=accounting)
    after = cell_costs + charge.dense(cell_costs.size)
    value = rule.total(after, measure)
    return BudgetPreview(
        total=total,
        system_cost=now,
        remaining=total - now,
        system_cost_after=value,
        remaining_after=total - value,
        limiting_cell=int(np.argmax(after)) if after.size else None,
        cell_costs=cell_costs,
        charge=charge,
        accounting=accounting,
    )


def _after_touched(cell_costs: np.ndarray, peaks: Peaks, charge: Charge) -> tuple[float, int] | None:
    """``(max, argmax)`` of ``cell_costs + charge.dense()`` from the touched cells and the top of the
    untouched ones, or None when the charge is not one query's (then the caller builds the vector).

    ``Charge.dense`` adds ``scale·|Q_j|`` to zeros, and ``|Q_j|`` is the query's sparse coefficient's
    magnitude to the bit (both are the same products of the factors; negation is exact), so the
    touched cells' sums here are the dense ones; an untouched cell keeps its cost exactly.
    """
    term = charge.terms[0] if len(charge.terms) == 1 else None
    if term is None or term.query is None:
        return None
    idx, val = term.query.sparse()
    if idx.size == 0:
        return None
    sums = cell_costs[idx] + (0.0 + term.scale * np.abs(val))
    k = int(np.argmax(sums))  # idx ascending: the lowest cell among equal sums
    best = (float(sums[k]), int(idx[k]))
    outside = peaks.largest_outside(idx)
    if outside is not None and (outside[0] > best[0] or (outside[0] == best[0] and outside[1] < best[1])):
        best = outside
    return best
