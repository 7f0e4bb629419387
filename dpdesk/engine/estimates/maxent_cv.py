"""k-fold cross-validation of the maximum-entropy fit's τ (:func:`~dpdesk.engine.estimates.maxent.fit_maxent`):
the same estimator and noise floor as the shrinkage estimate's (:mod:`~dpdesk.engine.estimates.crossval`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.estimates.maxent import _ro, fit_maxent
from dpdesk.engine.estimates.released import Released

__all__ = ["MaxEntCV", "cross_validate_maxent"]


@dataclass(frozen=True)
class MaxEntCV:
    """k-fold CV of the maximum-entropy fit against τ (same estimator and noise floor as :class:`CVCurve`)."""

    taus: np.ndarray
    mse: np.ndarray
    se: np.ndarray
    floor_sd: float
    k: int
    m: int
    best_tau: float


def cross_validate_maxent(
    released: Released,
    *,
    table_size: float,
    taus: Sequence[float],
    prior: Sequence[np.ndarray] | None = None,
    k: int = 5,
    seed: int = 0,
    particles: int = 100_000,
    progress: Callable[[float], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
    **fit_options: Any,
) -> MaxEntCV:
    """Held-out ``(a_i − n·p_w[f_i])² − σ_i²`` averaged over rows, for each τ (fits warm-started along τ)."""
    m = len(released)
    if m < 2 * k:
        raise DpdeskError(
            f"cross-validation needs at least {2 * k} released rows for {k} folds, the history has {m}"
        )
    grid = np.sort(np.asarray(list(taus), dtype=np.float64))
    folds = np.array_split(np.random.default_rng(seed).permutation(m), k)
    e = np.empty((m, grid.size))
    done, total = 0, k * grid.size
    for f, test in enumerate(folds):
        train = np.setdiff1d(np.arange(m), test)
        fit = None
        for j, tau in enumerate(grid):
            fit = fit_maxent(
                released,
                table_size=table_size,
                tau=float(tau),
                prior=prior,
                particles=particles,
                rows=train,
                seed=seed + 1000 * f + j,
                start=fit,
                cancelled=cancelled,
                **fit_options,
            )
            e[test, j] = (released.answers[test] - fit.expected[test]) ** 2 - released.variances[test]
            done += 1
            if progress is not None:
                progress(done / total)
    mse = e.mean(axis=0)
    se = e.std(axis=0, ddof=1) / math.sqrt(m)
    floor_sd = math.sqrt(float(np.sum(released.fourth_moments - released.variances**2))) / m
    return MaxEntCV(_ro(grid), _ro(mse), _ro(se), floor_sd, k, m, float(grid[int(np.argmin(mse))]))
