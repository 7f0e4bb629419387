"""Cross-validation of the max-entropy trade-off τ for marginal-shaped histories (seed §3.5 applied to §4).

**What is held out: whole marginals, not cells.** In a marginal-shaped history the released queries come
in whole tables, and a query "drawn like the history's" is a marginal on a set of attributes of the same
kind, with none of its cells released. A single held-out cell is not like that: the other cells of its
own marginal and the 1-way totals the other marginals fix pin it down almost exactly, so cell-level
folds would score the consistency projection's interpolation (which τ barely touches), not how well the
model predicts a marginal it was not given — the extrapolation τ trades against fitting the noise. Whole
marginals are also what the closed-form projection (:func:`~.marginals.consistent_marginals`) needs: each
fold projects its training marginals alone, so no held-out noise leaks into the targets.

**The estimate.** The marginals are shuffled (``seed``) into ``k`` folds. For each fold and each τ the
model is fitted to the other folds (:func:`~.marginal_fit.fit_marginals`, warm-started from the same fold at
the previous τ — the grid runs from the largest τ down, each box inside the last), and its expected
counts ``μ̂`` for the held-out cells are read off the fit's particles. With ``y`` the released cells,
``σ²`` their noise variance and ``w = μ̂(n − μ̂)/M`` the particles' binomial Monte Carlo variance, each
held-out cell contributes ``e² = (μ̂ − y)² − σ² − w``: unbiased for the model's squared error on that
cell (the noise is independent of the training folds). The CV estimate at τ is the mean of ``e²`` over
all held-out cells (every cell is held out once), in counts².

**Noise floor.** Subtracting ``σ²`` leaves the noise's own spread: for Laplace noise of scale ``b``
(``σ² = 2b²``) ``var(ν²) = 20b⁴``, so the mean over ``m`` cells has standard deviation ``b²√(20/m)`` even
for a perfect model (``floor_sd``; 34 counts² for §5.2's 29 570 cells at b = 36): RMSEs below
``√(2·floor_sd)`` cannot be told from zero and the estimate can go negative. ``se`` is the standard
error between folds (``sd/√k`` of the fold means), which also carries the Monte Carlo error of the fits.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpdesk.engine.errors import Cancelled, DpdeskError
from dpdesk.engine.estimates.crossval import NoiseFloorCurve
from dpdesk.engine.estimates.marginal_fit import MarginalFit, fit_marginals
from dpdesk.engine.estimates.marginals import Marginal

__all__ = ["MarginalCV", "cross_validate_marginals"]


def _ro(a: Any) -> np.ndarray:
    out: np.ndarray = np.array(a, dtype=np.float64, copy=True)
    out.setflags(write=False)
    return out


@dataclass(frozen=True)
class MarginalCV(NoiseFloorCurve):
    """k-fold cross-validation of τ over whole held-out marginals (module docstring).

    Attributes
    ----------
    taus, mse, se : ndarray
        The τ grid (increasing), the CV estimates of the mean squared error per held-out cell (counts²),
        and their standard errors between folds.
    fold_mse : ndarray
        ``(len(taus), k)``: each fold's estimate.
    converged : ndarray
        ``(len(taus), k)`` booleans: whether each fit passed its convergence test.
    predicted : ndarray
        ``(len(taus), m)``: every cell's held-out prediction ``μ̂`` (marginals' order, row-major within each).
    floor_sd : float
        Standard deviation the subtracted Laplace noise variance alone puts on every estimate.
    folds : tuple of tuple of int
        The marginals' indices in each fold.
    best_tau, best_mse, best_se : float
        The grid τ with the smallest estimate, its estimate and standard error.
    seconds_per_fit : float
        Mean wall time of one fit.
    """

    taus: np.ndarray
    mse: np.ndarray
    se: np.ndarray
    fold_mse: np.ndarray
    converged: np.ndarray
    predicted: np.ndarray
    floor_sd: float
    folds: tuple[tuple[int, ...], ...]
    m: int
    best_tau: float
    best_mse: float
    best_se: float
    seconds_per_fit: float

    def summary(self) -> str:
        """One line: the chosen τ and the estimated RMSE per held-out cell there."""
        rmse = (
            f"below the resolution ({self.resolution:.3g})"
            if self.best_mse <= 2.0 * max(self.best_se, self.floor_sd)
            else f"about {math.sqrt(self.best_mse):.3g}"
        )
        return (
            f"τ = {self.best_tau:.3g} by {len(self.folds)}-fold cross-validation over whole marginals: "
            f"RMSE per held-out cell {rmse} (± {self.best_se:.3g} counts² on the MSE; noise floor "
            f"{self.floor_sd:.3g}); {int(self.converged.sum())} of {self.converged.size} fits converged"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "taus": self.taus.tolist(),
            "mse": self.mse.tolist(),
            "se": self.se.tolist(),
            "fold_mse": self.fold_mse.tolist(),
            "converged": self.converged.tolist(),
            "floor_sd": self.floor_sd,
            "folds": [list(f) for f in self.folds],
            "m": self.m,
            "best_tau": self.best_tau,
            "best_mse": self.best_mse,
            "best_se": self.best_se,
            "seconds_per_fit": self.seconds_per_fit,
        }


def _folds(marginals: Sequence[Marginal], dims: int, k: int, seed: int) -> list[list[int]]:
    order = np.random.default_rng(seed).permutation(len(marginals))
    folds = [sorted(int(i) for i in order[f::k]) for f in range(k)]
    for f in folds:
        kept = {a for i in range(len(marginals)) if i not in f for a in marginals[i].axes}
        if kept != set(range(dims)):
            missing = sorted(set(range(dims)) - kept)
            raise DpdeskError(
                f"cross-validation: holding out marginals {f} leaves attributes {missing} "
                "in no training marginal; use fewer folds"
            )
    return folds


def cross_validate_marginals(
    shape: Sequence[int],
    marginals: Sequence[Marginal],
    *,
    table_size: float,
    taus: Sequence[float],
    k: int = 6,
    seed: int = 0,
    progress: Callable[[float], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
    **fit_options: Any,
) -> MarginalCV:
    """Choose the max-entropy trade-off τ by k-fold cross-validation over whole marginals (module docstring).

    Parameters
    ----------
    shape : sequence of int
        The domain's attribute sizes.
    marginals : sequence of Marginal
        The released marginals (independent noise; the floor assumes Laplace noise).
    table_size : float
        The table size ``n``.
    taus : sequence of float
        The τ grid (positive, finite).
    k : int
        Folds (2 ≤ k ≤ number of marginals); every attribute must stay in some training marginal.
    seed : int
        Shuffles the marginals into folds; fits use ``seed + fold``.
    fit_options
        Passed to :func:`~.marginal_fit.fit_marginals` (``particles``, ``max_iter``, ``gtol``, ``sweeps``, ...).
    """
    grid = np.sort(np.asarray(list(taus), dtype=np.float64))
    if grid.size == 0 or not np.all(np.isfinite(grid)) or grid[0] <= 0:
        raise DpdeskError("cross-validation: the τ grid must hold positive finite values")
    if not (isinstance(k, (int, np.integer)) and 2 <= k <= len(marginals)):
        raise DpdeskError(
            f"cross-validation: k ({k!r}) must be an integer from 2 to the number of marginals "
            f"({len(marginals)})"
        )
    n = float(table_size)
    folds = _folds(marginals, len(shape), int(k), seed)
    fold_mse = np.zeros((grid.size, len(folds)))
    fold_m = np.zeros(len(folds))
    conv = np.zeros((grid.size, len(folds)), dtype=bool)
    offsets = np.cumsum([0] + [mg.table.size for mg in marginals])
    predicted = np.zeros((grid.size, int(offsets[-1])))
    spent, fits = 0.0, 0
    for f, held in enumerate(folds):
        train = [mg for i, mg in enumerate(marginals) if i not in held]
        fold_m[f] = sum(marginals[i].table.size for i in held)
        theta = None
        for j in range(grid.size - 1, -1, -1):  # largest τ first: each warm start lies inside the next box
            if cancelled is not None and cancelled():
                raise Cancelled()
            t0 = time.perf_counter()
            fit = fit_marginals(
                shape,
                train,
                table_size=n,
                tau=float(grid[j]),
                seed=seed + f,
                theta0=theta,
                cancelled=cancelled,
                **fit_options,
            )
            spent += time.perf_counter() - t0
            fits += 1
            theta, conv[j, f] = fit.theta, fit.converged
            fold_mse[j, f] = _held_out_error(fit, held, marginals, predicted[j], offsets, n) / fold_m[f]
            if progress is not None:
                progress(fits / (grid.size * len(folds)))
    return _curve(grid, fold_mse, fold_m, conv, predicted, folds, marginals, spent / max(fits, 1))


def _held_out_error(
    fit: MarginalFit,
    held: Sequence[int],
    marginals: Sequence[Marginal],
    predicted: np.ndarray,
    offsets: np.ndarray,
    n: float,
) -> float:
    """The summed squared error of the fit's counts on the held-out marginals, less their noise and the
    particles' Monte Carlo variance (unbiased for the fit's own error); fills ``predicted``."""
    parts = fit.particles
    kappa = n / parts.shape[0]
    total = 0.0
    for i in held:
        mg = marginals[i]
        code = np.ravel_multi_index(tuple(parts[:, a] for a in mg.axes), mg.table.shape)
        mu = (np.bincount(code, minlength=mg.table.size) * kappa).reshape(mg.table.shape)
        predicted[offsets[i] : offsets[i + 1]] = mu.reshape(-1)
        total += float(np.sum((mu - mg.table) ** 2 - mg.variance - mu * (n - mu) / parts.shape[0]))
    return total


def _curve(
    grid: np.ndarray,
    fold_mse: np.ndarray,
    fold_m: np.ndarray,
    conv: np.ndarray,
    predicted: np.ndarray,
    folds: Sequence[Sequence[int]],
    marginals: Sequence[Marginal],
    seconds_per_fit: float,
) -> MarginalCV:
    """The pooled error curve over τ, its standard errors and noise floor, and the best τ."""
    m = int(fold_m.sum())
    mse = fold_mse @ fold_m / m
    # between folds: the weighted spread of the fold means around the pooled one
    wts = fold_m / m
    var = (fold_mse - mse[:, None]) ** 2 @ wts / max(len(folds) - 1, 1)
    se = np.sqrt(var)
    # Laplace noise: var(ν²) = 20b⁴ = 5σ⁴ per cell
    floor_sd = math.sqrt(sum(5.0 * mg.variance**2 * mg.table.size for mg in marginals)) / m
    best = int(np.argmin(mse))
    conv.setflags(write=False)
    return MarginalCV(
        taus=_ro(grid),
        mse=_ro(mse),
        se=_ro(se),
        fold_mse=_ro(fold_mse),
        converged=conv,
        predicted=_ro(predicted),
        floor_sd=floor_sd,
        folds=tuple(tuple(f) for f in folds),
        m=m,
        best_tau=float(grid[best]),
        best_mse=float(mse[best]),
        best_se=float(se[best]),
        seconds_per_fit=seconds_per_fit,
    )
