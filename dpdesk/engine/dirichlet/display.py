"""What the app draws for a Dirichlet: Beta density curves (two categories) or per-category bands.

Each category's proportion under ``Dir(a)`` is ``Beta(a_i, A - a_i)``, ``A = Σa``: its mean is
``a_i/A`` and its equal-tailed credible band at level ``L`` runs between that Beta's
``(1-L)/2`` and ``(1+L)/2`` quantiles. For two categories the whole posterior is the Beta density of
the first proportion. These are functions of released (or prior) parameters only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

__all__ = ["ProportionBands", "proportion_bands", "beta_density"]


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
        _readonly(a), float(level), _readonly(a / a.sum()),
        _readonly(stats.beta.ppf(tail, a, rest)), _readonly(stats.beta.ppf(1 - tail, a, rest)),
    )


def beta_density(parameters: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """The density of the first category's proportion (Beta) on ``grid`` ⊂ [0, 1] (two categories)."""
    a = np.asarray(parameters, dtype=float)
    if a.shape != (2,):
        raise ValueError("a density curve needs exactly two categories")
    return stats.beta.pdf(np.asarray(grid, dtype=float), a[0], a[1])
