"""Interval probabilities of a noise sum from its characteristic function, with a proven error bound.

This module owns the ``bandlimited`` computation: for ``S = Σ_k A_k N_k`` (independent continuous or
discrete Laplace or Gaussian terms, on one lattice or not) it brackets ``Pr(S ∈ [c − w, c + w])`` between two numbers
computed from the characteristic function ``φ`` on finitely many frequencies, so the result is exact to
a stated bound whatever the atoms of ``S`` look like.

The mathematics. Selberg's majorant ``C₊`` and minorant ``C₋`` of the indicator of an interval
``I = [c − w, c + w]`` are entire functions of exponential type ``2πΔ`` (their Fourier transforms vanish
outside ``[−Δ, Δ]``) with ``C₋ ≤ 1_I ≤ C₊`` on the real line. They are built from Beurling's function
``B = H + K`` (Vaaler, *Some extremal functions in Fourier analysis*, Bull. AMS 12, 1985):
``K(x) = (sin πx / πx)²`` (Fejér), ``|sgn x − H(x)| ≤ K(x)``, ``Ĥ(t) = Ĵ(t)/(πit)`` with
``Ĵ(t) = πt(1 − |t|)cot(πt) + |t|`` on ``0 < |t| < 1``. Then ``E C₋(S) ≤ Pr(S ∈ I) ≤ E C₊(S)`` and, for a
symmetric ``S``, ``E C±(S) = ∫ Ĉ±(ν) φ(2πν) dν`` is an integral over ``|ν| ≤ Δ`` only. The trapezoidal
rule with step ``1/P`` computes it exactly for the ``P``-periodic sum ``Σ_k C±(S + kP)`` (Poisson
summation): for the majorant every extra term is ≥ 0, so the sum is still an upper bound; for the
minorant the extra terms are ≤ 0 unless ``S + kP`` falls in ``I`` for some ``k ≠ 0``, which needs
``|S| > P − |c| − w`` and has probability ≤ the Chernoff tail. With ``N = ΔP`` nodes ``ν_j = j/P`` and
``s_j = j/N``::

    E C±(S) = 2w/P ± 1/N + (2/N) Σ_{j=1}^{N−1} [A_j sin(2πν_j w) ± B_j cos(2πν_j w)] cos(2πν_j c) φ_j

with ``A_j = (1 − s_j)cot(πs_j) + 1/π = Ĵ(s_j)/(πs_j)`` and ``B_j = 1 − s_j``. The half-gap
``E[K(Δ(S − c ∓ w))]``-like term shrinks like (density of ``S`` near the ends)/Δ, so doubling ``N`` (the
node set is nested: ``φ_j`` depends on ``P`` only) tightens it until it meets the target.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache

import numpy as np

from dpdesk.engine.errors import Cancelled
from dpdesk.engine.inference import grid as _g

__all__ = [
    "Bandlimited",
    "central_bounds",
    "central_sums",
    "decay_cutoff",
    "posterior_masses",
    "selberg_weights",
]

TARGET = 5e-5  # half-gap aimed at for one interval (decisions, the fusion search)
GRID_TARGET = 1e-4  # for the whole grid of a posterior (its error_bound)
FIRST_NODES = 1024
MAX_NODES = 2**17  # beyond this a bracket stays as wide as it is: its lower bound still holds
TAIL = 1e-12  # Pr(|S| > T): the periodisation's only one-sided error
_LOG_CUT = 80.0  # |φ| < e^-80 beyond the decay cutoff; the samples left out change a sum by < 1e-30
_CUT_ERROR = 1e-30

# sin(x·w), cos(x·w) and cos(x·c) at the nodes x (the last None where the interval is centred, c = 0)
Trig = tuple[np.ndarray, np.ndarray, np.ndarray | None]


def decay_cutoff(comp: _g.Components) -> float:
    """A frequency beyond which ``|φ(u)| < e^-80``, from the continuous terms (inf without any).

    Each continuous factor (``1/(1 + c²u²)``, and ``e^{−g2 u²/2}`` for the Gaussian part) falls with ``|u|``
    and every factor is at most 1, so the product of the continuous ones bounds ``|φ|`` and crosses
    ``e^-80`` once.
    """
    c, g2 = comp.c, comp.g2
    if not comp.continuous:
        return math.inf

    def logm(u: float) -> float:
        return float(np.sum(np.log1p((c * u) ** 2)) + 0.5 * g2 * u * u)

    hi = 1.0 / float(c.max()) if c.size else 1.0 / math.sqrt(g2)
    while logm(hi) < _LOG_CUT:
        hi *= 2.0
    lo = hi / 2.0 if logm(hi / 2.0) < _LOG_CUT else 0.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if logm(mid) < _LOG_CUT else (lo, mid)
    return hi


def selberg_weights(j: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(A_j, B_j)`` of the module notes at nodes ``j`` for bandwidth ``n`` (they depend on nothing else)."""
    s = j / n
    with np.errstate(divide="ignore"):
        a = (1.0 - s) / np.tan(math.pi * s) + 1.0 / math.pi
    return a, 1.0 - s


@lru_cache(maxsize=12)
def _weights_upto(n: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`selberg_weights` at ``j = 1 … n − 1`` (read-only; node counts are powers of two times 1024)."""
    a, b = selberg_weights(np.arange(1, n), n)
    a.setflags(write=False)
    b.setflags(write=False)
    return a, b


def central_sums(
    ph: np.ndarray,
    j: np.ndarray,
    n: int,
    period: float,
    w: float,
    c: float = 0.0,
    weights: tuple[np.ndarray, np.ndarray] | None = None,
    trig: Trig | None = None,
) -> tuple[float, float]:
    """``(lower, half-gap)`` for ``Pr(|S − c| ≤ w)`` from ``φ`` at ``2πj/P`` (``ph``), bandwidth ``n/P``.

    ``j`` may stop short of ``n`` where ``φ`` is known to be below ``e^-80`` (see :func:`decay_cutoff`);
    ``weights`` are :func:`selberg_weights` of ``j`` and ``n`` when the caller keeps them, ``trig`` the
    sines and cosines ``(sin(x w), cos(x w), cos(x c))`` at ``x = 2πj/P`` likewise.
    """
    a, b = weights if weights is not None else selberg_weights(j, n)
    if trig is None:
        x = 2.0 * math.pi * j / period
        trig = (np.sin(x * w), np.cos(x * w), np.cos(x * c) if c else None)
    sin_w, cos_w, cos_c = trig
    cc = ph * cos_c if c else ph
    est = 2.0 * w / period + (2.0 / n) * float(np.dot(a * sin_w, cc))
    gap = 1.0 / n + (2.0 / n) * float(np.dot(b * cos_w, cc)) + _CUT_ERROR
    return est - gap - TAIL, gap


class Bandlimited:
    """Bounds on interval probabilities of ``S`` from ``φ`` sampled at ``ν_j = j/P``, ``j < N``.

    ``period`` must be at least ``T + max(|c| + w)`` over the intervals asked, where ``Pr(|S| > T)``
    ≤ ``tail``; intervals are clipped to ``[−T, T]`` first (changing their mass by ≤ ``tail``). The
    samples of ``φ`` are computed on demand and kept, so asking again with more nodes reuses them.
    """

    def __init__(
        self, comp: _g.Components, period: float | None = None, cancelled: Callable[[], bool] | None = None
    ) -> None:
        self.comp = comp
        self.tail = TAIL
        self.T = _g.tail_halfwidth(comp, TAIL)
        self.period = float(period) if period is not None else 2.0 * self.T * (1 + 1e-9)
        if self.period < 2.0 * self.T:
            raise ValueError(f"period ({self.period}) must be at least 2T ({2 * self.T})")
        self._phi = np.ones(1)  # φ at ν_0 = 0
        self._cancelled = cancelled
        self._trig: dict[tuple[float, float], Trig] = {}  # per (c, w): sin, cos at the nodes
        self._asked: dict[tuple[float, float, float, int, int], tuple[float, float]] = {}
        cut = decay_cutoff(comp)  # samples beyond this index are below e^-80
        self.jcut = math.ceil(cut * self.period / (2 * math.pi)) + 1 if math.isfinite(cut) else None

    # -- samples of φ ---------------------------------------------------------------------------
    def phi(self, n: int) -> np.ndarray:
        """``φ(2πj/P)`` for ``j < n`` (computed once, extended as needed; not beyond the decay cutoff)."""
        if self.jcut is not None:
            n = min(n, self.jcut)
        have = self._phi.size
        if n > have:
            if self._cancelled is not None and self._cancelled():
                raise Cancelled("posterior computation cancelled")
            self._phi = np.concatenate([self._phi, _g.phi_nodes(have, n, self.period, self.comp)])
        return self._phi[:n]

    # -- one interval -----------------------------------------------------------------------------
    def interval(self, low: float, high: float, n: int) -> tuple[float, float]:
        """``(lower, upper)`` bounds of ``Pr(low ≤ S ≤ high)`` (also of the open interval) with ``n`` nodes."""
        lo, hi = max(low, -self.T), min(high, self.T)
        clipped = (lo > low) or (hi < high)
        if hi < lo:  # entirely beyond ±T
            return 0.0, self.tail
        c, w = (lo + hi) / 2, (hi - lo) / 2
        if abs(c) + w > self.period - self.T:  # cannot happen after clipping with P ≥ 2T
            raise ValueError("interval outside the periodisation's reach")
        ph = self.phi(n)[1:]
        weights = _weights_upto(n)
        lower, gap = central_sums(
            ph,
            np.arange(1, ph.size + 1),
            n,
            self.period,
            w,
            c,
            weights=(weights[0][: ph.size], weights[1][: ph.size]),
            trig=self._trig_at(c, w, ph.size),
        )
        upper = lower + 2 * gap + self.tail + (self.tail if clipped else 0.0)
        return max(lower, 0.0), min(upper, 1.0)

    def _trig_at(self, c: float, w: float, size: int) -> Trig:
        """``sin(x_j w)``, ``cos(x_j w)`` and ``cos(x_j c)`` at ``x_j = 2πj/P``, ``j = 1 … size`` (kept and
        extended: the doubling node counts of one interval share their first nodes)."""
        have = self._trig.get((c, w))
        done = 0 if have is None else have[0].size
        if done < size:
            x = 2.0 * math.pi * np.arange(done + 1, size + 1) / self.period
            more: Trig = (np.sin(x * w), np.cos(x * w), np.cos(x * c) if c else None)
            if have is not None:
                cos_c = None if have[2] is None or more[2] is None else np.concatenate([have[2], more[2]])
                more = (np.concatenate([have[0], more[0]]), np.concatenate([have[1], more[1]]), cos_c)
            have = self._trig[(c, w)] = more
        assert have is not None  # size ≥ 1
        return have[0][:size], have[1][:size], None if have[2] is None else have[2][:size]

    def interval_to(
        self,
        low: float,
        high: float,
        target: float = TARGET,
        n0: int = FIRST_NODES,
        max_nodes: int = MAX_NODES,
    ) -> tuple[float, float]:
        """:meth:`interval` with nodes doubled from ``n0`` until ``(upper − lower)/2 ≤ target``.

        The node counts tried depend only on the inputs, so the same question always gets the same
        answer (decisions made in one place and re-checked in another agree); it is kept, so asking it
        again costs nothing.
        """
        key = (low, high, target, n0, max_nodes)
        if key in self._asked:
            return self._asked[key]
        n = n0
        while True:
            lower, upper = self.interval(low, high, n)
            if (upper - lower) / 2 <= target or 2 * n > max_nodes:
                self._asked[key] = (lower, upper)
                return lower, upper
            n *= 2

    def bounds(self, low: float, high: float, closed: bool = True) -> tuple[float, float]:
        """:meth:`interval_to` (the bounds hold for the closed and the open interval alike)."""
        return self.interval_to(low, high)

    # -- a whole grid of central windows --------------------------------------------------------
    def central_grid(self, h: float, K: int, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Estimates and half-gaps of ``Pr(|S| ≤ (k + ½)h)`` for ``k = 0..K`` with ``n`` nodes.

        Needs ``P = L·h`` for an integer ``L ≥ K + 1``: then ``sin(2πν_j(k + ½)h) = sin(2πj(k + ½)/L)``,
        and folding ``j`` modulo ``L`` (with the sign ``(−1)^⌊j/L⌋`` that the half-step brings) turns the
        sums for every ``k`` into one FFT of length ``L``.
        """
        L = int(round(self.period / h))
        if abs(L * h - self.period) > 1e-9 * self.period or L < K + 1:
            raise ValueError("the period must be a whole number (> K) of bins")
        ph = self.phi(n)[1:]
        j = np.arange(1, ph.size + 1)
        s = j / n
        with np.errstate(divide="ignore"):
            a = (1.0 - s) / np.tan(math.pi * s) + 1.0 / math.pi
        b = 1.0 - s
        sign = np.where((j // L) % 2 == 0, 1.0, -1.0)
        fa = np.bincount(j % L, weights=sign * a * ph, minlength=L)
        fb = np.bincount(j % L, weights=sign * b * ph, minlength=L)
        shift = np.exp(1j * math.pi * np.arange(L) / L)
        za = np.fft.ifft(fa * shift) * L
        zb = np.fft.ifft(fb * shift) * L
        w = (np.arange(K + 1) + 0.5) * h
        est = 2 * w / self.period + (2.0 / n) * za.imag[: K + 1]
        gap = 1.0 / n + (2.0 / n) * zb.real[: K + 1] + _CUT_ERROR
        return est, gap


def central_bounds(comp: _g.Components, w: float, target: float = TARGET) -> tuple[float, float]:
    """Bounds ``(lower, upper)`` of ``Pr(|S| ≤ w)``, exact to ``target`` where ``MAX_NODES`` allow.

    Examples
    --------
    >>> import numpy as np
    >>> comp = _g.make_components(np.array([1.0]), np.array([2.0]), np.array([False]))
    >>> lo, hi = central_bounds(comp, 2.0 * math.log(20.0))   # Laplace(2): Pr(|X| ≤ 2 ln 20) = 0.95
    >>> lo <= 0.95 <= hi and hi - lo <= 2 * TARGET   # the half-gap aimed at is TARGET
    True
    """
    return Bandlimited(comp).interval_to(-w, w, target)


def posterior_masses(
    comp: _g.Components, h: float, half: int, tail: float, cancelled: Callable[[], bool] | None = None
) -> tuple[np.ndarray, float, Bandlimited]:
    """Bin masses on ``jh``, ``|j| ≤ half``, from bounds on every central window ``(k + ½)h``.

    Returns the masses, a bound on the error of any interval's mass read from them (``tail``: the mass
    beyond the grid), and the :class:`Bandlimited` that computed them, which answers other intervals.
    """
    T = _g.tail_halfwidth(comp, TAIL)
    # the period: a whole number of bins, ≥ 2T and ≥ T + the widest window (see the module notes)
    L = max(2 * half + 1, math.ceil(2 * T / h), math.ceil(T / h + half + 1))
    bl = Bandlimited(comp, period=L * h, cancelled=cancelled)
    n = 4 * L
    while True:
        est, gap = bl.central_grid(h, half, n)
        if 2 * float(gap.max()) <= GRID_TARGET or 2 * n > MAX_NODES:
            break
        n *= 2
    mass = np.empty(2 * half + 1)
    mass[half] = est[0]
    d = np.diff(est) / 2
    mass[half + 1 :], mass[:half] = d, d[::-1]
    neg = float(-mass[mass < 0].sum())
    # an interval's mass is a difference of two cumulative sums, each off by at most the largest gap
    # and the tails, plus what clipping the negative masses moved
    err = 2 * float(gap.max()) + 2 * TAIL + 2 * neg + tail
    return np.clip(mass, 0.0, None), err, bl
