"""Helpers shared by the statistical tests: random box queries and the binomial-error check."""

from __future__ import annotations

import math

import numpy as np

from dpdesk.engine.queries.query import Query, Term


def random_box(rng: np.random.Generator, shape: tuple[int, ...]) -> Query:
    """A box over ``shape`` (one contiguous label range per attribute) with weight 1 or 2."""
    factors = []
    for k in shape:
        lo = int(rng.integers(0, k))
        hi = int(rng.integers(lo, k))
        f = np.zeros(k)
        f[lo : hi + 1] = 1.0
        factors.append(f)
    return Query(shape, terms=(Term(float(rng.integers(1, 3)), tuple(factors)),))


def within_binomial(hits, claimed, k: float = 4.0) -> tuple[float, float]:
    """Assert the hit rate is within ``k`` binomial standard deviations of the mean claimed mass."""
    n = len(hits)
    p = float(np.mean(claimed))
    sd = math.sqrt(max(p * (1 - p), 1e-4) / n)
    rate = float(np.mean(hits))
    assert abs(rate - p) <= k * sd, f"coverage {rate:.4f} vs claimed {p:.4f} (sd {sd:.4f}, n={n})"
    return rate, sd
