"""Workload-aware batch release plans for the pending requests (matrix mechanism / HDMM-style strategies)."""

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
