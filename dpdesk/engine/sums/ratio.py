"""The ratio of two linear estimates, and a mean's interval that keeps its confidence at every table.

A mean is ``μ* = θ_S / θ_C``: a sum over a box over the number of values summed there. History (or a
fresh release) gives two linear estimates from the same released rows, ``Ŝ = θ_S + a·N`` and
``Ĉ = θ_C + c·N`` (``N`` the rows' independent noises, ``a`` and ``c`` the BLUEs' coefficients), so for every
``μ``::

    Ŝ − μĈ = (θ_S − μθ_C) + X(μ),      X(μ) = Σ_k (a_k − μ c_k) N_k,

and at ``μ = μ*`` the first part vanishes: ``Ŝ − μ*Ĉ = X(μ*)``, whose law is known exactly (a sum of
independent Laplace or Gaussian terms — the posterior of a linear query). With ``w(μ)`` the ``1 − δ``
quantile of ``|X(μ)|``, the set ``{μ : |Ŝ − μĈ| ≤ w(μ)}`` (Fieller's construction, with exact laws in
place of normal ones) contains ``μ*`` with probability exactly ``1 − δ`` at every table with
``θ_C > 0`` — and a mean of clamped values lies in ``[L, U]``, so only that range is searched.

The set is found on cells of ``[L, U]`` (docs/sums.md, Theorem 3). A cell ``[l, h]`` is dropped only when
``min_[l,h] |Ŝ − μĈ| > min(w'(l), w'(h)) + (h − l)·q``, where ``w'`` is the quantile at ``δ − η`` and ``q``
the ``1 − η`` quantile of ``|V| = |c·N|``: for ``μ`` in the cell and ``e`` an end,
``|X(μ)| ≤ |X(e)| + (h − l)|V|``, so the ``1 − δ`` quantile of ``|X(μ)|`` is at most that bound and a cell
holding ``μ*`` is never dropped when ``|X(μ*)| ≤ w(μ*)``. Any refinement of the cells keeps this, so
cells are halved where the set's ends are; the interval reported is the hull of the cells kept. It is
never narrower than the set, so its coverage is at least ``1 − δ`` at every table, small counts and
non-positive ``Ĉ`` included; when nothing bounds the mean it is all of ``[L, U]``, said as such.

Quantiles of ``|X(μ)|`` come from :func:`~dpdesk.engine.inference.posterior.posterior` (upper bounds,
its error bound included), or in closed form when ``X(μ)`` has at most two terms of Laplace noise, one
continuous (a fresh mean's sum and count).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.inference.history import Estimate
from dpdesk.engine.inference.posterior import posterior

__all__ = ["MeanInterval", "RatioLaw", "mean_interval"]

MAX_DEPTH = 48  # cells are halved at most this many times (a 2⁻⁴⁸ share of [L, U])
REFINE = 1 / 64  # a cell is fine enough once it is this share of the interval's own half-width
TRUNCATED = 1e-13  # discrete noise's mass left out of a closed-form tail (added to it)


def _laplace_shift_tail(s: float, d: np.ndarray, r: float) -> np.ndarray:
    """``Pr(|s·L + d| > r)`` for a standard Laplace ``L`` and shifts ``d`` (vectorised)."""
    d = np.abs(np.asarray(d, dtype=float))
    out = np.empty_like(d)
    near = d <= r  # ½e^{−(r−d)/s} + ½e^{−(r+d)/s}
    out[near] = 0.5 * (np.exp(-(r - d[near]) / s) + np.exp(-(r + d[near]) / s))
    far = ~near  # 1 − Pr(d − r ≤ sL ≤ d + r) = 1 − ½(e^{−(d−r)/s} − e^{−(d+r)/s})
    out[far] = 1.0 - 0.5 * (np.exp(-(d[far] - r) / s) - np.exp(-(d[far] + r) / s))
    return out


@dataclass(frozen=True)
class _Closed:
    """The tail of ``|s·L + g·K|`` in closed form: ``L`` standard Laplace (``s > 0``), ``K`` Laplace
    of scale ``b`` (``discrete``: on the integers) times ``g ≥ 0`` (``g = 0``: no second term)."""

    s: float
    g: float
    b: float
    discrete: bool

    def tail(self, r: float) -> float:
        s, g, b = self.s, self.g, self.b
        if r <= 0:
            return 1.0
        if g == 0:
            return math.exp(-r / s)
        if not self.discrete:
            t = g * b
            hi, lo = max(s, t), min(s, t)
            if hi - lo <= 1e-4 * hi:  # nearly equal scales: both raised to the larger (a larger tail)
                return (1 + r / (2 * hi)) * math.exp(-r / hi)
            return (hi * hi * math.exp(-r / hi) - lo * lo * math.exp(-r / lo)) / (hi * hi - lo * lo) + 1e-15
        shifts, mass = self._atoms
        return float(mass @ _laplace_shift_tail(s, shifts, r)) + TRUNCATED + 1e-15

    @cached_property
    def _atoms(self) -> tuple[np.ndarray, np.ndarray]:
        """The discrete term's atoms ``g·k`` and masses, ``|k|`` up to where the rest is below TRUNCATED."""
        p = math.exp(-1.0 / self.b)
        kmax = math.ceil(self.b * math.log(2.0 / (TRUNCATED * (1 + p)))) + 1
        k = np.arange(-kmax, kmax + 1)
        return self.g * k, (1 - p) / (1 + p) * p ** np.abs(k)

    def radius(self, level: float) -> float:
        """The smallest ``r`` (to a relative 1e-12, from above) with ``tail(r) ≤ level``."""
        hi = (self.s + self.g * self.b) * max(1.0, math.log(2.0 / level)) * 2 + 1e-300
        while self.tail(hi) > level:
            hi *= 2.0
        lo = 0.0
        while hi - lo > 1e-12 * hi:
            mid = 0.5 * (lo + hi)
            if self.tail(mid) > level:
                lo = mid
            else:
                hi = mid
        return hi


@dataclass
class RatioLaw:
    """The noise of two linear estimates from the same rows: ``Ŝ − θ_S = a·N``, ``Ĉ − θ_C = c·N``.

    ``scales`` and ``families`` are the rows' noise (history's). Everything here is public: it depends
    on which rows were released and how, never on their values.
    """

    a: np.ndarray
    c: np.ndarray
    scales: np.ndarray
    families: tuple[str, ...]
    method: str = "fft"
    _widths: dict[tuple[float, float], float] = field(default_factory=dict, repr=False)
    _radii: dict[tuple[bytes, float], float] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, total: Estimate, size: Estimate, method: str = "fft") -> RatioLaw:
        """The law of two estimates a History gave (both estimable, from the same history)."""
        if not (total.estimable and size.estimable):
            raise DpdeskError("a ratio needs both of its estimates from history")
        assert total.coefficients is not None and size.coefficients is not None
        assert total.noise_scales is not None
        if total.coefficients.shape != size.coefficients.shape:
            raise DpdeskError("a ratio's two estimates must come from the same history")
        return cls(
            np.asarray(total.coefficients, dtype=float),
            np.asarray(size.coefficients, dtype=float),
            np.asarray(total.noise_scales, dtype=float),
            tuple(total.families),
        )

    def _closed(self, v: np.ndarray) -> _Closed | None:
        nz = np.flatnonzero(v)
        fams = [self.families[k] for k in nz]
        if not 1 <= nz.size <= 2 or "laplace" not in fams or not set(fams) <= {"laplace", "discrete_laplace"}:
            return None
        first = nz[fams.index("laplace")]
        s = abs(float(v[first])) * float(self.scales[first])
        if nz.size == 1:
            return _Closed(s, 0.0, 1.0, False)
        other = int(nz[0] if nz[1] == first else nz[1])
        return _Closed(
            s, abs(float(v[other])), float(self.scales[other]), self.families[other] == "discrete_laplace"
        )

    def radius(self, v: np.ndarray, level: float) -> float:
        """An upper bound of the ``1 − level`` quantile of ``|v·N|``: ``Pr(|v·N| > radius) ≤ level``."""
        v = np.asarray(v, dtype=float)
        if not np.any(v):
            return 0.0
        key = (v.tobytes(), float(level))
        r = self._radii.get(key)
        if r is None:
            closed = self._closed(v)
            if closed is not None:
                r = closed.radius(level)
            else:
                post = posterior(0.0, v, self.scales, list(self.families), method=self.method)
                r = float(post.interval(level).high)
            self._radii[key] = r
        return r

    def tail(self, v: np.ndarray, r: float) -> float:
        """An upper bound of ``Pr(|v·N| > r)``."""
        v = np.asarray(v, dtype=float)
        if not np.any(v):
            return 0.0 if r >= 0 else 1.0
        if r <= 0:
            return 1.0
        closed = self._closed(v)
        if closed is not None:
            return min(1.0, closed.tail(r))
        post = posterior(0.0, v, self.scales, list(self.families), method=self.method, align=r)
        return min(1.0, max(0.0, 1.0 - post.central_mass(r) + post.error_bound))

    def width(self, mu: float, level: float) -> float:
        """An upper bound of the ``1 − level`` quantile of ``|X(μ)| = |(a − μc)·N|`` (kept: public)."""
        key = (float(mu), float(level))
        w = self._widths.get(key)
        if w is None:
            w = self._widths[key] = self.radius(self.a - mu * self.c, level)
        return w


@dataclass(frozen=True)
class MeanInterval:
    """A mean's estimate and its interval at ``confidence``, which holds at every table.

    ``estimate`` is ``Ŝ/Ĉ`` moved into ``[lower, upper]`` (None when ``Ĉ ≤ 0``: no ratio to read). ``low``
    and ``high`` hold the set ``{μ : |Ŝ − μĈ| ≤ w(μ)}`` within ``[lower, upper]``; ``bounded_below`` /
    ``bounded_above`` are False where the set reaches the measure's bound (nothing was learnt beyond the
    range there). ``empty`` says the set holds no mean at all — which happens with probability at most
    ``1 − confidence``; the interval is then the point nearest ``Ŝ/Ĉ``.
    """

    estimate: float | None
    low: float
    high: float
    confidence: float
    total: float
    size: float
    lower: float
    upper: float
    empty: bool = False

    @property
    def bounded_below(self) -> bool:
        return self.low > self.lower

    @property
    def bounded_above(self) -> bool:
        return self.high < self.upper

    @property
    def informative(self) -> bool:
        """False when the interval is the whole range ``[lower, upper]``."""
        return self.bounded_below or self.bounded_above


def mean_interval(
    law: RatioLaw,
    total: float,
    size: float,
    delta: float,
    lower: float,
    upper: float,
    *,
    eta: float | None = None,
) -> MeanInterval:
    """The interval of ``μ* = θ_S/θ_C`` from the estimates ``total = Ŝ`` and ``size = Ĉ`` whose noise is
    ``law``, holding ``1 − δ`` at every table (module docstring; docs/sums.md Theorem 3).

    ``eta`` (default ``δ/20``) is the share of δ spent on bounding ``|X|`` between a cell's ends: a
    smaller one gives a set closer to the exact one on coarse cells, at more halvings.

    Examples
    --------
    >>> law = RatioLaw(np.array([1.0, 0.0]), np.array([0.0, 1.0]), np.array([50.0, 2.0]),
    ...                ("laplace", "discrete_laplace"))
    >>> iv = mean_interval(law, 2100.0, 100.0, 0.05, 0.0, 100.0)
    >>> iv.estimate, iv.low < 21 < iv.high, iv.informative
    (21.0, True, True)
    """
    if not 0 < delta < 1:
        raise DpdeskError(f"delta ({delta}) must be in (0, 1)")
    if not (math.isfinite(lower) and math.isfinite(upper) and lower < upper):
        raise DpdeskError(f"the mean's range [{lower}, {upper}] must be finite with lower < upper")
    eta = delta / 20 if eta is None else float(eta)
    if not 0 < eta < delta:
        raise DpdeskError(f"eta ({eta}) must be in (0, delta)")
    level = delta - eta
    q = law.radius(law.c, eta)
    ratio = total / size if size > 0 else None
    estimate = None if ratio is None else min(max(ratio, lower), upper)
    mid = 0.5 * (lower + upper) if estimate is None else estimate
    scale = law.width(mid, level) / size if size > 0 else upper - lower
    tol = max(REFINE * scale, (upper - lower) * 2.0**-MAX_DEPTH)

    def dropped(lo: float, hi: float) -> bool:
        f_lo, f_hi = total - lo * size, total - hi * size
        gap = 0.0 if f_lo * f_hi <= 0 else min(abs(f_lo), abs(f_hi))
        return gap > min(law.width(lo, level), law.width(hi, level)) + (hi - lo) * q

    def first_kept(lo: float, hi: float, depth: int, leftmost: bool) -> tuple[float, float] | None:
        if dropped(lo, hi):
            return None
        if hi - lo <= tol or depth >= MAX_DEPTH:
            return lo, hi
        mid_ = 0.5 * (lo + hi)
        halves = ((lo, mid_), (mid_, hi)) if leftmost else ((mid_, hi), (lo, mid_))
        for a, b in halves:
            kept = first_kept(a, b, depth + 1, leftmost)
            if kept is not None:
                return kept
        return None

    left = first_kept(lower, upper, 0, True)
    if left is None:
        point = mid
        return MeanInterval(estimate, point, point, 1 - delta, total, size, lower, upper, empty=True)
    right = first_kept(lower, upper, 0, False)
    assert right is not None  # the left cell is kept, so a rightmost one exists
    return MeanInterval(estimate, left[0], right[1], 1 - delta, total, size, lower, upper)
