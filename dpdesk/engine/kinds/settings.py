"""The curator's answering rules: what an assessment of any kind depends on besides the ledger.

The total budget, the spend policy, the known-bounds prior and whether fresh answers are fused with
history are public; an assessment records them (:class:`~dpdesk.engine.mechanisms.base.Basis`) and a
release made under different settings is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dpdesk.engine.budget.accounting import check_total_budget
from dpdesk.engine.budget.mode import ZcdpAccounting
from dpdesk.engine.budget.policy import SpendPolicy
from dpdesk.engine.inference.prior import BoundedPrior

__all__ = ["Settings"]


@dataclass(frozen=True)
class Settings:
    """The curator's answering rules: total budget, spend policy (None: greedy), prior (None: flat), fusion.

    Examples
    --------
    >>> Settings(1.0).to_json()
    {'total_budget': 1.0, 'spend_policy': None, 'table_size': None, 'fusion': True}
    """

    total_budget: float
    policy: SpendPolicy | None = None
    prior: BoundedPrior | None = None
    fusion: bool = True
    # zCDP accounting (None: pure ε). Under zCDP ``total_budget`` is the per-cell ρ the declared total
    # (ε, δ) allows — the budget in the unit the per-cell totals are kept in (engine/budget/mode.py)
    accounting: ZcdpAccounting | None = None

    def __post_init__(self) -> None:
        check_total_budget(self.total_budget)
        object.__setattr__(self, "total_budget", float(self.total_budget))

    @classmethod
    def zcdp(
        cls,
        accounting: ZcdpAccounting,
        policy: SpendPolicy | None = None,
        prior: BoundedPrior | None = None,
        fusion: bool = True,
    ) -> Settings:
        """The settings of a zCDP project: its budget in ρ, from the declared total (ε, δ)."""
        return cls(accounting.budget, policy, prior, fusion, accounting)

    @property
    def measure(self) -> str:
        """The unit per-cell totals are kept in: ``"epsilon"`` or ``"rho"``."""
        return "epsilon" if self.accounting is None else "rho"

    @property
    def total_shown(self) -> float:
        """The total privacy loss ε the curator declared."""
        return self.total_budget if self.accounting is None else self.accounting.epsilon

    def shown(self, cost: float) -> float:
        """A per-cell total (in the project's unit) as the privacy loss ε it states."""
        return cost if self.accounting is None else self.accounting.epsilon_of(cost)

    def to_json(self) -> dict[str, Any]:
        """The settings as public JSON (what an assessment's basis records and a release compares)."""
        p = self.policy
        return {
            "total_budget": self.total_budget,
            "spend_policy": None if p is None else {"floor": float(p.floor), "cap": float(p.cap)},
            "table_size": None if self.prior is None else float(self.prior.table_size),
            "fusion": bool(self.fusion),
        } | ({} if self.accounting is None else {"accounting": self.accounting.to_json()})
