"""A mean's ``±a at c %``: what it assumes about the count, whether history meets it, and its price.

A count's accuracy holds at every table; a mean's cannot: with one value in the box, no release of
bounded noise pins ``θ_S/θ_C`` to ``±a``. So a mean's requirement states an assumption about the box,
**at least ``N`` values** (``min_count``), declared by the curator (or read off a released count's lower
bound, :func:`count_floor`) — never read off the data. The guarantee is then: at every table whose box
holds at least ``N`` values, ``Pr(|μ̂ − μ*| ≤ a) ≥ 1 − δ``, with ``μ̂`` the ratio of the two estimates moved
into ``[L, U]`` (docs/sums.md, Theorem 4). Beside it the mean's interval of :mod:`~.ratio` holds its
confidence at every table, whatever the count.

Why it holds: with ``V = Ĉ − θ_C`` and ``X(μ) = Ŝ − θ_S − μV`` (:mod:`~.ratio`), for any ``t < N`` the
events ``|X(μ*)| ≤ a(N − t)`` and ``V ≥ −t`` give ``Ĉ ≥ N − t > 0`` and ``|Ŝ/Ĉ − μ*| = |X(μ*)|/Ĉ ≤ a``;
moving ``Ŝ/Ĉ`` into ``[L, U]``, where ``μ*`` lies, only brings it closer. So the failure is at most
``sup_μ Pr(|X(μ)| > a(N − t)) + Pr(V < −t)``, minimised over ``t``. The supremum over ``μ ∈ [L, U]``:

- when the sum and the count come from two separate releases (a fresh mean: ``X(μ) = N_S − μN_C``, the
  sum's noise continuous Laplace), ``Pr(|X(μ)| > r)`` grows with ``|μ|`` (``N_S`` is symmetric and
  unimodal, so ``Pr(|N_S − d| ≤ r)`` falls as ``|d|`` grows, and ``|μN_C|`` grows stochastically with
  ``|μ|``): it is reached at ``μ = ±max(|L|, |U|)``;
- otherwise on a grid ``μ_i`` of step ``h``: for ``μ`` within ``h`` of ``μ_i``, ``|X(μ)| ≤ |X(μ_i)| + h|V|``,
  so ``Pr(|X(μ)| > r) ≤ Pr(|X(μ_i)| > r − ht) + Pr(|V| > t)`` and the bound uses ``|V| ≤ t`` for both.

The price of a fresh mean releases the box's sum (Laplace) and its count of values (discrete Laplace)
with budgets ``α_S + α_C`` on every cell of the box (both charge the same cells), the smallest total whose
failure bound is at most δ.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dpdesk.engine.errors import BudgetError, DpdeskError
from dpdesk.engine.inference.posterior import posterior
from dpdesk.engine.sums.ratio import RatioLaw, _Closed

__all__ = ["FreshMean", "MeanAccuracy", "count_floor", "fresh_mean", "history_failure"]

GRID = 32  # μ-grid cells over [L, U] for a history whose sum and count share rows
_GOLD = (math.sqrt(5) - 1) / 2


@dataclass(frozen=True)
class MeanAccuracy:
    """``±half_width`` at ``1 − delta``, assuming at least ``min_count`` values in the box."""

    half_width: float
    delta: float
    min_count: float

    def __post_init__(self) -> None:
        a, d, n = self.half_width, self.delta, self.min_count
        if not (isinstance(a, (int, float)) and math.isfinite(a) and a > 0):
            raise BudgetError(f"a mean's ±a ({a!r}) must be a positive number")
        if not (isinstance(d, (int, float)) and 0 < d < 1):
            raise BudgetError(f"delta ({d!r}) must be strictly between 0 and 1")
        if not (isinstance(n, (int, float)) and math.isfinite(n) and n >= 1):
            raise BudgetError(
                f"a mean's accuracy assumes at least N values in the box: N ({n!r}) must be a number ≥ 1"
            )

    def assumption(self) -> str:
        """The assumption in the curator's words."""
        n = int(self.min_count) if float(self.min_count).is_integer() else self.min_count
        return f"assuming at least {n} values in the box"


def _min_over(f: Callable[[float], float], lo: float, hi: float, grid: int = 16) -> float:
    """The smallest value of ``f`` found on a grid of ``[lo, hi]`` then by golden section around it (any
    point's value is a valid bound; the search only makes it tighter)."""
    xs = np.linspace(lo, hi, grid + 1)
    vals = [f(float(x)) for x in xs]
    k = int(np.argmin(vals))
    a, b = float(xs[max(k - 1, 0)]), float(xs[min(k + 1, grid)])
    best = vals[k]
    for _ in range(14):
        c, d = b - _GOLD * (b - a), a + _GOLD * (b - a)
        fc, fd = f(c), f(d)
        best = min(best, fc, fd)
        if fc <= fd:
            b = d
        else:
            a = c
    return best


def _separate(law: RatioLaw) -> tuple[int, int] | None:
    """``(k_S, k_C)`` when the sum and the count each read one row of their own, the sum's continuous."""
    sa, sc = np.flatnonzero(law.a), np.flatnonzero(law.c)
    if sa.size == 1 and sc.size == 1 and sa[0] != sc[0] and law.families[int(sa[0])] == "laplace":
        return int(sa[0]), int(sc[0])
    return None


def history_failure(law: RatioLaw, req: MeanAccuracy, lower: float, upper: float) -> float:
    """An upper bound of ``Pr(|μ̂ − μ*| > a)`` over every table whose box holds at least ``N`` values, for
    estimates with noise ``law`` (module docstring). Public inputs only."""
    a, n = req.half_width, req.min_count
    reach = max(abs(lower), abs(upper))
    if _separate(law) is not None:
        x = law.a - reach * law.c
        return min(
            1.0, _min_over(lambda t: law.tail(x, a * (n - t)) + 0.5 * law.tail(law.c, t), 0.0, n * (1 - 1e-9))
        )
    h = (upper - lower) / GRID
    readers = [_reader(law, law.a - mu * law.c) for mu in np.linspace(lower, upper, GRID + 1)]
    size = _reader(law, law.c)

    def failure(t: float) -> float:
        r = a * (n - t) - h * t
        return max(tail(r) for tail in readers) + size(t) if r > 0 else 1.0

    return min(1.0, _min_over(failure, 0.0, n * (1 - 1e-9)))


def _reader(law: RatioLaw, v: np.ndarray) -> Callable[[float], float]:
    """``r ↦`` an upper bound of ``Pr(|v·N| > r)``, the law computed once."""
    closed = law._closed(v)
    if closed is not None:
        return lambda r: min(1.0, closed.tail(r))
    if not np.any(v):
        return lambda r: 0.0 if r >= 0 else 1.0
    post = posterior(0.0, v, law.scales, list(law.families), method=law.method)
    return lambda r: 1.0 if r <= 0 else min(1.0, max(0.0, 1.0 - post.central_mass(r) + post.error_bound))


def count_floor(count: float, law: RatioLaw, delta: float) -> float:
    """``N`` read off a released count: ``Ĉ − q`` with ``Pr(Ĉ − θ_C > q) ≤ δ``, so ``θ_C ≥ N`` but with
    probability ``δ``; a mean's guarantee built on it holds at ``1 − δ_mean − δ`` (the union of both)."""
    q = law.radius(law.c, 2 * delta)  # the noise is symmetric: one side of a two-sided 1 − 2δ radius
    return math.floor(count - q)


@dataclass(frozen=True)
class FreshMean:
    """A fresh mean's price: a sum at ``alpha_sum`` and a count of values at ``alpha_count`` (each cell of
    the box pays both), and the failure bound they reach under the requirement's assumption."""

    alpha_sum: float
    alpha_count: float
    failure: float
    count_family: str

    @property
    def alpha(self) -> float:
        return self.alpha_sum + self.alpha_count


def _fresh_failure(
    a_s: float, a_c: float, bound: float, reach: float, req: MeanAccuracy, discrete: bool
) -> float:
    law = _Closed(bound / a_s, reach, 1.0 / a_c, discrete)
    n, a = req.min_count, req.half_width
    if discrete:  # K < −t is K ≤ −⌊t⌋−1: integer t is best
        p = math.exp(-a_c)

        def at(j: float) -> float:
            t = math.floor(j)
            return law.tail(a * (n - t)) + p ** (t + 1) / (1 + p)

    else:

        def at(j: float) -> float:
            return law.tail(a * (n - j)) + 0.5 * math.exp(-j * a_c)

    return min(1.0, _min_over(at, 0.0, n * (1 - 1e-9)))


def fresh_mean(
    bound: float, lower: float, upper: float, req: MeanAccuracy, count_family: str = "discrete_laplace"
) -> FreshMean:
    """The cheapest fresh mean meeting ``req``: a sum of sensitivity ``bound`` (the measure's
    ``max(|L|, |U|)``) with Laplace noise and a count of values with ``count_family`` noise.

    The total ``α_S + α_C`` is searched by bisection (the failure falls as both grow), its split by golden
    section at each total. Raises BudgetError when even α = 10⁶ cannot meet it (``±a`` below what ``N``
    values allow).

    Examples
    --------
    >>> price = fresh_mean(100.0, 0.0, 100.0, MeanAccuracy(5.0, 0.05, 200))
    >>> price.failure <= 0.05, round(price.alpha, 2)
    (True, 0.88)
    """
    if count_family not in ("laplace", "discrete_laplace"):
        raise DpdeskError(f"a fresh mean's count is released with Laplace noise, not {count_family!r}")
    discrete = count_family == "discrete_laplace"
    reach = max(abs(lower), abs(upper))

    def best_split(total: float) -> tuple[float, float]:
        def fail(share: float) -> float:
            return _fresh_failure(total * share, total * (1 - share), bound, reach, req, discrete)

        lo, hi = 0.02, 0.98
        for _ in range(14):
            c, d = hi - _GOLD * (hi - lo), lo + _GOLD * (hi - lo)
            if fail(c) <= fail(d):
                hi = d
            else:
                lo = c
        share = 0.5 * (lo + hi)
        return fail(share), share

    hi = 1.0
    while best_split(hi)[0] > req.delta:
        hi *= 2.0
        if hi > 1e6:
            raise BudgetError(
                f"no fresh mean meets ±{req.half_width:g} at {1 - req.delta:.0%} {req.assumption()}"
            )
    lo = 0.0
    while hi - lo > 1e-3 * hi:  # α to 0.1 %: what a curator reads
        mid = 0.5 * (lo + hi)
        if best_split(mid)[0] > req.delta:
            lo = mid
        else:
            hi = mid
    failure, share = best_split(hi)
    return FreshMean(hi * share, hi * (1 - share), failure, count_family)
