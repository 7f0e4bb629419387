"""Which posterior mechanism a request that names none is released with, from public inputs only: the
mechanisms compared by their expected Hellinger distance at a public reference table (docs/dirichlet.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpdesk.engine.dirichlet.accuracy import (
    expected_hellinger,
    expected_hellinger_noisy_size,
    reference_counts,
)
from dpdesk.engine.dirichlet.candidates import DEFAULT_MAX_CANDIDATES, CandidateSet
from dpdesk.engine.dirichlet.mechanisms import ExponentialGlobal, ExponentialSmooth, LaplaceCounts
from dpdesk.engine.dirichlet.request import PosteriorQuery

__all__ = ["DEFAULT_SIZE_SHARE", "choose_mechanism", "make_mechanism", "reference_accuracy"]

DEFAULT_SIZE_SHARE = 0.25  # of the budget, for the noisy size when no size is public


def make_mechanism(mechanism: str, cs: CandidateSet, alpha: float, delta: float, split: float) -> Any:
    if mechanism == "exponential-global":
        return ExponentialGlobal(cs, alpha)
    return ExponentialSmooth(cs, alpha, delta, split)


def choose_mechanism(
    query: PosteriorQuery,
    *,
    budget: float | None,
    size: int | None,
    reference_size: int | None,
    max_candidates: int = DEFAULT_MAX_CANDIDATES,
    size_share: float = DEFAULT_SIZE_SHARE,
) -> tuple[str, str]:
    """The mechanism a request that names none is released with, and why (public inputs only).

    The one with the smaller expected Hellinger distance at the request's size — the size the curator
    declared public, else the reference size (a public guess) — at the request's budget: the global
    mechanism's accuracy does not grow with the table as the Laplace baseline's does (docs/dirichlet.md),
    so the right choice depends on the size. Without a size to compare at: the Laplace baseline, whose
    accuracy improves with every record.
    """
    n = size if size is not None else reference_size
    if budget is None or n is None or n <= 0:
        return (
            "laplace",
            "the Laplace baseline (no size to compare the mechanisms at: declare a size or give a reference size)",
        )
    counts = reference_counts(query.prior, int(n))
    ref = reference_accuracy(
        query,
        "exponential-global",
        counts,
        size is not None,
        float(budget),
        size_share,
        0.0,
        max_candidates,
        0.5,
    )
    best = min(("laplace", "exponential-global"), key=lambda m: ref[m])
    other = "exponential-global" if best == "laplace" else "laplace"
    words = {"laplace": "Laplace baseline", "exponential-global": "exponential mechanism (global)"}
    where = "the public size" if size is not None else "the reference size"
    return best, (
        f"the {words[best]}: the more accurate at {where} of {int(n):,} records "
        f"(expected Hellinger distance {ref[best]:.3g} against {ref[other]:.3g} for the {words[other]})"
    )


def reference_accuracy(
    query: PosteriorQuery,
    mechanism: str,
    counts: np.ndarray,
    size_public: bool,
    alpha: float,
    share: float,
    delta: float,
    max_candidates: int,
    split: float,
) -> dict[str, float]:
    """Expected H of each mechanism available at this (α, δ), at a public reference table.

    The smooth mechanism needs δ > 0, so it is compared only when it is the one requested.
    """
    prior = query.prior
    share = share or DEFAULT_SIZE_SHARE if not size_public else 0.0
    out = {"laplace": float(expected_hellinger(LaplaceCounts(prior, alpha), counts))}
    names = ["exponential-global"] + (["exponential-smooth"] if mechanism == "exponential-smooth" else [])
    for name in names:
        if size_public:
            cs = CandidateSet.for_size(prior, int(counts.sum()), max_candidates)
            out[name] = float(expected_hellinger(make_mechanism(name, cs, alpha, delta, split), counts))
        else:
            out[name] = float(
                expected_hellinger_noisy_size(
                    prior,
                    counts,
                    size_alpha=share * alpha,
                    make=lambda cs, name=name: make_mechanism(name, cs, (1 - share) * alpha, delta, split),
                    max_candidates=max_candidates,
                    max_sizes=15,
                )
            )
    return out
