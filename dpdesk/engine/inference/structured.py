"""Estimates from a release's own structure, beside history's.

A release too large to join the history as rows (the ledger view decides; the history factorises its
rows in cubic time) can still answer queries from its own structure — a partition release's BLUE of
its counts and its exact grouped error law
(:meth:`~dpdesk.engine.partition.release.PartitionRelease.served`). History's BLUE and such a release's
BLUE are then two valid estimates of the same answer, each with its own exact law. Assessment serves
the one whose law puts the most mass on ``±ε``: the choice reads only the laws (coefficients and noise
scales), never a released value, so the law of the estimate chosen is still the law of the answer
served and its confidence stands as computed.

Anything with ``served(query) -> (Estimate, Posterior) | None`` is an *answerer* here; this module
knows no release kind.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dpdesk.engine.inference.history import Estimate
from dpdesk.engine.inference.posterior import Posterior
from dpdesk.engine.queries.measured import counts_only
from dpdesk.engine.queries.query import Query

__all__ = ["FORM", "StructuredAnswer", "best_answer", "prefer"]

FORM = "partition release"  # Estimate.form of an estimate from a partition release's own counts


@dataclass(frozen=True, eq=False)
class StructuredAnswer:
    """What one release alone says about a query: its estimate, its law, and the mass that law puts on ±ε."""

    source: int  # which release: its ledger entry
    estimate: Estimate  # no history coefficients (the law is the release's, not per history row)
    posterior: Posterior  # exact on a lattice, conservative otherwise
    confidence: float  # mass of [θ̂ − ε, θ̂ + ε] under that law (a lower bound)


def best_answer(answerers: Sequence[tuple[int, Any]], query: Query, eps: float) -> StructuredAnswer | None:
    """The answerer whose estimate of ``query`` has the most mass on ``±eps``; None if none estimates it.

    ``answerers`` pairs each with its ledger entry. Ties go to the earlier one.
    """
    best: StructuredAnswer | None = None
    counted = counts_only(query)  # releases of counts say nothing about sums
    if counted is None:
        return None
    query = counted
    for source, answerer in answerers:
        served = answerer.served(query)
        if served is None:
            continue
        est, post = served
        conf = post.central_mass(eps)
        if best is None or conf > best.confidence:
            best = StructuredAnswer(source, est, post, conf)
    return best


def prefer(history_confidence: float | None, answer: StructuredAnswer | None) -> bool:
    """Whether the release's answer serves better than history's (strictly more mass on ``±ε``)."""
    if answer is None:
        return False
    return history_confidence is None or answer.confidence > history_confidence
