"""What a count request asks: a data user's :class:`Request` (public).

The curator's rules it is assessed under are :class:`~dpdesk.engine.kinds.settings.Settings` (every
kind's plan records them), importable from here too.
"""

from __future__ import annotations

from dataclasses import dataclass

from dpdesk.engine.budget.accounting import check_requirement
from dpdesk.engine.kinds.settings import Settings
from dpdesk.engine.queries.query import Query

__all__ = ["Request", "Settings"]


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
