"""Choosing the shrinkage τ by k-fold cross-validation on the released rows (seed §3.5), honestly.

Split the rows into k folds; for each fold fit :class:`~dpdesk.engine.estimates.shrinkage.ShrinkageModel`
on the others and estimate the held-out rows at every τ. A held-out row's noisy answer is an unbiased
stand-in for its truth, so ``(a_i − â_i)² − σ_i²`` is an unbiased estimate of the squared error there
(seed Thm 4). Averaged over all rows this estimates the **mean squared error over queries drawn like
the history's**, with ``(k−1)/k`` of the rows (seed Eq. 21) — not the error of any one request, and not
of queries unlike the history's.

Subtracting ``σ²`` leaves a noise floor: the average of ``e_i²`` has standard deviation
``√(Σ_i Var(e_i²))/m`` (``b²·√(20/m)`` for Laplace noise of scale ``b``), so smaller MSEs cannot be told
from zero and the estimate can go negative. :class:`CVCurve` reports that floor and the empirical
standard error beside every value. Randomness here only splits folds; it is not privacy-relevant.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.linalg import blas, cho_factor, cho_solve
from scipy.optimize import minimize_scalar

from dpdesk.engine.errors import Cancelled, DpdeskError
from dpdesk.engine.estimates.kernel import QueryStack, gram, universal
from dpdesk.engine.estimates.shrinkage import ShrinkageModel, shrinkage_factors

__all__ = ["CVCurve", "NoiseFloorCurve", "cross_validate"]

# Typical number of evaluations the refinement of the minimum takes (for progress only).
_REFINE_EVALUATIONS = 12


def _ro(a: Any) -> np.ndarray:
    out: np.ndarray = np.array(a, dtype=np.float64, copy=True)
    out.setflags(write=False)
    return out


class NoiseFloorCurve:
    """What a CV curve of MSE estimates (``mse``) with a noise floor (``floor_sd``) can and cannot say."""

    mse: np.ndarray  # the curve's MSE estimates (fields of the dataclasses that use this)
    floor_sd: float

    @property
    def rmse(self) -> np.ndarray:
        """``√MSE`` where the estimate is positive, else 0 (the curve is still what the data say)."""
        return np.asarray(np.sqrt(np.maximum(self.mse, 0.0)))

    @property
    def resolution(self) -> float:
        """The smallest RMSE the estimate can tell from zero: ``√(2·floor_sd)``."""
        return math.sqrt(2.0 * self.floor_sd)


@dataclass(frozen=True)
class CVCurve(NoiseFloorCurve):
    """k-fold cross-validation estimate of the mean squared error against τ (module docstring).

    Attributes
    ----------
    taus, mse, se : ndarray
        The τ values tried (``inf``: unbiased), the MSE estimates, and their standard errors (the larger
        of the i.i.d. one over rows and the one between folds; an approximation, see the code).
    floor_sd : float
        Standard deviation the subtracted noise variance alone puts on every MSE estimate.
    best_tau, best_mse, best_se : float
        The τ with the smallest estimate (refined between grid points), its estimate and standard error.
    """

    taus: np.ndarray
    mse: np.ndarray
    se: np.ndarray
    floor_sd: float
    k: int
    m: int
    best_tau: float
    best_mse: float
    best_se: float

    def summary(self) -> str:
        """One line for the curator: the estimated RMSE at the chosen τ and what it means."""
        if self.best_mse <= 2.0 * max(self.best_se, self.floor_sd):
            rmse = f"below the resolution of this history (about {self.resolution:.3g})"
        else:
            rmse = f"about {math.sqrt(self.best_mse):.3g}"
        return (
            f"{self.k}-fold cross-validation on {self.m} released rows: at τ = {self.best_tau:.3g} the "
            f"root-mean-square error over queries like the history's is {rmse}; it is no bound for one request"
        )

    def to_json(self) -> dict[str, Any]:
        def num(v: float) -> float | str:
            return v if math.isfinite(v) else ("inf" if v > 0 else "nan")

        return {
            "k": self.k,
            "m": self.m,
            "taus": [num(float(t)) for t in self.taus],
            "mse": [num(float(v)) for v in self.mse],
            "se": [num(float(v)) for v in self.se],
            "floor_sd": self.floor_sd,
            "best_tau": num(self.best_tau),
            "best_mse": num(self.best_mse),
            "best_se": num(self.best_se),
            "summary": self.summary(),
        }


def _split(m: int, k: int, seed: int) -> list[np.ndarray]:
    order = np.random.default_rng(seed).permutation(m)
    return [np.sort(f) for f in np.array_split(order, k)]


class _RefitFolds:
    """The seed's procedure: one model per training set; held-out estimates at any τ cost O(m·r)."""

    def __init__(
        self,
        model: ShrinkageModel,
        k: int,
        seed: int,
        progress: Callable[[float], None] | None,
        cancelled: Callable[[], bool] | None,
    ) -> None:
        released = model.released
        stack = QueryStack(released.queries, released.shape)
        u = QueryStack([universal(released.shape)], released.shape)
        K = gram(stack, stack, model.prior)
        h = gram(stack, u, model.prior)[:, 0]
        self.parts = []
        folds = _split(len(released), k, seed)
        for f, test in enumerate(folds):
            if cancelled is not None and cancelled():
                raise Cancelled()
            train = np.setdiff1d(np.arange(len(released)), test)
            sub = ShrinkageModel.fit(
                released.subset(train),
                table_size=model.table_size,
                prior=model.prior,
                _kernel=(K[np.ix_(train, train)], h[train]),
            )
            self.parts.append((test, sub, sub.coordinates(K[np.ix_(test, train)], h[test]), h[test]))
            if progress is not None:
                progress((f + 1) / k)
        self.answers = released.answers
        self.variances = released.variances

    def terms(self, taus: np.ndarray) -> np.ndarray:
        """``(a_i − â_i(τ))² − σ_i²`` for every row (held out once) and τ: ``m × T``."""
        out = np.empty((self.answers.size, taus.size))
        for test, sub, c, hq in self.parts:
            pred = sub.predict(c, hq, taus)
            out[test] = (self.answers[test, None] - pred) ** 2 - self.variances[test, None]
        return out


class _BlockFolds:
    """The same held-out errors from the model on all rows, without refitting (exact for finite τ).

    The shrinkage estimate is the posterior mean of a Gaussian model with covariance ``C = τ²K⊥ + V``
    (module docstring of :mod:`~dpdesk.engine.estimates.shrinkage`), so a fold's held-out residuals are
    ``[(C⁻¹)_ff]⁻¹ (C⁻¹ r)_f``; with the total estimated, ``C⁻¹`` becomes the projector of universal
    kriging (Dubrule 1983). In the whitened eigenbasis ``C⁻¹ = U diag(d) Uᵀ`` with ``d = 1/(τ²λ² + 1)``,
    so each fold and τ costs one rank-``r`` symmetric product ``(U_f √d)(U_f √d)ᵀ`` (BLAS ``syrk``, half
    a general product) and a Cholesky solve of size ``m/k``.

    Why not one eigen-decomposition per training set, after which every τ is a diagonal reweighting
    (``_RefitFolds``)? At m = 5 000 one eigen-decomposition of 4 000 rows costs as much as ~100 of these
    products (it is bound by memory traffic, the products by arithmetic), so k of them outweigh the
    ~35 τ values a curve and its refinement need. ``benchmarks/bench_estimates.py --refit`` measures both.
    """

    def __init__(
        self,
        model: ShrinkageModel,
        k: int,
        seed: int,
        cancelled: Callable[[], bool] | None,
        tick: Callable[[], None] | None = None,
    ) -> None:
        self.model = model
        self.cancelled = cancelled
        self.tick = tick  # called after every τ (progress)
        self.folds = _split(model.m, k, seed)
        self.variances = model.released.variances
        rng_ = model._range
        z = model._za - (model._zh * model.table_size if model.table_size is not None else 0.0)
        self._z = z
        # Per fold, the rows of the eigenvectors in the range (their weights d depend on τ) and what
        # the null space contributes (weight 1 at every τ), computed once.
        self._parts = []
        for f in self.folds:
            if cancelled is not None and cancelled():
                raise Cancelled()
            uf = model._U[f]
            a = np.ascontiguousarray(uf[:, rng_])
            nul = uf[:, ~rng_]
            base = nul @ nul.T if nul.shape[1] else None
            self._parts.append((f, a, base, nul @ z[~rng_], nul @ model._zh[~rng_]))

    def terms(self, taus: np.ndarray) -> np.ndarray:
        mdl = self.model
        if np.any(np.isinf(taus)):
            raise DpdeskError("the block method needs finite τ (use method='refit' for τ = inf)")
        _, dmat = shrinkage_factors(taus, mdl._lam2, mdl._range)
        rng_ = mdl._range
        zr, zhr = self._z[rng_], mdl._zh[rng_]
        out = np.empty((mdl.m, taus.size))
        for t in range(taus.size):
            d = dmat[:, t]
            dr = d[rng_]
            sq = np.sqrt(dr)
            if mdl.table_size is None:
                s = float(mdl._zh @ (d * mdl._zh))
                wy = float(mdl._zh @ (d * self._z))
            for f, a, base, pz, ph in self._parts:
                if self.cancelled is not None and self.cancelled():
                    raise Cancelled()
                # upper triangle of (a √d)(a √d)ᵀ; aᵀ is Fortran-ordered, so BLAS reads it without a copy
                M = blas.dsyrk(1.0, (a * sq).T, trans=1)
                if base is not None:
                    M += base
                p = a @ (dr * zr) + pz
                if mdl.table_size is None:
                    w = a @ (dr * zhr) + ph
                    M -= np.outer(w, w) / s
                    p = p - w * wy / s
                res = cho_solve(
                    cho_factor(M, lower=False, overwrite_a=True, check_finite=False), p, check_finite=False
                )
                out[f, t] = res**2 * self.variances[f] - self.variances[f]
            if self.tick is not None:
                self.tick()
        return out


def _folds_for(
    model: ShrinkageModel,
    k: int,
    taus: Sequence[float] | None,
    seed: int,
    method: str,
    refine: bool,
    progress: Callable[[float], None] | None,
    cancelled: Callable[[], bool] | None,
) -> tuple[Any, np.ndarray]:
    """The held-out error terms' source for ``method`` and the τ grid it is evaluated on."""
    if method == "block":
        grid = model.default_taus(25)[:-1] if taus is None else np.asarray(list(taus), dtype=np.float64)
        # progress over the τ evaluations: the grid, then about a dozen for the refinement
        expected, done = grid.size + (_REFINE_EVALUATIONS if refine else 0), [0]

        def tick() -> None:
            done[0] += 1
            if progress is not None:
                progress(min(done[0] / expected, 0.99))

        return _BlockFolds(model, k, seed, cancelled, tick), grid
    if method == "refit":
        grid = model.default_taus(25) if taus is None else np.asarray(list(taus), dtype=np.float64)
        return _RefitFolds(model, k, seed, progress, cancelled), grid
    raise DpdeskError(f"method ({method!r}) must be 'block' or 'refit'")


def _refined(
    folds: Any,
    grid: np.ndarray,
    i: int,
    stats: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]],
    best: tuple[float, float, float],
) -> tuple[float, float, float]:
    """The minimum refined between grid point ``i``'s neighbours by a bounded search on ``log τ``:
    ``(τ, mse, se)``, or ``best`` when the search finds nothing lower."""
    seen: dict[float, np.ndarray] = {}  # the minimiser's last point is usually its answer: reuse it

    def terms_at(log_tau: float) -> np.ndarray:
        if log_tau not in seen:
            seen[log_tau] = folds.terms(np.array([math.exp(log_tau)]))
        return seen[log_tau]

    bounds = (math.log(grid[i - 1]), math.log(grid[i + 1]))
    res = minimize_scalar(
        lambda x: float(terms_at(x).mean()), bounds=bounds, method="bounded", options={"xatol": 1e-3}
    )
    if res.fun >= best[1]:
        return best
    mm, ss = stats(terms_at(float(res.x)))
    return float(math.exp(res.x)), float(mm[0]), float(ss[0])


def cross_validate(
    model: ShrinkageModel,
    *,
    k: int = 5,
    taus: Sequence[float] | None = None,
    seed: int = 0,
    method: str = "block",
    refine: bool = True,
    progress: Callable[[float], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> CVCurve:
    """k-fold CV estimate of the MSE of the shrinkage estimate against τ (seed §3.5, Thm 4).

    Parameters
    ----------
    model : ShrinkageModel
        The model fitted on all released rows (its table size and prior are used for every fold).
    k : int
        Number of folds (the seed uses 5); each row is held out once.
    taus : sequence of float or None
        τ values to try; None: :meth:`ShrinkageModel.default_taus` (finite for ``method="block"``).
    method : {"block", "refit"}
        ``"refit"`` fits one model per training set (the seed's procedure, ``O(k·m³)``); ``"block"``
        gets the same held-out errors from ``model`` (``O(m³/k)`` per τ; finite τ only).
    refine : bool
        Refine the minimum between its grid neighbours by a bounded scalar search on ``log τ``.
    """
    m = model.m
    if not (isinstance(k, int) and k >= 2):
        raise DpdeskError(f"k ({k!r}) must be an integer of at least 2")
    if m < 2 * k:
        raise DpdeskError(
            f"cross-validation needs at least {2 * k} released rows for {k} folds, the history has {m}"
        )
    folds, grid = _folds_for(model, k, taus, seed, method, refine, progress, cancelled)
    if grid.size == 0 or np.any(~(grid > 0)):
        raise DpdeskError("taus must be positive numbers (inf allowed with method='refit')")
    grid = np.sort(grid)
    released = model.released
    fold_of = np.empty(m, dtype=np.int64)
    for f, test in enumerate(_split(m, k, seed)):
        fold_of[test] = f

    def stats(e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # No unbiased estimator of k-fold CV's variance exists (Bengio & Grandvalet 2004): rows held out
        # together share one fit's noise. Report the larger of the i.i.d. and the between-fold standard error.
        iid = e.std(axis=0, ddof=1) / math.sqrt(m)
        means = np.stack([e[fold_of == f].mean(axis=0) for f in range(k)])
        return e.mean(axis=0), np.maximum(iid, means.std(axis=0, ddof=1) / math.sqrt(k))

    e = folds.terms(grid)
    mse, se = stats(e)
    floor_sd = math.sqrt(float(np.sum(released.fourth_moments - released.variances**2))) / m
    ok = np.isfinite(mse)
    if not np.any(ok):
        raise DpdeskError("cross-validation: no τ gives an estimate (declare the table size)")
    i = int(np.nanargmin(np.where(ok, mse, np.nan)))
    best_tau, best_mse, best_se = float(grid[i]), float(mse[i]), float(se[i])
    if refine and 0 < i < grid.size - 1 and math.isfinite(grid[i + 1]):
        best_tau, best_mse, best_se = _refined(folds, grid, i, stats, (best_tau, best_mse, best_se))
    if progress is not None:
        progress(1.0)
    return CVCurve(
        taus=_ro(grid),
        mse=_ro(mse),
        se=_ro(se),
        floor_sd=floor_sd,
        k=k,
        m=m,
        best_tau=best_tau,
        best_mse=best_mse,
        best_se=best_se,
    )
