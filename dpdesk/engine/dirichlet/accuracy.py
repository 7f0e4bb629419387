"""Accuracy of posterior releases: data-free guarantees, and exact expected distances at given counts.

Accuracy is the Hellinger distance between the released Dirichlet and the true posterior
``Dir(prior + c)``. Only the global-sensitivity exponential mechanism has a guarantee that holds for
every table (docs/dirichlet.md §6):

    Pr[ H(released, true) > H_min(c) + t ] ≤ N·exp(-α·t / (2Δ)),

where ``H_min(c)`` is the distance from the true posterior to the closest candidate (0 when the size
is the true total and the lattice is exact). :func:`alpha_for_target` inverts it, so an accuracy
target ``(t, γ)`` maps to a budget from public inputs alone.

:func:`expected_hellinger` computes ``E[H]`` exactly (or, for the Laplace baseline in many
dimensions, by seeded Monte Carlo) at *given* counts. Applied to the private table it is a
benchmark quantity and must never drive a release decision; applied to a reference table built from
public inputs (:func:`reference_counts`) it is data-free and may be shown to the curator.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpdesk.engine.dirichlet.candidates import DEFAULT_MAX_CANDIDATES, CandidateSet
from dpdesk.engine.dirichlet.hellinger import global_sensitivity, hellinger
from dpdesk.engine.dirichlet.mechanisms import (
    ExponentialGlobal,
    ExponentialSmooth,
    LaplaceCounts,
    clipped_count_pmf,
    discrete_laplace_pmf,
)
from dpdesk.engine.errors import DpdeskError

__all__ = [
    "alpha_for_target",
    "expected_bound",
    "expected_hellinger",
    "expected_hellinger_noisy_size",
    "reference_counts",
    "tail_bound",
    "within_at",
]

# Noise vectors are enumerated exactly up to this many points; beyond it the Laplace baseline uses
# Monte Carlo over public quantities (not privacy-relevant randomness).
_EXACT_POINTS = 400_000
# Laplace noise is enumerated over |z| ≤ Z with Pr(|Z_i| > Z) below this.
_TAIL = 1e-9


def tail_bound(prior: Any, alpha: float, n_candidates: int, t: float) -> float:
    """``min(1, N·exp(-α·t/(2Δ)))``: bound on Pr[H > H_min + t] for the global mechanism."""
    delta_g = global_sensitivity(np.asarray(prior, dtype=float))
    return min(1.0, n_candidates * math.exp(-alpha * t / (2 * delta_g)))


def within_at(prior: Any, alpha: float, n_candidates: int, failure: float) -> float:
    """The distance ``t`` with ``Pr[H > H_min + t] ≤ failure`` for the global mechanism (inverting
    :func:`tail_bound`): ``(2Δ/α)·ln(N/failure)``; 1 or more means the bound promises nothing."""
    delta_g = global_sensitivity(np.asarray(prior, dtype=float))
    return 2 * delta_g / alpha * max(math.log(n_candidates / failure), 0.0)


def expected_bound(prior: Any, alpha: float, n_candidates: int) -> float:
    """``min(1, (2Δ/α)·(ln N + 1))``: bound on E[H - H_min] for the global mechanism, every table.

    Integrating :func:`tail_bound`: ``E[X] ≤ s + ∫_s^∞ N e^{-αt/2Δ} dt`` with ``s = (2Δ/α) ln N``.
    """
    delta_g = global_sensitivity(np.asarray(prior, dtype=float))
    return min(1.0, 2 * delta_g / alpha * (math.log(n_candidates) + 1))


def alpha_for_target(prior: Any, n_candidates: int, within: float, failure: float) -> float:
    """The budget α with ``Pr[H > H_min + within] ≤ failure`` for the global mechanism (public inputs)."""
    if not (0 < within <= 1):
        raise DpdeskError(f"accuracy target: distance ({within}) must be in (0, 1]")
    if not (0 < failure < 1):
        raise DpdeskError(f"accuracy target: failure probability ({failure}) must be in (0, 1)")
    delta_g = global_sensitivity(np.asarray(prior, dtype=float))
    return 2 * delta_g * max(math.log(n_candidates / failure), 0.0) / within


def reference_counts(prior: Any, size: int) -> np.ndarray:
    """A public reference table: ``size`` records split in the prior's proportions (largest remainder)."""
    prior = np.asarray(prior, dtype=float)
    share = size * prior / prior.sum()
    base: np.ndarray = np.floor(share).astype(np.int64)
    rest = int(size - base.sum())
    base[np.argsort(-(share - base), kind="stable")[:rest]] += 1
    return base


def _laplace_expected(mech: LaplaceCounts, counts: np.ndarray, samples: int, seed: int) -> float:
    k = mech.prior.size
    truth = mech.prior + counts
    reach = int(math.ceil(math.log(1 / _TAIL) / mech.alpha))
    if (2 * reach + 1) ** k <= _EXACT_POINTS:
        # each category's clipped noisy count on its own support, then all combinations
        axes = []
        for c in counts:
            lo = max(0, int(c) - reach)
            v = np.arange(lo, int(c) + reach + 1)
            p = discrete_laplace_pmf(v - c, mech.alpha)
            if lo == 0:
                p[0] = clipped_count_pmf(int(c), mech.alpha, 0)[0]
            axes.append((v, p))
        grids = np.meshgrid(*[v for v, _ in axes], indexing="ij")
        probs = np.ones_like(grids[0], dtype=float)
        for g, (_, p) in zip(np.meshgrid(*[p for _, p in axes], indexing="ij"), axes):
            probs = probs * g
        params = mech.prior + np.stack([g.reshape(-1) for g in grids], axis=1)
        h = hellinger(truth, params)
        return float((probs.reshape(-1) * h).sum() / probs.sum())
    rng = np.random.default_rng(seed)
    success = -math.expm1(-mech.alpha)  # a geometric count's: the discrete Laplace is the difference of two
    z = rng.geometric(success, size=(samples, k)) - rng.geometric(success, size=(samples, k))
    params = mech.prior + np.maximum(0, counts + z)
    return float(hellinger(truth, params).mean())


def expected_hellinger(mechanism: Any, counts: Any, *, samples: int = 20_000, seed: int = 0) -> float:
    """``E[H(released, Dir(prior + counts))]`` for one mechanism at the given counts.

    Exact for the exponential mechanisms (a sum over the candidates) and for the Laplace baseline in
    few dimensions (a sum over the noise lattice, tails below 1e-9); seeded Monte Carlo otherwise.
    """
    c = np.asarray(counts, dtype=np.int64)
    if isinstance(mechanism, (ExponentialGlobal, ExponentialSmooth)):
        scores = mechanism.scores(c)  # -H to every candidate: the distances the expectation needs
        w = np.exp((scores - scores.max()) / mechanism._scale(c))
        return float(w @ -scores / w.sum())
    if isinstance(mechanism, LaplaceCounts):
        return _laplace_expected(mechanism, c, samples, seed)
    raise TypeError(f"no accuracy model for {type(mechanism).__name__}")


def expected_hellinger_noisy_size(
    prior: Any,
    counts: Any,
    *,
    size_alpha: float,
    make: Any,
    max_candidates: int = DEFAULT_MAX_CANDIDATES,
    mass: float = 0.999,
    max_sizes: int | None = None,
) -> float:
    """``E[H]`` of the two-stage release: a noisy size ``m``, then ``make(CandidateSet)``'s mechanism.

    Sums over the central ``mass`` of the size's distribution (the rest is renormalised away). With
    ``max_sizes``, a wider range is replaced by that many sizes at evenly spaced quantiles (a
    stratified quadrature of the same expectation), which bounds the time of a small budget's wide range.
    """
    c = np.asarray(counts, dtype=np.int64)
    n = int(c.sum())
    reach = int(math.ceil(math.log(2 / (1 - mass)) / size_alpha))
    pmf = clipped_count_pmf(n, size_alpha, n + reach)
    sizes = np.arange(pmf.size)
    keep = sizes >= max(0, n - reach)
    sizes, weights = sizes[keep], pmf[keep] / float(pmf[keep].sum())
    if max_sizes is not None and sizes.size > max_sizes:
        cdf = np.cumsum(weights)
        picks = np.searchsorted(cdf, (np.arange(max_sizes) + 0.5) / max_sizes)
        sizes, weights = sizes[np.minimum(picks, sizes.size - 1)], np.full(max_sizes, 1.0 / max_sizes)
    total = 0.0
    for m, w in zip(sizes, weights):
        mech = make(CandidateSet.for_size(prior, int(m), max_candidates))
        total += w * expected_hellinger(mech, c)
    return total
