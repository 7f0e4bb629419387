"""The exact law of a sum of discrete terms on different lattices, by enumerating its atoms.

``S = Σ_k a_k K_k`` with integer discrete-Laplace or discrete-Gaussian ``K_k`` takes the values ``Σ_k a_k n_k``; when the
``a_k`` are not multiples of one step there is no common grid, and rounding each term to one (paper
Algorithm 2) is not exact. Where the support is small this module lists the atoms themselves: terms with
the same coefficient are first added on their own lattice (an integer convolution), then the groups are
combined pairwise, sorting the values and merging those that coincide to rounding. Each term is cut where
its two tails hold ``tail`` and atoms lighter than ``FLOOR`` are dropped; the mass lost is counted
exactly, so every probability read from the atoms is low by at most :attr:`Atoms.missing` and never high.
Private to the engine.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dpdesk.engine.errors import Cancelled
from dpdesk.engine.inference.gauss_kernels import dg_half_width
from dpdesk.engine.inference.grid import Components
from dpdesk.engine.mechanisms import discrete_gaussian as _dg

__all__ = ["Atoms", "enumerate_atoms"]

MAX_ATOMS = 1_000_000  # kept after merging (two float arrays: 16 MB)
MAX_PAIRS = 6_000_000  # values formed in one combination step before merging
MAX_GROUP = 4_000_000  # lattice points of one group (a wide term: its masses would not fit; 32 MB)
FLOOR = 1e-17  # atoms lighter than this are dropped (their mass is counted in `missing`)


@dataclass(frozen=True, eq=False)
class Atoms:
    """Sorted atom positions, their cumulative masses, and the mass not listed (``missing``)."""

    values: np.ndarray
    cum: np.ndarray  # cum[i] = mass of values[:i]; len(values) + 1 entries
    missing: float
    tol: float  # positions closer than this are one atom (rounding of the sums)
    step: float = 0.0  # > 0: every listed atom also carries the widest group, step·G (G on −g..g)
    group: np.ndarray | None = None  # cumulative masses of G: group[i] = Pr(G < i − g)

    def __post_init__(self) -> None:
        for arr in (self.values, self.cum, self.group):
            if arr is not None:
                arr.setflags(write=False)

    def _group_mass(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """``Pr(lo ≤ step·G ≤ hi)`` elementwise (ends within ``tol`` count as inside)."""
        assert self.group is not None
        g = (self.group.size - 2) // 2
        i = np.clip(np.ceil((lo - self.tol) / self.step), -g, g + 1).astype(np.int64) + g
        j = np.clip(np.floor((hi + self.tol) / self.step), -g - 1, g).astype(np.int64) + g + 1
        return np.where(j > i, self.group[np.maximum(j, 0)] - self.group[np.maximum(i, 0)], 0.0)

    @property
    def size(self) -> int:
        return int(self.values.size)

    def mass(self, low: float, high: float) -> float:
        """Listed mass of ``[low, high]`` (closed; atoms within ``tol`` of an end count as inside)."""
        if self.group is not None:
            w = np.diff(self.cum)
            return float(np.dot(w, self._group_mass(low - self.values, high - self.values)))
        i = np.searchsorted(self.values, low - self.tol, side="left")
        j = np.searchsorted(self.values, high + self.tol, side="right")
        return float(self.cum[j] - self.cum[i]) if j > i else 0.0

    def mass_open(self, low: float, high: float) -> float:
        """Listed mass of ``(low, high)`` (atoms within ``tol`` of an end count as outside)."""
        if self.group is not None:
            w, t = np.diff(self.cum), 2 * self.tol
            return float(np.dot(w, self._group_mass(low + t - self.values, high - t - self.values)))
        i = np.searchsorted(self.values, low + self.tol, side="right")
        j = np.searchsorted(self.values, high - self.tol, side="left")
        return float(self.cum[j] - self.cum[i]) if j > i else 0.0

    def bounds(self, low: float, high: float, closed: bool = True) -> tuple[float, float]:
        """Bounds of the exact probability of the interval: the listed mass and that plus ``missing``."""
        m = self.mass(low, high) if closed else self.mass_open(low, high)
        return m, min(m + self.missing, 1.0)

    def narrowest(self, level: float) -> float | None:
        """The smallest ``w ≥ 0`` whose ``[−w, w]`` lists at least ``level`` (None if none does)."""
        if self.group is not None:
            return self._narrowest_by_search(level)
        w = np.unique(np.abs(self.values))
        i = np.searchsorted(self.values, -w - self.tol, side="left")
        j = np.searchsorted(self.values, w + self.tol, side="right")
        held = self.cum[j] - self.cum[i]
        k = int(np.searchsorted(held, level, side="left"))  # held grows with w
        return float(w[k]) if k < w.size else None

    def _narrowest_by_search(self, level: float) -> float | None:
        # the held mass jumps only where w = |v_i + step·k|: bisect on w, then snap to such a point
        hi = float(np.max(np.abs(self.values))) + self.step * ((self.group.size - 2) // 2)  # type: ignore[union-attr]
        if self.mass(-hi, hi) < level:
            return None
        lo = 0.0
        for _ in range(200):
            if hi - lo <= self.tol:
                break
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if self.mass(-mid, mid) >= level else (mid, hi)
        return hi

    def binned(self, h: float, half: int) -> np.ndarray:
        """Masses of the bins ``[jh − h/2, jh + h/2)``, ``|j| ≤ half`` (atoms beyond are left out)."""
        w = np.diff(self.cum)
        if self.group is not None:  # for drawing: both parts binned, then convolved (each off by < h/2)
            g = (self.group.size - 2) // 2
            part = _bincount(self.step * np.arange(-g, g + 1), np.diff(self.group), h, half)
            return np.convolve(_bincount(self.values, w, h, half), part)[half : 3 * half + 1]
        return _bincount(self.values, w, h, half)


def _bincount(values: np.ndarray, weights: np.ndarray, h: float, half: int) -> np.ndarray:
    """Masses at ``values`` gathered into the bins ``[jh − h/2, jh + h/2)``, ``|j| ≤ half``."""
    idx = np.floor(values / h + 0.5).astype(np.int64) + half
    keep = (idx >= 0) & (idx <= 2 * half)
    return np.bincount(idx[keep], weights=weights[keep], minlength=2 * half + 1)


def _half_width(p: float, tail: float) -> int:
    """The smallest ``n`` with ``Pr(|K| > n) = 2 p^(n+1) / (1 + p) ≤ tail``."""
    if p <= 0:
        return 0
    return max(0, math.ceil(math.log(tail * (1 + p) / 2) / math.log(p) - 1))


def _term(p: float, q: float, tail: float) -> tuple[np.ndarray, float]:
    """Masses of K on ``−n..n`` with ``Pr(|K| > n) ≤ tail``, and that dropped tail mass (exact)."""
    n = _half_width(p, tail)
    k = np.arange(-n, n + 1)
    pmf = q / (1 + p) * p ** np.abs(k)
    return pmf, 2.0 * p ** (n + 1) / (1 + p)


def _dg_term(sigma: float, tail: float) -> tuple[np.ndarray, float]:
    """Masses of a discrete Gaussian on ``−n..n`` with ``Pr(|K| > n) ≤ tail``, and the dropped mass (exact)."""
    n = dg_half_width(sigma, tail)
    return _dg.pmf(sigma, np.arange(-n, n + 1)), _dg.tail(sigma, n)


def enumerate_atoms(
    comp: Components, tail: float, cancelled: Callable[[], bool] | None = None
) -> Atoms | None:
    """The atoms of the discrete sum ``comp`` (no continuous terms), or None when there are too many.

    ``tail`` is the mass each term may drop at its ends; the total dropped, plus atoms below ``FLOOR``,
    is :attr:`Atoms.missing`.
    """
    if comp.continuous or not comp.steps.size:
        raise ValueError("atoms are enumerated for purely discrete sums")
    # ≥ E|S|, a size to measure rounding against
    scale = float(np.sum(comp.a * (1 + comp.p) / comp.q) + np.sum(comp.ga * (comp.gs + 1.0)))
    tol = 1e-12 * max(scale, float(comp.steps.max()))
    # each term: (|A|, its width on its lattice, how to list its masses); Laplace then Gaussian
    listed = [
        (float(a), 2 * _half_width(float(p), tail) + 1, lambda p=float(p), q=float(q): _term(p, q, tail))
        for a, p, q in zip(comp.a, comp.p, comp.q)
    ] + [
        (float(a), 2 * dg_half_width(float(s), tail) + 1, lambda s=float(s): _dg_term(s, tail))
        for a, s in zip(comp.ga, comp.gs)
    ]
    # terms with one coefficient live on one lattice: add them there first (exactly)
    by_step = sorted(range(len(listed)), key=lambda i: listed[i][0])
    # the groups' sizes first, from the terms' widths alone: unless the coefficients are commensurate a
    # long list cannot fit, and a wide term (a small α) cannot even be listed on its own lattice — give up
    # before any array is formed (the caller brackets the law instead)
    sizes: list[int] = []
    previous = None
    for i in by_step:
        a, width = listed[i][0], listed[i][1]
        if previous is not None and abs(previous - a) <= 1e-12 * a:
            sizes[-1] += width - 1
        else:
            sizes.append(width)
        previous = a
    if max(sizes) > MAX_GROUP or math.prod(sizes) > 20 * MAX_PAIRS:
        return None
    terms = [(listed[i][0], *listed[i][2]()) for i in by_step]
    groups: list[tuple[float, np.ndarray]] = []
    missing = 0.0
    for a, pmf, lost in terms:
        missing += lost
        if groups and abs(groups[-1][0] - a) <= 1e-12 * a:
            groups[-1] = (groups[-1][0], np.convolve(groups[-1][1], pmf))
        else:
            groups.append((a, pmf))
    # the widest groups first keeps the running list short for as long as possible
    groups.sort(key=lambda g: -g[1].size)
    # the widest group stays on its own lattice: reads add it analytically (a cumulative sum per atom)
    (step, widest), groups = groups[0], groups[1:]
    values = np.zeros(1)
    weights = np.ones(1)
    for a, pmf in groups:
        if cancelled is not None and cancelled():
            raise Cancelled("posterior computation cancelled")
        if values.size * pmf.size > MAX_PAIRS:
            return None
        half = (pmf.size - 1) // 2
        keep = pmf >= FLOOR
        offs = a * np.arange(-half, half + 1)[keep]
        values = (values[:, None] + offs[None, :]).ravel()
        weights = (weights[:, None] * pmf[keep][None, :]).ravel()
        missing += float(pmf[~keep].sum())  # (a sub-probability times the running mass ≤ 1)
        light = weights < FLOOR
        missing += float(weights[light].sum())
        values, weights = values[~light], weights[~light]
        order = np.argsort(values, kind="stable")
        values, weights = values[order], weights[order]
        # merge values equal to rounding (sums of the same atoms in another order)
        start = np.concatenate([[True], np.diff(values) > tol])
        if not start.all():
            first = np.flatnonzero(start)
            weights = np.add.reduceat(weights, first)
            values = values[first]
        if values.size > MAX_ATOMS:
            return None
    cum = np.concatenate([[0.0], np.cumsum(weights)])
    group = np.concatenate([[0.0], np.cumsum(widest)])
    return Atoms(values, cum, missing + 1e-15 * values.size**0.5, tol, step, group)
