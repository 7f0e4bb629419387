"""Answers from partition releases' own structure, beside history's.

A partition release too large to join the history as rows (the ledger view decides; the history
factorises its rows in cubic time) answers from its own structure instead — the BLUE of the release's
counts and its exact grouped error law (:meth:`~dpdesk.engine.partition.release.PartitionRelease.estimate`). History's
BLUE and a release's BLUE are then two valid estimates of the same answer, each with its own exact
law. Assessment serves the one whose law puts the most mass on ``±ε``: the choice reads only the
laws (coefficients and noise scales), never a released value, so the law of the estimate chosen is
still the law of the answer served and its confidence stands as computed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dpdesk.engine.inference.history import Estimate
from dpdesk.engine.inference.posterior import Posterior
from dpdesk.engine.mechanisms.base import Mechanism
from dpdesk.engine.mechanisms.partition import PARTITION
from dpdesk.engine.partition.release import PartitionRelease
from dpdesk.engine.queries.query import Query
from dpdesk.engine.schema import Schema

__all__ = ["ReleaseAnswer", "answer_from_releases", "prefer_release", "structured_release"]

FORM = "partition release"  # Estimate.form of an estimate from a release's own counts


@dataclass(frozen=True, eq=False)
class ReleaseAnswer:
    """What one release alone says about a query: its BLUE as an engine estimate, its law, its reach."""

    source: int  # which release: its ledger entry
    estimate: Estimate  # form :data:`FORM`; no history coefficients (the law is grouped, not per row)
    posterior: Posterior  # exact on a lattice, conservative otherwise (GroupedPosterior.to_posterior)
    confidence: float  # mass of [θ̂ − ε, θ̂ + ε] under that law (a lower bound)


def answer_from_releases(releases: Sequence[tuple[int, PartitionRelease]], query: Query, eps: float) -> ReleaseAnswer | None:
    """The release whose estimate of ``query`` has the most mass on ``±eps``; None if none estimates it.

    ``releases`` pairs each release with its ledger entry. Ties go to the earlier release.
    """
    best: ReleaseAnswer | None = None
    for source, release in releases:
        r = release.estimate(query)
        if not r.estimable or r.posterior is None or r.estimate is None or r.std is None:
            continue  # a query that is 0 on every cell has no law to serve (history answers it exactly)
        post = r.to_posterior()
        conf = post.central_mass(eps)
        if best is None or conf > best.confidence:
            est = Estimate(estimable=True, history_size=release.n_rows, form=FORM, residual=0.0,
                           estimate=r.estimate, families=(release.family,), variance=r.std**2)
            best = ReleaseAnswer(source, est, post, conf)
    return best


def prefer_release(history_confidence: float | None, answer: ReleaseAnswer | None) -> bool:
    """Whether the release's answer serves better than history's (strictly more mass on ``±ε``)."""
    if answer is None:
        return False
    return history_confidence is None or answer.confidence > history_confidence


def structured_release(mechanism: Mechanism, payload: Mapping[str, Any], schema: Schema) -> PartitionRelease | None:
    """What answers from a recorded release's own structure, for the mechanisms that have one (partition
    releases); None for the others (their rows are their only answer)."""
    return PartitionRelease.from_payload(schema, payload) if mechanism is PARTITION else None
