"""Kernel-PCA shrinkage: biased estimates of any query from released answers, at no privacy cost.

The Chen–Zhou–Bhowmick seed §3. Whiten the released rows by their noise standard deviations and
eigen-decompose their Gram matrix ``G = D K D = U Λ² Uᵀ`` (``K`` from
:func:`dpdesk.engine.estimates.kernel.gram`, never an n-vector). The eigen-queries
``v_j = λ_j⁻¹ Σ_i U_ij q_i / σ_i`` are orthonormal, their least-squares answers ``z_j`` have
uncorrelated errors of variance ``1/λ_j²``, and a target ``q`` with coordinates ``c_j = ⟨q, v_j⟩`` is
estimated by ``Σ_j y_j c_j z_j`` with the shrinkage weights ``y_j = τ²/(τ² + 1/λ_j²)`` (seed Thm 3).
That is exactly the posterior mean of ``q·x`` under a Gaussian prior ``x ~ N(n·p0, τ² diag(p0))`` with
the table size known, so τ is in answer units per unit of prior-weighted norm; ``τ → ∞`` gives the
BLUE, ``τ → 0`` gives ``n · Σ_t p0(t) q_t``.

The universal query ``u`` (seed §3.1, ``λ = ∞``) is handled exactly: with a declared public table size
``n`` every row is reduced to its part orthogonal to ``u`` (answers ``a_i − n⟨q_i, u⟩``); without one,
the coefficient of ``u`` gets a flat prior and is estimated by generalised least squares from the
released rows (a released total count is the natural source) — never read off the data.

Estimates are biased for any finite τ: they never meet a request's (ε, δ) and are not presented so.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from dpdesk.engine.errors import Cancelled, DpdeskError
from dpdesk.engine.estimates.kernel import AnyQuery, QueryStack, check_prior, gram, universal
from dpdesk.engine.estimates.released import Released

__all__ = ["ESTIMABLE_TOL", "ShrinkageEstimate", "ShrinkageModel", "shrinkage_factors"]

# Eigenvalues below this fraction of the largest are the history's null space (dependent rows).
_RANK_TOL = 1e-11
# A target whose squared distance from the released rows' span is below this fraction of its squared
# norm is estimable (its τ → ∞ estimate is the BLUE).
ESTIMABLE_TOL = 1e-8


def _ro(a: np.ndarray) -> np.ndarray:
    a = np.array(a, dtype=np.float64, copy=True)
    a.setflags(write=False)
    return a


def _check(cancelled: Callable[[], bool] | None) -> None:
    if cancelled is not None and cancelled():
        raise Cancelled()


def shrinkage_factors(
    taus: np.ndarray, lam2: np.ndarray, in_range: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per eigen-query and τ (arrays ``r × T``): ``g = τ²/(τ²λ² + 1)`` and ``d = 1/(τ²λ² + 1)``.

    The seed's weight is ``y = g λ²``; ``τ = inf`` gives ``g = 1/λ²`` (the BLUE). Null-space directions
    get ``g = 0`` (they carry no query) and ``d = 1`` (their answers are pure noise around ``u``'s).
    """
    t2 = np.atleast_1d(np.asarray(taus, dtype=np.float64))[None, :] ** 2
    lam2 = np.where(in_range, lam2, 0.0)[:, None]
    with np.errstate(over="ignore", invalid="ignore"):
        prod = t2 * lam2
        d = np.where(np.isinf(t2), 0.0, 1.0 / (prod + 1.0))
        g = np.where(np.isinf(t2), 1.0 / np.where(lam2 > 0, lam2, 1.0), t2 * d)
    g = np.where(in_range[:, None], g, 0.0)
    d = np.where(in_range[:, None], d, 1.0)
    return g, d


@dataclass(frozen=True)
class ShrinkageEstimate:
    """A zero-cost, **biased** estimate of one query (seed Thm 3) at shrinkage τ.

    ``value = Σ_i coefficients_i · answer_i + offset``; ``noise_std`` is the standard deviation its
    released noise contributes (its bias is unknown and excluded: this is no confidence statement).
    ``distance`` is the target's relative distance from the span of the released rows (0: estimable).
    """

    value: float
    tau: float
    noise_std: float
    distance: float
    coefficients: np.ndarray
    offset: float

    @property
    def estimable(self) -> bool:
        return self.distance * self.distance <= ESTIMABLE_TOL


class ShrinkageModel:
    """The eigen-decomposition of released rows, ready to estimate any query at any τ.

    Build it with :meth:`fit`; :meth:`estimate` then costs one row of inner products and ``O(m·r)``.

    Examples
    --------
    >>> import numpy as np
    >>> from dpdesk.engine.queries.query import query_from_vector
    >>> rows = Released.laplace((2,), [query_from_vector([1, 0], (2,))], [30.0], 1.0)
    >>> model = ShrinkageModel.fit(rows, table_size=50.0)
    >>> round(model.estimate(query_from_vector([0, 1], (2,)), math.inf).value, 6)
    20.0
    """

    shape: tuple[int, ...]
    prior: tuple[np.ndarray, ...]
    table_size: float | None
    released: Released
    _stack: QueryStack
    _u: QueryStack
    _h: np.ndarray  # the rows' inner products with the universal query
    _d: np.ndarray  # 1/σ per row (whitening)
    _lam2: np.ndarray  # eigenvalues, 0 outside the range
    _range: np.ndarray  # bool: which eigenvectors span the rows' range
    _U: np.ndarray
    _za: np.ndarray
    _zh: np.ndarray

    def __init__(self) -> None:  # use fit()
        raise TypeError("use ShrinkageModel.fit(released, ...)")

    @classmethod
    def fit(
        cls,
        released: Released,
        *,
        table_size: float | None = None,
        prior: Sequence[np.ndarray] | None = None,
        progress: Callable[[float], None] | None = None,
        cancelled: Callable[[], bool] | None = None,
        _kernel: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> ShrinkageModel:
        """Eigen-decompose the released rows' whitened Gram matrix (seed §3.1–3.2, O(m²·Σ|A_d| + m³)).

        Parameters
        ----------
        released : Released
            The rows to integrate.
        table_size : float or None
            The curator's declared public table size ``n`` (exact), or None to estimate the universal
            query's answer from the released rows themselves.
        prior : sequence of ndarray or None
            Per-attribute probability vectors ``p0`` (seed §3.4); None is uniform.
        """
        if len(released) == 0:
            raise DpdeskError("shrinkage estimate: the history has no released rows to integrate")
        if table_size is not None and not (math.isfinite(table_size) and table_size > 0):
            raise DpdeskError(f"table_size ({table_size!r}) must be a positive finite number")
        self = object.__new__(cls)
        self.shape = released.shape
        self.prior = check_prior(prior, self.shape)
        self.table_size = None if table_size is None else float(table_size)
        self.released = released
        self._stack = QueryStack(released.queries, self.shape)
        self._u = QueryStack([universal(self.shape)], self.shape)
        if _kernel is None:
            K = gram(self._stack, self._stack, self.prior)
            h = gram(self._stack, self._u, self.prior)[:, 0]
        else:
            K, h = _kernel
        _check(cancelled)
        if progress is not None:
            progress(0.3)
        self._h = h
        self._d = 1.0 / np.sqrt(released.variances)
        Kp = K - np.outer(h, h)
        G = self._d[:, None] * Kp * self._d[None, :]
        lam2, U = np.linalg.eigh((G + G.T) * 0.5)
        _check(cancelled)
        top = max(float(lam2[-1]), 0.0)
        keep = lam2 > _RANK_TOL * top if top > 0 else np.zeros(lam2.size, dtype=bool)
        self._lam2 = np.where(keep, lam2, 0.0)
        self._range = keep
        self._U = U
        a = released.answers
        self._za = U.T @ (self._d * a)
        self._zh = U.T @ (self._d * h)
        if progress is not None:
            progress(1.0)
        return self

    # ------------------------------------------------------------------ properties

    @property
    def m(self) -> int:
        return len(self.released)

    @property
    def rank(self) -> int:
        return int(np.count_nonzero(self._range))

    @property
    def eigenvalues(self) -> np.ndarray:
        """``λ_j²`` of the eigen-queries orthogonal to ``u``, descending (read-only)."""
        return _ro(np.sort(self._lam2[self._range])[::-1])

    def default_taus(self, points: int = 49) -> np.ndarray:
        """A log-spaced τ grid spanning the eigenvalues' range (then ``inf``, the BLUE)."""
        lam = np.sqrt(self._lam2[self._range])
        if lam.size == 0:
            return np.array([1.0, math.inf])
        lo, hi = 0.01 / float(lam.max()), 100.0 / float(np.quantile(lam, 0.1))
        return np.append(np.geomspace(lo, max(hi, 10 * lo), points), math.inf)

    # ------------------------------------------------------------------ estimation

    def _targets(self, queries: Sequence[AnyQuery]) -> tuple[np.ndarray, np.ndarray]:
        ts = QueryStack(list(queries), self.shape)
        k = gram(ts, self._stack, self.prior)
        hq = gram(ts, self._u, self.prior)[:, 0]
        return self.coordinates(k, hq), hq

    def _beta(self, d: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """The universal query's answer per τ: declared, or its GLS estimate ``Σ d zh za / Σ d zh²``."""
        if self.table_size is not None:
            return np.full(d.shape[1], self.table_size), None
        s = np.sum(d * self._zh[:, None] ** 2, axis=0)
        # NaN where the released rows cannot pin the total down (only possible at τ = inf)
        s = np.where(s > 1e-12 * np.sum(self._zh**2), s, np.nan)
        beta = np.sum(d * (self._zh * self._za)[:, None], axis=0) / s
        return beta, d / s[None, :]

    def coordinates(self, k: np.ndarray, hq: np.ndarray) -> np.ndarray:
        """Targets' whitened eigen-coordinates from their inner products with the rows (``T × m``) and ``u``."""
        c: np.ndarray = (k - np.outer(hq, self._h)) * self._d[None, :] @ self._U
        c[:, ~self._range] = 0.0  # the null space carries no query (its combinations are 0)
        return c

    def estimate_many(self, queries: Sequence[AnyQuery], taus: Sequence[float]) -> np.ndarray:
        """Estimates of many queries at many τ: an array ``len(queries) × len(taus)``."""
        c, hq = self._targets(queries)
        return self.predict(c, hq, taus)

    def predict(self, c: np.ndarray, hq: np.ndarray, taus: Sequence[float] | np.ndarray) -> np.ndarray:
        """Estimates from eigen-coordinates ``c`` (see :meth:`coordinates`): ``len(c) × len(taus)``."""
        g, d = shrinkage_factors(np.asarray(taus, dtype=float), self._lam2, self._range)
        beta, _ = self._beta(d)
        # Σ_j g_j c_j (za_j − zh_j β)
        out: np.ndarray = c @ (g * self._za[:, None]) - (c @ (g * self._zh[:, None])) * beta[None, :]
        out += hq[:, None] * beta[None, :]
        return out

    def noise_std_many(self, queries: Sequence[AnyQuery], taus: Sequence[float]) -> np.ndarray:
        """The released noise's standard deviation in each estimate (``len(queries) × len(taus)``).

        The same number as :attr:`ShrinkageEstimate.noise_std`, for many queries at once.
        """
        c, hq = self._targets(queries)
        g, d = shrinkage_factors(np.asarray(taus, dtype=float), self._lam2, self._range)
        _, dscaled = self._beta(d)
        out = np.empty((c.shape[0], g.shape[1]))
        for t in range(g.shape[1]):
            w = c * g[:, t][None, :]
            if dscaled is not None:
                kappa = hq - w @ self._zh
                w = w + kappa[:, None] * (dscaled[:, t] * self._zh)[None, :]
            out[:, t] = np.linalg.norm(w, axis=1)
        return out

    def estimate(self, query: AnyQuery, tau: float) -> ShrinkageEstimate:
        """The seed's Thm 3 estimate of one query at shrinkage ``tau`` (``math.inf``: the BLUE)."""
        if not (tau > 0):
            raise DpdeskError(f"tau ({tau!r}) must be positive (math.inf gives the unbiased estimate)")
        c, hq = self._targets([query])
        c, hq0 = c[0], float(hq[0])
        g2, d2 = shrinkage_factors(np.array([tau]), self._lam2, self._range)
        g = g2[:, 0]
        beta_arr, dscaled = self._beta(d2)
        beta = float(beta_arr[0])
        if math.isnan(beta):
            raise DpdeskError("shrinkage estimate: no table size declared and the history cannot estimate it")
        w = g * c  # coefficient vector in the whitened eigenbasis
        if dscaled is not None:
            kappa = hq0 - float(np.sum(w * self._zh))
            w = w + kappa * dscaled[:, 0] * self._zh
        coef = self._d * (self._U @ w)
        value = float(np.sum(g * c * (self._za - self._zh * beta)) + hq0 * beta)
        offset = value - float(coef @ self.released.answers)
        qq = gram(QueryStack([query], self.shape), QueryStack([query], self.shape), self.prior)[0, 0]
        proj = float(np.sum(c[self._range] ** 2 / self._lam2[self._range]))
        dist2 = max(qq - hq0 * hq0 - proj, 0.0) / qq if qq > 0 else 0.0
        return ShrinkageEstimate(
            value=value,
            tau=float(tau),
            noise_std=float(np.linalg.norm(w)),
            distance=math.sqrt(dist2),
            coefficients=_ro(coef),
            offset=offset,
        )
