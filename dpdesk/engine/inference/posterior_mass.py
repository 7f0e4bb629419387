"""The posterior of a query's true answer as a value: its mass on a grid, and what can be read off it.

:func:`dpdesk.engine.inference.posterior.posterior` computes it (fft, direct, Monte Carlo, exact atoms or
proven brackets); this module holds what it returns — the :class:`Posterior` (masses on bins or lattice
points, the method that ran, the error bound) — and its readings: cumulative probabilities, the mass of
a window or a one-sided claim, the mass within ±ε of the estimate, and the narrowest ``1−δ`` credible
interval (paper Algorithm 3). Where the law is atomic off the grid, exact reads come from the listed
atoms or the Selberg brackets the computation kept.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.inference.atoms import Atoms
from dpdesk.engine.inference.selberg import Bandlimited

__all__ = ["CredibleInterval", "Posterior"]


def _finite(name: str, value: float) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise DpdeskError(f"{name} ({value!r}) must be a number") from None
    if not math.isfinite(v):
        raise DpdeskError(f"{name} ({value}) must be finite")
    return v


@dataclass(frozen=True)
class CredibleInterval:
    """``[low, high]`` and the posterior mass it holds (``confidence``)."""

    low: float
    high: float
    confidence: float


@dataclass(frozen=True, eq=False)  # arrays inside: compare by identity, not element-wise
class Posterior:
    """The posterior mass function of θ on a grid of bins (or lattice points).

    Attributes
    ----------
    center : float
        θ̂, the centre of symmetry.
    std : float
        Exact posterior standard deviation ``sqrt(Σ A_k² Var N_k)``.
    method : str
        What ran: ``"fft"``, ``"direct"``, ``"mc"``, or for discrete sums off one lattice ``"atoms"``
        (exact enumeration) or ``"bandlimited"`` (proven brackets); see :func:`posterior`.
    grid : ndarray
        Bin centres (lattice points when ``lattice``), ascending, symmetric about ``center``.
    mass : ndarray
        Probability of each bin ``[grid_j − spacing/2, grid_j + spacing/2)`` (of each point when
        ``lattice``). Mass beyond the grid (at most the tail part of ``error_bound``) is left out.
    spacing : float
        Bin width, or lattice step.
    error_bound : float
        Bound on ``Σ_j |mass_j − true_j|`` plus the true mass off the grid (twice the total-variation
        distance). Rigorous for ``fft`` with a continuous component and for lattice posteriors; for
        ``mc``, ``direct`` with continuous terms, and ``fft`` on discrete noise with non-lattice
        coefficients it is an estimate (see :func:`posterior`).
    lattice : bool
        True when θ takes only the values ``center + spacing·k``; then ``mass`` holds exact point
        masses (``spacing`` is 1 for integer coefficients with gcd 1).
    atomic : bool
        True when θ may have atoms inside bins (discrete terms off the grid): readings then use whole
        bins only — a window's mass is that of the bins inside it, an interval ends at a bin edge — so
        they are lower bounds, exact (to ``error_bound``) at bin edges.
    """

    center: float
    std: float
    method: str
    grid: np.ndarray
    mass: np.ndarray
    spacing: float
    error_bound: float
    lattice: bool
    atomic: bool = False
    law: Atoms | Bandlimited | None = field(default=None, repr=False)  # exact reads: listed atoms or brackets
    _cum: np.ndarray = field(init=False, repr=False, compare=False)  # cumulative mass, set from mass

    def __post_init__(self) -> None:
        for name in ("grid", "mass"):
            arr = np.array(getattr(self, name), dtype=float)
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)
        cum = np.concatenate([[0.0], np.cumsum(self.mass)])
        cum.setflags(write=False)
        object.__setattr__(self, "_cum", cum)

    @property
    def total(self) -> float:
        """Mass on the grid (1 minus what the method dropped)."""
        return float(self._cum[-1])

    def _tol(self) -> float:
        return 1e-9 * self.spacing + 4 * np.finfo(float).eps * abs(self.center)

    def cdf(self, x: float) -> float:
        """``Pr(θ ≤ x)``; within a bin of a continuous posterior the CDF is a cubic Hermite interpolant."""
        x = _finite("x", x)
        if self.law is not None:
            return self.law.bounds(-math.inf, x - self.center)[0]
        if self.lattice:
            return float(self._cum[np.searchsorted(self.grid, x + self._tol(), side="right")])
        if self.atomic:  # the bins wholly at or below x: a lower bound
            return float(self._cum[self._edge(x, math.floor)])
        # cubic Hermite between bin edges: values are the cumulative masses, slopes the density
        # estimated from the two neighbouring bins — O(h³) instead of linear interpolation's O(h²)
        h = self.spacing
        u = (x - (self.grid[0] - h / 2)) / h
        n = self.grid.size
        if u <= 0:
            return 0.0
        if u >= n:
            return float(self._cum[-1])
        j = int(u)
        s = u - j
        dens = self.mass / h
        d0 = (dens[j - 1] + dens[j]) / 2 if j > 0 else dens[j] / 2
        d1 = (dens[j] + dens[j + 1]) / 2 if j + 1 < n else dens[j] / 2
        c0, c1 = float(self._cum[j]), float(self._cum[j + 1])
        h00, h10, h01, h11 = 2 * s**3 - 3 * s**2 + 1, s**3 - 2 * s**2 + s, -2 * s**3 + 3 * s**2, s**3 - s**2
        val = h00 * c0 + h10 * h * d0 + h01 * c1 + h11 * h * d1
        return float(min(max(val, c0), c1))

    def drawn_less(self, c: np.ndarray) -> np.ndarray:
        """``Pr(θ < c)`` read off the binned masses (linear within a bin), for drawing only.

        The same as :meth:`prob_less` up to a bin's mass; for ``method="bandlimited"``, whose exact reads
        are proven brackets that cost a transform each, it is what a plot of many bins should use.
        """
        edges = self.grid[0] - self.spacing / 2 + self.spacing * np.arange(self.grid.size + 1)
        return np.asarray(np.interp(np.asarray(c, dtype=float), edges, self._cum))

    def prob_less(self, c: float) -> float:
        """``Pr(θ < c)``."""
        c = _finite("c", c)
        if self.law is not None:  # (an upper bound would be safer for prob_between; see there)
            return self.law.bounds(-math.inf, c - self.center, closed=False)[0]
        if self.lattice:
            return float(self._cum[np.searchsorted(self.grid, c - self._tol(), side="left")])
        if self.atomic:  # the bins reaching below c: an upper bound, so prob_between stays a lower one
            return float(self._cum[self._edge(c, math.ceil)])
        return self.cdf(c)

    def _edge(self, x: float, rounding: Callable[[float], int]) -> int:
        """Index into the cumulative masses of the bin edge at or next to ``x`` (edges within rounding count)."""
        u = (x - (self.grid[0] - self.spacing / 2)) / self.spacing
        u = round(u) if abs(u - round(u)) <= 1e-9 else u
        return min(max(int(rounding(u)), 0), self.grid.size)

    def prob_greater(self, c: float) -> float:
        """``Pr(θ > c)``."""
        c = _finite("c", c)
        if self.law is not None:  # a lower bound, like every read of an exact law
            return self.law.bounds(c - self.center, math.inf, closed=False)[0]
        return self.total - self.cdf(c)

    def prob_between(self, low: float, high: float) -> float:
        """``Pr(low ≤ θ ≤ high)`` (paper §5.2: the confidence of a given interval)."""
        low, high = _finite("low", low), _finite("high", high)
        if high < low:
            raise DpdeskError(f"high ({high}) must be >= low ({low})")
        if self.law is not None:  # a proven lower bound (atoms: the listed mass)
            return self.law.bounds(low - self.center, high - self.center)[0]
        return self.cdf(high) - self.prob_less(low)

    def central_mass(self, half_width: float) -> float:
        """A lower bound of ``Pr(|θ − center| ≤ half_width)``, exact on a lattice and at bin edges.

        Between bin edges the held mass is interpolated linearly, which for a symmetric unimodal
        posterior never overstates it. Decisions ("is ±ε enough?") use this, so they err on the safe side.
        """
        w = _finite("half_width", half_width)
        if w < 0:
            raise DpdeskError(f"half_width ({half_width}) must be >= 0")
        if self.lattice or self.law is not None:
            return self.prob_between(self.center - w, self.center + w)
        n = self.grid.size
        mid = n // 2
        u = w / self.spacing + 0.5  # in units of bins: central 2k+1 cells end at u = k + 1/2 + 1/2
        k = int(math.floor(u + 1e-9))  # w at a bin edge (to rounding) reads that edge
        if k > mid:
            return float(self._cum[-1] - self._cum[0])
        held_k = float(self._cum[mid + k] - self._cum[mid - k + 1]) if k >= 1 else 0.0  # 2k−1 cells
        if self.atomic:  # atoms may sit anywhere in the next bins: count whole bins only
            return held_k
        held_k1 = float(self._cum[mid + k + 1] - self._cum[mid - k])  # 2k+1 cells
        lo_w = (k - 0.5) * self.spacing if k >= 1 else 0.0
        hi_w = (k + 0.5) * self.spacing
        frac = (w - lo_w) / (hi_w - lo_w)
        return held_k + frac * (held_k1 - held_k)

    def interval(self, delta: float) -> CredibleInterval:
        """The narrowest interval holding at least ``1 − δ`` for the exact distribution (paper Algorithm 3).

        The posterior is symmetric and unimodal about ``center``, so the interval is grown
        symmetrically until its computed mass less :attr:`error_bound` reaches ``1 − δ``. On a lattice the ends are lattice points and the mass is
        exact; otherwise the half-width is solved within a bin, so it is not quantised to the grid, and
        ``confidence`` is :meth:`central_mass` of the returned interval: exact (to the error bound) at
        bin edges, a lower bound between them, and always ≥ ``1 − δ + error_bound``.

        Examples
        --------
        >>> from dpdesk.engine.inference.posterior import posterior
        >>> post = posterior(0.0, [1.0], [2.0])
        >>> ci = post.interval(0.05)
        >>> abs(ci.high - 2 * math.log(1 / 0.05)) < post.spacing  # paper Thm 5.3: b·ln(1/δ)
        True
        >>> ci.confidence >= 0.95
        True
        """
        delta = _finite("delta", delta)
        if not 0 < delta < 1:
            raise DpdeskError(f"delta ({delta}) must be in (0, 1)")
        # the interval's claim must hold for the exact distribution: its computed mass, less the error
        # bound, reaches 1 − δ
        want = 1.0 - delta + self.error_bound
        if isinstance(self.law, Atoms):
            r = self.law.narrowest(want)
            if r is not None:
                return CredibleInterval(self.center - r, self.center + r, self.central_mass(r))
        n = self.grid.size
        mid = n // 2
        k = np.arange(mid + 1)
        held = self._cum[mid + k + 1] - self._cum[mid - k]  # mass of the central 2k+1 cells
        j = int(np.searchsorted(held, want, side="left"))
        if j > mid:
            raise DpdeskError(
                f"delta ({delta}) is below what this posterior resolves (grid mass {self.total:.3g}, "
                f"error bound {self.error_bound:.3g})"
            )
        if self.lattice or self.atomic:
            r = j * self.spacing if self.lattice else (j + 0.5) * self.spacing  # a point, or a bin edge
            conf = float(held[j])
            if self.law is not None:  # the bins only drew it: the bracket decides, widening bin by bin
                conf = self.central_mass(r)
                while conf < want and r < self.grid[-1] - self.center:
                    r += self.spacing
                    conf = self.central_mass(r)
            return CredibleInterval(self.center - r, self.center + r, conf)
        # held(w) is concave for w > 0 (its slope 2·f(c + w) falls), so interpolating it linearly
        # between bin edges gives a lower bound of the true mass: the interval is conservative
        w0 = (j - 0.5) * self.spacing if j else 0.0
        m0 = float(held[j - 1]) if j else 0.0
        w = w0 + (want - m0) / (float(held[j]) - m0) * ((j + 0.5) * self.spacing - w0)
        conf = self.central_mass(w)
        while conf < want:  # floating-point rounding only
            w = w * (1 + 1e-14) + 1e-300
            conf = self.central_mass(w)
        return CredibleInterval(self.center - w, self.center + w, conf)
