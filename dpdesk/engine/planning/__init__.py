"""Workload-aware batch release plans for the pending requests (matrix mechanism / HDMM-style strategies).

The names below are loaded on first use, so the registry can list the batch-measurement kind
(:mod:`.kind`) without importing the planner.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers see; at run time __getattr__ below imports each on first use
    from dpdesk.engine.planning.checks import narrowest_eps
    from dpdesk.engine.planning.plan import BatchPlan, Candidate, Measurement, PlannedRequest
    from dpdesk.engine.planning.planner import plan_batch
    from dpdesk.engine.planning.strategies import Strategy, candidate_strategies

__all__ = [
    "BatchPlan",
    "Candidate",
    "Measurement",
    "PlannedRequest",
    "Strategy",
    "candidate_strategies",
    "narrowest_eps",
    "plan_batch",
]

_HOMES = {
    "narrowest_eps": "checks",
    "BatchPlan": "plan",
    "Candidate": "plan",
    "Measurement": "plan",
    "PlannedRequest": "plan",
    "plan_batch": "planner",
    "Strategy": "strategies",
    "candidate_strategies": "strategies",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
