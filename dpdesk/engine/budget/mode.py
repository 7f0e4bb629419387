"""A project's accounting mode: pure ε (the default) or ρ-zCDP with a declared total (ε, δ).

The mode is chosen when the project is made and never changes (the genesis hash covers it). Both modes
keep per-cell totals and stop on the largest one; they differ in the unit those totals are kept in:

* **pure ε** — a release charges each cell its privacy loss ε_j (paper Thm 5.4); the totals add in ε and
  the system cost is the largest cell's total. A release priced in ρ (Gaussian noise) is refused.
* **zCDP** — a release charges each cell ρ_j (Gaussian noise: ``Q_j²/(2σ²)``; any pure ε-DP release
  ``ε_j²/2``, Bun–Steinke Prop. 1.4); the totals add in ρ and the system cost is the largest cell's ρ
  converted to ε at the project's δ (:mod:`~dpdesk.engine.budget.zcdp`, the tight conversion unless
  another is named). The hard stop on that ε is the same as a stop on ρ at :func:`~.zcdp.rho_for` of the
  total, which is what the engine compares: the *budget in the project's unit*.

Everything that adds a release's charge to per-cell totals asks :meth:`ZcdpAccounting.unit` (or
:func:`in_unit` for either mode) first; everything that shows a total asks :meth:`epsilon_of`.

Examples
--------
>>> acc = ZcdpAccounting(1.0, 1e-6)
>>> round(acc.budget, 6)                            # the largest per-cell ρ whose ε is within 1
0.024356
>>> round(acc.epsilon_of(acc.budget), 9) <= 1.0
True
>>> acc.to_json()
{'mode': 'zcdp', 'delta': 1e-06, 'conversion': 'tight'}
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from dpdesk.engine.budget.zcdp import CONVERSIONS, epsilon, rho_charge, rho_for
from dpdesk.engine.errors import BudgetError
from dpdesk.engine.mechanisms.charge import Charge

__all__ = ["MODES", "ZcdpAccounting", "accounting_from_json", "in_unit", "mode_words", "spent_words"]

# The modes a project is made with, and when each is the better choice (the New project dialog and
# `dpdesk project new --help` say it in these words).
MODES = {
    "pure": "pure (Laplace noise): the better choice when most cells are answered only a few times — "
    "each answer costs its privacy loss once, with no δ.",
    "zcdp": "zCDP (Gaussian noise, totals in ρ, the total stated with a δ): the better choice when cells are "
    "answered fresh many times over — more than about ln(1/δ), 14 at δ = 10⁻⁶ — since k answers to one "
    "cell then cost about √k times one, not k times.",
}


@dataclass(frozen=True)
class ZcdpAccounting:
    """A project accounted in ρ-zCDP with total ``epsilon`` at ``delta`` (see the module docstring)."""

    epsilon: float  # the declared total privacy loss ε
    delta: float  # the δ of the total (ε, δ) guarantee
    conversion: str = "tight"

    def __post_init__(self) -> None:
        e, d = self.epsilon, self.delta
        if isinstance(e, bool) or not isinstance(e, (int, float)) or not math.isfinite(e) or e <= 0:
            raise BudgetError(f"total epsilon ({e!r}) must be a positive finite number")
        if isinstance(d, bool) or not isinstance(d, (int, float)) or not 0 < d < 1:
            raise BudgetError(f"delta ({d!r}) must be strictly between 0 and 1 for zCDP accounting")
        if self.conversion not in CONVERSIONS:
            raise BudgetError(f"conversion ({self.conversion!r}) must be one of {', '.join(CONVERSIONS)}")
        object.__setattr__(self, "epsilon", float(e))
        object.__setattr__(self, "delta", float(d))

    measure = "rho"

    @property
    def budget(self) -> float:
        """The per-cell ρ the total allows: the hard stop in the project's unit."""
        return rho_for(self.epsilon, self.delta, self.conversion)

    def unit(self, charge: Charge, n_cells: int) -> Charge:
        """``charge`` in ρ (a pure one converted per cell, ``ρ_j = ε_j²/2``)."""
        return rho_charge(charge, n_cells)

    def epsilon_of(self, rho: float) -> float:
        """The ε at the project's δ of a per-cell ρ (the conversion the project names)."""
        return epsilon(max(0.0, float(rho)), self.delta, self.conversion)

    def to_json(self) -> dict[str, Any]:
        return {"mode": "zcdp", "delta": self.delta, "conversion": self.conversion}

    @property
    def conversion_words(self) -> str:
        return f"{self.conversion} conversion: {CONVERSIONS[self.conversion]}"

    def describe(self) -> str:
        """One line: the mode, the total (ε, δ) and the conversion."""
        return (
            f"zCDP: total privacy loss ε = {self.epsilon:g} at δ = {self.delta:g} "
            f"(per-cell ρ ≤ {self.budget:.6g}; {self.conversion_words})"
        )

    def cost_words(self, rho: float) -> str:
        """A per-cell total as ε with its ρ: ``ε = 0.42 (ρ = 0.0051)``."""
        return f"ε = {self.epsilon_of(rho):.4g} (ρ = {rho:.4g})"


def accounting_from_json(obj: Any, total: float) -> ZcdpAccounting | None:
    """The accounting a project file stores (None or absent: pure ε), with the project's total ε."""
    if obj is None:
        return None
    if not isinstance(obj, dict) or obj.get("mode") != "zcdp":
        raise BudgetError(f"accounting ({obj!r}) must be a zCDP accounting or absent")
    return ZcdpAccounting(float(total), float(obj["delta"]), str(obj.get("conversion", "tight")))


def in_unit(accounting: ZcdpAccounting | None, charge: Charge, n_cells: int) -> Charge:
    """``charge`` in the unit a project with ``accounting`` adds (None: pure ε, which refuses ρ)."""
    if accounting is not None:
        return accounting.unit(charge, n_cells)
    if charge.measure != "epsilon":
        raise BudgetError(
            "this release is priced in ρ (zCDP, Gaussian noise) and the project accounts in pure ε: "
            "only a project made with --accounting zcdp can take it"
        )
    return charge


def mode_words(accounting: ZcdpAccounting | None, total: float) -> str:
    """The mode and total as the curator reads them everywhere (project info, report, letters)."""
    if accounting is None:
        return f"pure ε: total privacy loss ε = {total:g}"
    return accounting.describe()


def spent_words(accounting: ZcdpAccounting | None, total: float, cost: float) -> str:
    """The total, what the ledger spent (the system cost) and what remains, as the privacy loss ε: under
    zCDP the largest cell's ρ converted at the project's δ, with the ρ and the conversion named."""
    if accounting is None:
        return (
            f"total {total:g}, spent (system cost, from the ledger) {cost:.6g}, remaining {total - cost:.6g}"
        )
    acc, eps = accounting, accounting.epsilon_of(cost)
    return (
        f"total ε = {acc.epsilon:g} at δ = {acc.delta:g}, spent (system cost, from the ledger) ε = {eps:.6g} "
        f"(largest cell's ρ = {cost:.6g} of {acc.budget:.6g}; {acc.conversion} conversion), "
        f"remaining ε = {acc.epsilon - eps:.6g}"
    )
