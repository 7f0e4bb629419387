"""What the app draws for a Dirichlet: Beta density curves (two categories) or per-category bands.

Each category's proportion under ``Dir(a)`` is ``Beta(a_i, A - a_i)``, ``A = Σa``: its mean is
``a_i/A`` and its equal-tailed credible band at level ``L`` runs between that Beta's
``(1-L)/2`` and ``(1+L)/2`` quantiles. For two categories the whole posterior is the Beta density of
the first proportion. These are functions of released (or prior) parameters only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

__all__ = [
    "DirichletMixture",
    "ProportionBands",
    "bands_of",
    "beta_density",
    "curve_range",
    "density_of",
    "noisy_counts_bands",
    "noisy_counts_law",
    "proportion_bands",
]


@dataclass(frozen=True)
class ProportionBands:
    """Per-category mean and equal-tailed credible band of the proportions under ``Dir(parameters)``."""

    parameters: np.ndarray
    level: float
    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.array(a, dtype=float)
    a.setflags(write=False)
    return a


def proportion_bands(parameters: np.ndarray, level: float = 0.95) -> ProportionBands:
    """Means and ``level`` credible bands of every category's proportion.

    Examples
    --------
    >>> b = proportion_bands(np.array([5.0, 5.0]))
    >>> float(b.mean[0]), round(float(b.low[0]), 4), round(float(b.high[0]), 4)
    (0.5, 0.212, 0.788)
    """
    a = np.asarray(parameters, dtype=float)
    if a.ndim != 1 or a.size < 2 or not np.all(np.isfinite(a) & (a > 0)):
        raise ValueError(f"parameters ({a.tolist()}) must be at least 2 positive numbers")
    if not 0 < level < 1:
        raise ValueError(f"level ({level}) must be in (0, 1)")
    rest = a.sum() - a
    tail = (1 - level) / 2
    return ProportionBands(
        _readonly(a),
        float(level),
        _readonly(a / a.sum()),
        _readonly(stats.beta.ppf(tail, a, rest)),
        _readonly(stats.beta.ppf(1 - tail, a, rest)),
    )


def beta_density(parameters: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """The density of the first category's proportion (Beta) on ``grid`` ⊂ [0, 1] (two categories)."""
    a = np.asarray(parameters, dtype=float)
    if a.shape != (2,):
        raise ValueError("a density curve needs exactly two categories")
    return np.asarray(stats.beta.pdf(np.asarray(grid, dtype=float), a[0], a[1]))


@dataclass(frozen=True)
class DirichletMixture:
    """What a mechanism releases on average: ``Σ_j w_j·Dir(parameters_j)`` (weights sum to 1).

    Built from public inputs only (:mod:`dpdesk.engine.dirichlet.alternatives`): the law of a
    mechanism's released posterior at a public table, drawn beside the posterior it aims at.
    """

    weights: np.ndarray  # (m,), read-only
    parameters: np.ndarray  # (m, k), read-only

    def __post_init__(self) -> None:
        w = np.asarray(self.weights, dtype=float)
        a = np.asarray(self.parameters, dtype=float)
        if (
            a.ndim != 2
            or w.shape != (a.shape[0],)
            or a.shape[1] < 2
            or not np.all(a > 0)
            or not np.all(w >= 0)
        ):
            raise ValueError("a mixture needs one non-negative weight per row of positive parameters")
        object.__setattr__(self, "weights", _readonly(w / w.sum()))
        object.__setattr__(self, "parameters", _readonly(a))

    @property
    def mean(self) -> np.ndarray:
        """``E[proportions]`` under the mixture."""
        return np.asarray(self.weights @ (self.parameters / self.parameters.sum(axis=1, keepdims=True)))


def density_of(item: np.ndarray | DirichletMixture, grid: np.ndarray) -> np.ndarray:
    """The first proportion's density (two categories) of a Dirichlet or of a mixture of them."""
    if isinstance(item, DirichletMixture):
        a = item.parameters
        if a.shape[1] != 2:
            raise ValueError("a density curve needs exactly two categories")
        return np.asarray(
            item.weights @ stats.beta.pdf(np.asarray(grid, dtype=float)[None, :], a[:, :1], a[:, 1:])
        )
    return beta_density(item, grid)


def bands_of(item: np.ndarray | DirichletMixture, level: float = 0.95) -> ProportionBands:
    """Per-category mean and equal-tailed ``level`` band of a Dirichlet or of a mixture (its marginal
    law: ``Σ_j w_j·Beta(a_ji, A_j − a_ji)``; quantiles read off its CDF on a fine grid)."""
    if not isinstance(item, DirichletMixture):
        return proportion_bands(item, level)
    a = item.parameters
    grid = np.linspace(0.0, 1.0, 1001)
    tail = (1 - level) / 2
    low, high = [], []
    for i in range(a.shape[1]):
        cdf = item.weights @ stats.beta.cdf(
            grid[None, :], a[:, i : i + 1], (a.sum(axis=1) - a[:, i])[:, None]
        )
        low.append(float(np.interp(tail, cdf, grid)))
        high.append(float(np.interp(1 - tail, cdf, grid)))
    return ProportionBands(
        _readonly(item.mean),
        float(level),
        _readonly(item.mean),
        _readonly(np.array(low)),
        _readonly(np.array(high)),
    )


def curve_range(items: list[np.ndarray | DirichletMixture], tail: float = 1e-4) -> tuple[float, float]:
    """Where the first proportion's densities of ``items`` (two categories) hold all but ``tail`` of
    their mass, padded by a tenth; [0, 1] when that is most of it. A large table's posterior is a
    narrow spike that a [0, 1] axis would hide."""
    lo, hi = 1.0, 0.0
    for item in items:
        a = item.parameters if isinstance(item, DirichletMixture) else np.asarray(item, dtype=float)[None, :]
        lo = min(lo, float(stats.beta.ppf(tail, a[:, 0], a[:, 1]).min()))
        hi = max(hi, float(stats.beta.ppf(1 - tail, a[:, 0], a[:, 1]).max()))
    pad = 0.1 * (hi - lo)
    lo, hi = max(0.0, lo - pad), min(1.0, hi + pad)
    return (0.0, 1.0) if hi - lo > 0.5 or hi <= lo else (lo, hi)


def _true_counts(noisy_counts: Any, alpha: float, draws: int, rng: np.random.Generator) -> np.ndarray:
    """``draws`` samples of the true counts given the noisy ones (see :func:`noisy_counts_law`)."""
    noisy = np.rint(np.asarray(noisy_counts, dtype=float))
    p = -math.expm1(-float(alpha))
    c = np.empty((draws, noisy.size))
    todo = np.ones_like(c, dtype=bool)
    for _ in range(200):  # rejection of c < 0: each pass keeps at least the half with z ≤ 0
        n = int(todo.sum())
        if n == 0:
            break
        z = rng.geometric(p, size=n) - rng.geometric(p, size=n)
        cand = np.broadcast_to(noisy, c.shape)[todo] - z
        ok = cand >= 0
        idx = np.flatnonzero(todo)
        c.flat[idx[ok]] = cand[ok]
        todo.flat[idx[ok]] = False
    c[todo] = 0.0  # never reached in practice (a count far below zero keeps 0)
    return c


def noisy_counts_law(
    prior: Any, noisy_counts: Any, alpha: float, *, draws: int = 1000, seed: int = 0
) -> DirichletMixture:
    """What the true shares may be after a Laplace release: the released posterior *and* the noise.

    Each released count is ``c + Z`` with ``Z`` discrete Laplace of scale ``1/α`` (``Pr(z) ∝ e^{−α|z|}``).
    With a flat prior on the true counts ``c ≥ 0``, ``c`` given the noisy count ``ñ`` has ``Pr(c) ∝
    e^{−α|ñ − c|}``; the shares then follow ``Dir(prior + c)``. The mixture over ``draws`` seeded draws of
    ``c`` (public inputs only: the release and its noise scale; not privacy-relevant randomness) is the law
    whose bands include the mechanism's noise — the released posterior ``Dir(prior + max(0, ñ))`` alone
    leaves it out and can miss the truth.
    """
    rng = np.random.default_rng(seed)
    return DirichletMixture(
        np.ones(draws), np.asarray(prior, dtype=float) + _true_counts(noisy_counts, alpha, draws, rng)
    )


def noisy_counts_bands(
    prior: Any, noisy_counts: Any, alpha: float, level: float = 0.95, *, samples: int = 20_000, seed: int = 0
) -> ProportionBands:
    """Each share's mean and equal-tailed ``level`` band under :func:`noisy_counts_law`, from ``samples``
    seeded draws of the shares (a true-count draw, then a Dirichlet draw): quantiles to about ±0.002 of
    the band's probability, in milliseconds where the exact mixture's CDF takes seconds."""
    rng = np.random.default_rng(seed)
    prior = np.asarray(prior, dtype=float)
    g = rng.standard_gamma(prior + _true_counts(noisy_counts, alpha, samples, rng))
    shares = g / g.sum(axis=1, keepdims=True)
    tail = (1 - level) / 2
    return ProportionBands(
        _readonly(prior + np.maximum(0.0, np.asarray(noisy_counts, dtype=float))),
        float(level),
        _readonly(shares.mean(axis=0)),
        _readonly(np.quantile(shares, tail, axis=0)),
        _readonly(np.quantile(shares, 1 - tail, axis=0)),
    )
