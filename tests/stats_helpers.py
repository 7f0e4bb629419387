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


# --- draws from a sampler that cannot be seeded (OpenDP's) ----------------------------------------------
# A test of such draws cannot be made deterministic; its false-failure probability is bounded instead.
# Each category's count among n draws is Binomial(n, p) under the law tested; it must fall inside its
# exact equal-tailed bounds at level FALSE_FAILURE / k for k categories, so by the union bound a correct
# sampler fails with probability at most FALSE_FAILURE per test (no χ² approximation in the tail).
# That the test can fail is shown without more draws: ``chance_to_pass`` bounds the probability that
# draws from a wrong law pass, and each test asserts it is below FALSE_FAILURE as well.

FALSE_FAILURE = 1e-6


def count_bounds(n: int, probs, false_failure: float = FALSE_FAILURE) -> np.ndarray:
    """``[lo, hi]`` per category: ``Pr(count < lo) ≤ a/2`` and ``Pr(count > hi) ≤ a/2`` exactly under
    Binomial(n, p), with ``a = false_failure / k``."""
    from scipy import stats

    p = np.asarray(probs, dtype=float)
    a = false_failure / p.size
    return np.column_stack([stats.binom.ppf(a / 2, n, p), stats.binom.isf(a / 2, n, p)])


def assert_counts_follow(observed, probs, false_failure: float = FALSE_FAILURE) -> np.ndarray:
    """Assert every category's count lies inside its :func:`count_bounds`; returns the bounds."""
    obs = np.asarray(observed)
    bounds = count_bounds(int(obs.sum()), probs, false_failure)
    outside = [
        (i, int(o), float(lo), float(hi))
        for i, (o, (lo, hi)) in enumerate(zip(obs, bounds))
        if not lo <= o <= hi
    ]
    assert not outside, f"counts outside their bounds (category, count, lo, hi): {outside}"
    return bounds


def chance_to_pass(n: int, bounds: np.ndarray, wrong_probs) -> float:
    """An upper bound on the probability that ``n`` draws from ``wrong_probs`` pass these bounds: the
    smallest, over categories, of the probability that its count alone lands inside its bounds."""
    from scipy import stats

    q = np.asarray(wrong_probs, dtype=float)
    inside = stats.binom.cdf(bounds[:, 1], n, q) - stats.binom.cdf(bounds[:, 0] - 1, n, q)
    return float(inside.min())
