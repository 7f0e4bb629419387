"""The curator's answering rules: what an assessment of any kind depends on besides the ledger.

The total budget, the spend policy, the known-bounds prior and whether fresh answers are fused with
history are public; an assessment records them (:class:`~dpdesk.engine.mechanisms.base.Basis`) and a
release made under different settings is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dpdesk.engine.budget.accounting import check_total_budget
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

    def __post_init__(self) -> None:
        check_total_budget(self.total_budget)
        object.__setattr__(self, "total_budget", float(self.total_budget))

    def to_json(self) -> dict[str, Any]:
        """The settings as public JSON (what an assessment's basis records and a release compares)."""
        p = self.policy
        return {
            "total_budget": self.total_budget,
            "spend_policy": None if p is None else {"floor": float(p.floor), "cap": float(p.cap)},
            "table_size": None if self.prior is None else float(self.prior.table_size),
            "fusion": bool(self.fusion),
        }
