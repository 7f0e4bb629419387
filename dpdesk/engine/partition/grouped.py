"""The exact law of a BLUE's error when its terms come in large groups of equal coefficients.

A partition release's BLUE for a query is ``θ̂ − θ = Σ_k A_k N_k`` over up to millions of released rows,
all with discrete-Laplace noise of one scale ``b`` (``Pr(N = k) ∝ p^{|k|}``, ``p = e^{-1/b}``), but
only a few distinct ``|A_k|``. Grouping the terms, ``S = Σ_j u_j K_j`` with ``K_j`` the sum of ``m_j``
independent noises, whose law is exact on the integers: its DFT is ``φ(θ)^{m_j}`` with
``φ(θ) = q²/(q² + 4p sin²(θ/2))``, ``q = 1 − p``.

When every ``u_j`` is a multiple of one step ``g`` (a cell release: ``u = 1``), ``S`` lives on ``gZ``
and the masses are exact point masses. Otherwise each ``u_j K_j`` is rounded to the nearest point of
a grid of spacing ``h``; the rounded sum differs from ``S`` by at most ``s = J·h/2`` for ``J`` rounded
groups, *always*, so ``Pr(|S_h| ≤ E − s) ≤ Pr(|S| ≤ E) ≤ Pr(|S_h| ≤ E + s)`` brackets every
probability rigorously. Truncated tails (Chernoff bounds, ``tail`` in all) widen the bracket by that
mass. Half-widths are reported on the conservative side.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import scipy.fft

from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.inference.grid import common_step

if TYPE_CHECKING:
    from dpdesk.engine.inference.posterior import Posterior

__all__ = ["GroupedPosterior", "discrete_variance", "grouped_terms"]

_TAIL = 1e-10  # total mass allowed off the grid
_SLACK = 0.02  # rounding slack s (how conservative a half-width may be) as a fraction of the std
_MAX_POINTS = 1 << 22


def discrete_variance(scale: float) -> float:
    """Variance of one discrete-Laplace noise of scale ``b``: ``2p/(1−p)²``."""
    p = math.exp(-1.0 / scale)
    return 2.0 * p / (-math.expm1(-1.0 / scale)) ** 2


def grouped_terms(
    values: np.ndarray, counts: np.ndarray | None = None, digits: int = 12
) -> tuple[np.ndarray, np.ndarray]:
    """Distinct ``|values|`` (merged when equal to ``digits`` significant digits, zeros dropped) and multiplicities."""
    v = np.abs(np.asarray(values, dtype=float)).ravel()
    m = np.ones(v.size, dtype=np.int64) if counts is None else np.asarray(counts, dtype=np.int64).ravel()
    keep = (v > 0) & (m > 0)
    v, m = v[keep], m[keep]
    if not v.size:
        return np.zeros(0), np.zeros(0, dtype=np.int64)
    top = float(v.max())
    key = np.round(v / top, digits)
    uniq, inv = np.unique(key, return_inverse=True)
    mult = np.bincount(inv, weights=m).astype(np.int64)
    # the representative value of a merged set: the mean of its members (they agree to `digits`)
    rep = np.bincount(inv, weights=v * m) / mult
    return rep, mult


def _log_mgf(s: np.ndarray, p: float, q: float, m: np.ndarray, u: np.ndarray) -> np.ndarray:
    """``log E exp(s·S)`` for ``S = Σ u_j K_j`` at tilts ``s`` (needs ``s·u_j < 1/b``)."""
    r = -math.log(p)  # 1/b
    su = np.outer(s, u)
    return np.asarray(
        (m * (2 * math.log(q) - np.log(-np.expm1(su - r)) - np.log(-np.expm1(-su - r)))).sum(axis=1)
    )


MAX_PMF_HALFWIDTH = 1 << 22  # points either side of 0 in a group's exact noise distribution (32 MiB each)


def _tail_bound(u: np.ndarray, m: np.ndarray, p: float, q: float, tail: float) -> float:
    """A ``T`` with ``Pr(|S| > T) ≤ tail`` (Chernoff over a grid of tilts)."""
    r = -math.log(p)
    smax = r / float(u.max())
    s = smax * np.concatenate([np.geomspace(1e-4, 0.5, 40), 1 - np.geomspace(0.5, 1e-4, 40)])
    return float(np.min((_log_mgf(s, p, q, m, u) - math.log(tail / 2)) / s))


def _group_pmf(m: int, p: float, q: float, tail: float) -> tuple[np.ndarray, int]:
    """Point masses of ``K`` (sum of ``m`` discrete Laplace) on ``-R..R`` and ``R``."""
    R = max(1, math.ceil(_tail_bound(np.ones(1), np.array([m]), p, q, tail)))
    if R > MAX_PMF_HALFWIDTH:  # a budget so small that its noise is wider than is computed exactly
        raise DpdeskError(
            f"the noise of so small a per-cell budget (scale ±{R:.3g}) is too wide to compute exactly "
            f"(at most ±{MAX_PMF_HALFWIDTH:.0e}); ask for a tighter accuracy or a larger ε"
        )
    if m == 1:
        k = np.arange(-R, R + 1)
        return q / (1 + p) * p ** np.abs(k), R
    L = scipy.fft.next_fast_len(2 * R + 1, real=True)
    theta = 2 * np.pi * np.arange(L // 2 + 1) / L
    spec = np.exp(m * (2 * math.log(q) - np.log(q * q + 4 * p * np.sin(theta / 2) ** 2)))
    full = scipy.fft.irfft(spec, L)
    pmf = np.concatenate([full[L - R :], full[: R + 1]])
    return np.clip(pmf, 0.0, None), R


@dataclass(frozen=True, eq=False)
class GroupedPosterior:
    """The law of ``S = Σ_j u_j K_j``; probabilities about ``|S|`` with a rigorous bracket.

    Parameters
    ----------
    values, counts : array_like
        Distinct coefficient magnitudes ``u_j > 0`` and how many released rows carry each.
    scale : float
        The discrete-Laplace scale ``b`` of every row.

    Examples
    --------
    >>> post = GroupedPosterior([1.0], [1], scale=2.0)
    >>> lo, hi = post.prob_within(0.0)          # Pr(N = 0) = (1 − p)/(1 + p)
    >>> p = math.exp(-0.5); lo <= (1 - p) / (1 + p) <= hi and hi - lo < 1e-9   # a rigorous bracket
    True
    """

    values: np.ndarray
    counts: np.ndarray
    scale: float
    std: float = field(init=False)
    spacing: float = field(init=False)
    slack: float = field(init=False)  # |S − S_h| ≤ slack always
    lost: float = field(init=False)  # mass off the grid (tails, wrap-around, FFT rounding)
    _sym: np.ndarray = field(init=False, repr=False)  # masses of |S_h| at 0, h, 2h, …
    _cum: np.ndarray = field(init=False, repr=False)  # their cumulative sums

    def __post_init__(self) -> None:
        u = np.asarray(self.values, dtype=float).ravel()
        m = np.asarray(self.counts, dtype=np.int64).ravel()
        if u.size != m.size or u.size == 0 or np.any(u <= 0) or np.any(m <= 0) or not np.all(np.isfinite(u)):
            raise DpdeskError("grouped posterior: values must be positive and finite, one count ≥ 1 each")
        if not (math.isfinite(self.scale) and self.scale > 0):
            raise DpdeskError(f"grouped posterior: scale ({self.scale}) must be positive")
        p, q = math.exp(-1.0 / self.scale), -math.expm1(-1.0 / self.scale)
        std = math.sqrt(discrete_variance(self.scale) * float(np.sum(m * u * u)))
        object.__setattr__(self, "std", std)
        J = u.size
        tail_each = _TAIL / (2 * J + 2)
        T = _tail_bound(u, m, p, q, tail_each)
        g = common_step(u)
        if g is not None and T / g <= _MAX_POINTS / 4:
            h, rounded = g, 0
        else:
            h = max(2 * _SLACK * std / J, 4 * T / _MAX_POINTS)
            rounded = J
        slack = rounded * h / 2
        half = math.ceil((T + slack) / h) + 1
        L = scipy.fft.next_fast_len(2 * half + 1, real=True)
        spec = np.ones(L // 2 + 1, dtype=complex)
        lost = 0.0
        pmfs: dict[int, tuple[np.ndarray, int]] = {}
        for uj, mj in zip(u, m):
            if int(mj) not in pmfs:
                pmfs[int(mj)] = _group_pmf(int(mj), p, q, tail_each)
            pmf, R = pmfs[int(mj)]
            lost += tail_each
            idx = np.rint(uj * np.arange(-R, R + 1) / h).astype(np.int64) % L
            spec *= scipy.fft.rfft(np.bincount(idx, weights=pmf, minlength=L), L)
        circ = np.clip(scipy.fft.irfft(spec, L), 0.0, None)
        # |S_h| ≤ T + slack except with mass ≤ tail_each, so the window ±half holds S_h up to that
        lost += tail_each + 1e-15 * math.sqrt(L) * 8
        sym = np.empty(half + 1)
        sym[0] = circ[0]
        sym[1:] = circ[1 : half + 1] + circ[L - half :][::-1]
        object.__setattr__(self, "spacing", float(h))
        object.__setattr__(self, "slack", float(slack))
        object.__setattr__(self, "lost", float(lost))
        sym.setflags(write=False)
        object.__setattr__(self, "_sym", sym)
        cum = np.cumsum(sym)
        cum.setflags(write=False)
        object.__setattr__(self, "_cum", cum)
        for name, arr in (("values", u), ("counts", m)):
            arr = arr.copy()
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)

    def _mass_le(self, e: float) -> float:
        """``Pr(|S_h| ≤ e)`` on the grid."""
        if e < 0:
            return 0.0
        j = int(math.floor(e / self.spacing + 1e-9))
        return float(self._cum[min(j, self._cum.size - 1)])

    def prob_within(self, eps: float) -> tuple[float, float]:
        """A rigorous bracket ``(low, high)`` of ``Pr(|S| ≤ ε)``."""
        low = max(0.0, self._mass_le(eps - self.slack) - self.lost)
        high = min(1.0, self._mass_le(eps + self.slack) + self.lost)
        return low, high

    def halfwidth(self, delta: float) -> tuple[float, float]:
        """The smallest ``E`` found with ``Pr(|S| ≤ E) ≥ 1 − δ`` proven, and that proven lower bound."""
        if not 0 < delta < 1:
            raise DpdeskError(f"delta ({delta}) must be strictly between 0 and 1")
        want = 1.0 - delta + self.lost
        j = int(np.searchsorted(self._cum, want, side="left"))
        if j >= self._cum.size:
            raise DpdeskError(
                f"delta ({delta}) is below what this posterior resolves (mass off the grid {self.lost:.2g})"
            )
        e = j * self.spacing + self.slack
        return e, self.prob_within(e)[0]

    def to_posterior(self, center: float) -> Posterior:
        """The engine's :class:`~dpdesk.engine.inference.posterior.Posterior` of ``θ = center − S``, conservative.

        On a lattice (no rounding) the point masses are exact. Otherwise every atom of ``S_h`` is pushed
        away from 0 by the slack (rounded up to whole steps; the atom at 0 split to both sides), so
        ``|pushed| ≥ |S|`` always: the mass of every window centred on ``center`` is a lower bound of the
        true one, and so is every credible interval's confidence. ``error_bound`` is the mass off the grid.
        """
        from dpdesk.engine.inference.posterior import Posterior

        h = self.spacing
        k = int(math.ceil(self.slack / h - 1e-12)) if self.slack > 0 else 0
        half = self._sym.size - 1 + k
        mass = np.zeros(2 * half + 1)
        mid = half
        tail = self._sym[1:] / 2
        mass[mid + 1 + k :] += tail
        mass[: mid - k][::-1][: tail.size] += tail
        if k == 0:
            mass[mid] += self._sym[0]
        else:
            mass[mid + k] += self._sym[0] / 2
            mass[mid - k] += self._sym[0] / 2
        grid = float(center) + h * np.arange(-half, half + 1)
        return Posterior(float(center), self.std, "grouped", grid, mass, h, float(self.lost), True)
