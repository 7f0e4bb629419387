"""Workload-aware batch release plans for the pending requests (matrix mechanism / HDMM-style strategies).

The names below are loaded on first use, so the registry can list the batch-measurement kind
(:mod:`.kind`) without importing the planner.
"""

from __future__ import annotations

import importlib
from typing import Any

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
