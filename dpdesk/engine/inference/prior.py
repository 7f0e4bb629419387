"""Priors the curator knows: counts are non-negative and bounded by the table size (DESIGN §2).

With a table of at most ``N`` records (public only if the curator declares it), ``x ≥ 0`` and
``Σ x ≤ N``, so ``θ = Q·x`` lies in ``[N·min(0, min Q), N·max(0, max Q)]``. A flat prior on that
interval turns the flat-prior posterior (:mod:`dpdesk.engine.inference.posterior`) into the same posterior
truncated to the bounds and renormalised. The truncated posterior is no longer symmetric, so its
intervals are *highest-density* intervals (bins collected by decreasing density until ``1 − δ``), and
the best interval of a given width is found by scanning the grid, not by centring on ``θ̂``.

A truncated posterior is exactly calibrated in the Bayesian sense — averaged over truths drawn from
the prior — not at every fixed truth (near a bound it over- or under-covers a little). The engine uses
it only when the curator enables it; budgets (Thm 5.3 and the fused α) never depend on it, since the
truncation depends on the not-yet-drawn answer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.inference.posterior import CredibleInterval, Posterior
from dpdesk.engine.queries.query import Query

__all__ = ["BoundedPrior", "TruncatedPosterior", "truncate", "query_bounds"]


def query_bounds(query: Query, table_size: float) -> tuple[float, float]:
    """``[N·min(0, min Q), N·max(0, max Q)]``: the range of ``Q·x`` over ``x ≥ 0``, ``Σx ≤ N``."""
    _, values = query.sparse()
    lo = table_size * min(0.0, float(values.min()))
    hi = table_size * max(0.0, float(values.max()))
    return lo, hi


@dataclass(frozen=True)
class BoundedPrior:
    """Flat prior on the answers a table of at most ``table_size`` records allows.

    Examples
    --------
    >>> from dpdesk.engine.queries.query import query_from_vector
    >>> BoundedPrior(100).bounds(query_from_vector([1, 0, 2], (3,)))
    (0.0, 200.0)
    """

    table_size: float

    def __post_init__(self) -> None:
        n = self.table_size
        if isinstance(n, bool) or not isinstance(n, (int, float)) or not math.isfinite(n) or n <= 0:
            raise DpdeskError(f"table_size ({n!r}) must be a positive finite number")

    def bounds(self, query: Query) -> tuple[float, float]:
        return query_bounds(query, float(self.table_size))

    def describe(self, query: Query | None = None) -> str:
        if query is None:
            return f"bounded (table size {self.table_size:g})"
        lo, hi = self.bounds(query)
        return f"bounded [{lo:g}, {hi:g}]"


@dataclass(frozen=True)
class TruncatedPosterior:
    """A flat-prior :class:`Posterior` truncated to ``[low_bound, high_bound]`` and renormalised.

    Offers the same reading methods as :class:`Posterior`; :meth:`interval` returns the highest-density
    interval and :meth:`best_window` the interval of a given width holding the most mass.
    """

    base: Posterior
    low_bound: float
    high_bound: float
    grid: np.ndarray = field(repr=False)
    mass: np.ndarray = field(repr=False)
    edges: np.ndarray = field(repr=False)  # len(grid)+1 clipped bin edges (continuous); unused on a lattice
    kept: float  # base mass inside the bounds (before renormalising)

    @property
    def lattice(self) -> bool:
        return self.base.lattice

    @property
    def spacing(self) -> float:
        return self.base.spacing

    @property
    def method(self) -> str:
        return self.base.method

    @property
    def center(self) -> float:
        """The mode: ``θ̂`` clipped to the bounds (the base posterior is unimodal about ``θ̂``)."""
        return min(max(self.base.center, self.low_bound), self.high_bound)

    @property
    def error_bound(self) -> float:
        return self.base.error_bound / max(self.kept, 1e-300)

    @property
    def total(self) -> float:
        return float(self.mass.sum())

    @property
    def mean(self) -> float:
        if self.lattice:
            return float(self.grid @ self.mass)
        mids = (self.edges[:-1] + self.edges[1:]) / 2
        return float(mids @ self.mass)

    @property
    def std(self) -> float:
        if self.lattice:
            return math.sqrt(max(float(((self.grid - self.mean) ** 2) @ self.mass), 0.0))
        a, b = self.edges[:-1], self.edges[1:]
        m = self.mean
        second = (a * a + a * b + b * b) / 3  # E[X²] of a uniform bin
        return math.sqrt(max(float(second @ self.mass) - m * m, 0.0))

    # -- reading ---------------------------------------------------------------------------------
    def _tol(self) -> float:
        return 1e-9 * self.spacing + 4 * np.finfo(float).eps * abs(self.base.center)

    def _cum(self) -> np.ndarray:
        return np.concatenate([[0.0], np.cumsum(self.mass)])

    def cdf(self, x: float) -> float:
        """``Pr(θ ≤ x)``."""
        cum = self._cum()
        if self.lattice:
            return float(cum[np.searchsorted(self.grid, x + self._tol(), side="right")])
        return float(np.interp(x, self.edges, cum, left=0.0, right=cum[-1]))

    def prob_less(self, c: float) -> float:
        cum = self._cum()
        if self.lattice:
            return float(cum[np.searchsorted(self.grid, c - self._tol(), side="left")])
        return self.cdf(c)

    def prob_greater(self, c: float) -> float:
        return self.total - self.cdf(c)

    def prob_between(self, low: float, high: float) -> float:
        if high < low:
            raise DpdeskError(f"high ({high}) must be >= low ({low})")
        return self.cdf(high) - self.prob_less(low)

    def interval(self, delta: float) -> CredibleInterval:
        """Highest-density interval holding at least ``1 − δ``; ``confidence`` is its exact mass.

        Bins (lattice points) are collected by decreasing density until their mass reaches ``1 − δ``;
        on a continuous grid the last bin is taken only in part, so the ends are not quantised.
        """
        if not 0 < delta < 1:
            raise DpdeskError(f"delta ({delta}) must be in (0, 1)")
        want = 1.0 - delta
        if self.lattice:
            dens = self.mass
        else:
            width = np.diff(self.edges)
            dens = np.where(width > 0, self.mass / np.where(width > 0, width, 1.0), 0.0)
        order = np.argsort(-dens, kind="stable")
        acc = np.cumsum(self.mass[order])
        k = int(np.searchsorted(acc, want * (1 - 1e-12), side="left"))
        if k >= order.size:
            raise DpdeskError(f"delta ({delta}) is below what this posterior resolves (mass {acc[-1]:.3g})")
        chosen = order[: k + 1]
        if self.lattice:
            low, high = float(self.grid[chosen.min()]), float(self.grid[chosen.max()])
            return CredibleInterval(low, high, self.prob_between(low, high))
        j_lo, j_hi = int(chosen.min()), int(chosen.max())
        low, high = float(self.edges[j_lo]), float(self.edges[j_hi + 1])
        last = int(order[k])
        need_last = want - (float(acc[k - 1]) if k else 0.0)  # mass still needed from the last bin
        frac = min(max(need_last / self.mass[last], 0.0), 1.0) if self.mass[last] > 0 else 1.0
        w = self.edges[last + 1] - self.edges[last]
        # the last bin sits at one end of a contiguous set: trim it from the outside
        if last == j_lo and last != j_hi:
            low = float(self.edges[last + 1] - frac * w)
        elif last == j_hi and last != j_lo:
            high = float(self.edges[last] + frac * w)
        conf = self.prob_between(low, high)
        while conf < want and (low > self.edges[0] or high < self.edges[-1]):  # rounding only
            low, high = max(low - 1e-12 * max(1.0, abs(low)), self.edges[0]), min(high + 1e-12 * max(1.0, abs(high)), self.edges[-1])
            conf = self.prob_between(low, high)
        return CredibleInterval(low, high, conf)

    def best_window(self, width: float) -> CredibleInterval:
        """The interval ``[L, L + width]`` with the most posterior mass (ties: closest to the mode).

        The mass of ``[L, L + w]`` is piecewise linear in ``L`` between bin edges and edges minus ``w``
        (points and points minus ``w`` on a lattice), so the maximum is at one of those.
        """
        if not width >= 0:
            raise DpdeskError(f"width ({width}) must be >= 0")
        pts = self.grid if self.lattice else self.edges
        cand = np.unique(np.concatenate([pts, pts - width]))
        cum = self._cum()
        if self.lattice:
            tol = self._tol()
            upper = cum[np.searchsorted(self.grid, cand + width + tol, side="right")]
            lower = cum[np.searchsorted(self.grid, cand - tol, side="left")]
        else:
            upper = np.interp(cand + width, self.edges, cum, left=0.0, right=cum[-1])
            lower = np.interp(cand, self.edges, cum, left=0.0, right=cum[-1])
        held = upper - lower
        best = float(held.max())
        ok = np.flatnonzero(held >= best - 1e-12)
        mode = self.center
        j = ok[np.argmin(np.abs(cand[ok] + width / 2 - mode))]
        low = float(cand[j])
        return CredibleInterval(low, low + width, self.prob_between(low, low + width))


def truncate(post: Posterior, low: float, high: float) -> TruncatedPosterior:
    """Restrict ``post`` to ``[low, high]`` and renormalise (a flat prior on the bounds).

    On a continuous grid a bin cut by a bound keeps the fraction of its mass inside (the density is
    taken as constant within a bin). If the grid holds no mass inside the bounds (the estimate is
    implausibly far outside them), all mass goes to the nearest bound.

    Examples
    --------
    >>> from dpdesk.engine.inference.posterior import posterior
    >>> t = truncate(posterior(0.0, [1.0], [5.0]), 0.0, 1000.0)
    >>> round(t.prob_between(0.0, 5.0 * math.log(1 / 0.2)), 3)   # half-Laplace: 1 − δ on [0, b ln(1/δ)]
    0.8
    """
    if not (math.isfinite(low) and math.isfinite(high)) or low > high:
        raise DpdeskError(f"bounds [{low}, {high}] must be finite with low <= high")
    grid, mass, h = post.grid, post.mass, post.spacing
    if post.lattice:
        tol = 1e-9 * h + 4 * np.finfo(float).eps * abs(post.center)
        keep = (grid >= low - tol) & (grid <= high + tol)
        new = np.where(keep, mass, 0.0)
        edges = np.zeros(grid.size + 1)
    else:
        raw = grid[0] - h / 2 + h * np.arange(grid.size + 1)
        edges = np.clip(raw, low, high)
        frac = np.diff(edges) / h
        new = mass * frac
    kept = float(new.sum())
    if kept <= 0.0:
        # no grid mass inside the bounds: a point mass at the nearest bound
        point = low if post.center < low else high
        g = np.array([point])
        one = np.array([1.0])
        e = np.array([point, point])
        base = Posterior(point, 0.0, post.method, g, one, h, post.error_bound, True)
        return TruncatedPosterior(base, low, high, _ro(g), _ro(one), _ro(e), 0.0)
    new = new / kept
    if not post.lattice:
        # drop bins entirely outside so the edges are strictly increasing
        w = np.diff(edges)
        idx = np.flatnonzero(w > 0)
        if idx.size == 0:  # degenerate bounds (low == high): a point
            g = np.array([low])
            base = Posterior(low, 0.0, post.method, g, np.array([1.0]), h, post.error_bound, True)
            return TruncatedPosterior(base, low, high, _ro(g), _ro(np.array([1.0])), _ro(np.array([low, low])), kept)
        j0, j1 = int(idx[0]), int(idx[-1])
        grid = grid[j0 : j1 + 1]
        new = new[j0 : j1 + 1]
        edges = edges[j0 : j1 + 2]
    return TruncatedPosterior(post, float(low), float(high), _ro(grid), _ro(new), _ro(edges), kept)


def _ro(a: np.ndarray) -> np.ndarray:
    a = np.array(a, dtype=float)
    a.setflags(write=False)
    return a
