"""The characteristic function of a noise sum, the kernel under every posterior method but Monte Carlo.

``S = Σ_k A_k N_k`` with independent continuous Laplace (scales ``c``), discrete Laplace (``|A|``
and ``p = e^{-1/b}``), continuous Gaussian and discrete Gaussian terms: :class:`Components` holds them
(the continuous Gaussians as one, their variances added: a sum of Gaussians is Gaussian, so that part of
``φ`` is ``exp(−g2·t²/2)`` in closed form; each discrete Gaussian ``|A|·N_Z(0, σ²)`` keeps its lattice and
its theta-function ``φ``, :mod:`~dpdesk.engine.mechanisms.discrete_gaussian`);
:func:`log_phi`/:func:`phi` evaluate
``φ_S`` at any frequencies, with a power-sum series for the many small continuous terms, pruning where
the product is already below ``e^-80``, and — where the frequencies are an arithmetic progression
(:func:`phi_nodes`, the transform's alias grids) — the discrete terms' sines from the angle-addition
formula instead of one ``sin`` per frequency and term. Split from :mod:`~dpdesk.engine.inference.grid`,
which re-exports these names. Private to the engine.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from dpdesk.engine.mechanisms import discrete_gaussian as _dg

_SERIES_X = 0.5  # |c t| below this uses the power-sum series of log1p(x²)
_SERIES_TERMS = 28  # 0.25**28 / 28 < 1e-18
_LOG_TINY = -80.0  # |φ| below e^-80 is treated as zero


def _empty() -> np.ndarray:
    return np.zeros(0)


@dataclass(frozen=True)
class Components:
    """The non-zero noise terms: continuous Laplace scales ``c``, discrete Laplace ``(a = |A|,
    p = exp(-1/b))``, the continuous Gaussians' summed variance ``g2`` and discrete Gaussians ``(ga = |A|,
    gs = σ)``.

    ``q = 1 − p`` is kept separately (from ``expm1``) so that very wide discrete noise, where ``p``
    rounds to 1, still has an exact variance, characteristic function and tail bound.
    """

    c: np.ndarray  # continuous Laplace scales |A_k| b_k, sorted ascending
    a: np.ndarray  # discrete Laplace |A_k|, sorted by descending variance
    p: np.ndarray  # discrete exp(-1/b_k)
    q: np.ndarray  # discrete 1 - exp(-1/b_k)
    g2: float = 0.0  # Σ (|A_k| σ_k)² over the continuous Gaussian terms
    ga: np.ndarray = field(default_factory=_empty)  # discrete Gaussian |A_k|
    gs: np.ndarray = field(default_factory=_empty)  # discrete Gaussian σ_k

    @property
    def variance(self) -> float:
        dg = sum(a * a * _dg.variance(s) for a, s in zip(self.ga, self.gs))
        return float(np.sum(2.0 * self.c**2) + np.sum(self.a**2 * 2.0 * self.p / self.q**2) + self.g2 + dg)

    @property
    def continuous(self) -> bool:
        """Whether any term has a density (a continuous Laplace or Gaussian one)."""
        return bool(self.c.size) or self.g2 > 0

    @property
    def steps(self) -> np.ndarray:
        """The discrete terms' lattice steps ``|A_k|`` (Laplace, then Gaussian)."""
        return np.concatenate([self.a, self.ga]) if self.ga.size else self.a

    @property
    def empty(self) -> bool:
        return not (self.c.size or self.a.size or self.ga.size or self.g2 > 0)

    @property
    def subgaussian(self) -> float:
        """``v`` with ``E e^{sG} ≤ e^{v s²/2}`` for the Gaussian part ``G`` (CKS20 Cor. 9 for the discrete ones)."""
        return float(self.g2 + np.sum((self.ga * self.gs) ** 2))

    @property
    def max_scale(self) -> float:
        """The widest Laplace term's scale (continuous ``c`` or discrete ``|A|·b``; 0 without any)."""
        disc = self.a / -np.log1p(-self.q) if self.a.size else np.zeros(0)
        return float(max(np.max(self.c, initial=0.0), np.max(disc, initial=0.0)))

    @cached_property
    def series(self) -> np.ndarray:
        """Coefficients of ``−Σ_{k<n} log1p((c_k t)²)`` in ``u = (c_{n−1} t)²``: row ``n − 1`` holds
        ``(−1)^{j+1}/j · Σ_{k<n} (c_k/c_{n−1})^{2j}``, ``j = 1 … J`` (each sum between 1 and ``n``).

        The sums come from a running log-sum-exp, so no power of a small ratio underflows them.
        """
        with np.errstate(divide="ignore"):
            logc2 = 2.0 * np.log(self.c)
        powers = np.arange(1, _SERIES_TERMS + 1)[None, :] * logc2[:, None]  # (m, J): log c_k^{2j}
        ratio = np.exp(np.logaddexp.accumulate(powers, axis=0) - powers)
        sign = np.where(np.arange(_SERIES_TERMS) % 2 == 0, -1.0, 1.0) / np.arange(1, _SERIES_TERMS + 1)
        return np.ascontiguousarray(ratio * sign[None, :])


def make_components(
    coefficients: np.ndarray, scales: np.ndarray, discrete: np.ndarray, gaussian: np.ndarray | None = None
) -> Components:
    """The terms ``|A_k| N_k`` (zeros dropped): Laplace unless ``gaussian`` marks a row, lattice where
    ``discrete`` does; for a Gaussian row the scale ``b_k`` is its standard deviation σ_k."""
    keep = coefficients != 0
    gauss = np.zeros(coefficients.shape, bool) if gaussian is None else np.asarray(gaussian, bool)
    A, b, d, g = np.abs(coefficients[keep]), scales[keep], discrete[keep], gauss[keep]
    lap = ~g
    c = np.sort(A[lap & ~d] * b[lap & ~d])
    a, bd = A[lap & d], b[lap & d]
    p = np.exp(-1.0 / bd)
    q = -np.expm1(-1.0 / bd)
    order = np.argsort(-(a**2) * p / q**2, kind="stable")
    g2 = float(np.sum((A[g & ~d] * b[g & ~d]) ** 2))
    ga, gs = A[g & d], b[g & d]
    wide = np.argsort(-((ga * gs) ** 2), kind="stable")
    return Components(c=c, a=a[order], p=p[order], q=q[order], g2=g2, ga=ga[wide], gs=gs[wide])


# ---------------------------------------------------------------- characteristic function


def log_phi(
    t: np.ndarray, comp: Components, skip: np.ndarray | None = None, steps: tuple[int, float] | None = None
) -> np.ndarray:
    """``log φ(t)`` of ``S`` (real: S is symmetric), clipped at ``_LOG_TINY``.

    Continuous factors ``1/(1+c²t²)`` with ``|c t| < 0.5`` enter through prefix power sums
    ``Σ c^{2j}`` (the series of ``log1p``), so they cost O(m + L·J) instead of O(m·L); the rest are
    evaluated only where the running product is still above ``e^-80`` (each factor is ≤ 1, so any
    partial product bounds |φ|). ``skip`` marks frequencies already known to be negligible.

    ``steps = (j0, dt)`` says that ``t`` is the progression ``(j0 + i)·dt``, ``i = 0, 1, …`` (``j0 ≥ 0``):
    the discrete factors' ``sin((j0 + i)θ)`` then come from the angle-addition formula over blocks of
    ``i`` (two products and a sum from tables of ``sin``/``cos`` at the block starts and offsets) instead of
    a ``sin`` per frequency and term, the bulk of the work for a sum of many discrete terms; the angle
    is then ``j·θ`` rounded once per term rather than per product (the two differ by rounding, ~1e-14).
    """
    t = np.abs(np.asarray(t, dtype=float))
    out = np.zeros(t.shape) if not comp.g2 else -0.5 * comp.g2 * t * t  # the continuous Gaussians
    live = np.ones(t.shape, bool) if skip is None else ~skip
    c = comp.c
    if 0 < c.size <= 48:  # few terms: evaluating each is cheaper than the series
        for ck in c:
            out -= np.log1p((ck * t) ** 2)
    elif c.size:
        # the small ones' series in u = (c_{n−1} t)² < 1/4 (n of them at t), by Horner from the top term
        with np.errstate(divide="ignore"):
            n_small = np.searchsorted(c, _SERIES_X / t, side="left")
        has = np.flatnonzero(n_small)
        if has.size:
            top = n_small[has] - 1
            u = (c[top] * t[has]) ** 2
            coef = comp.series[top]  # (points, J)
            acc = coef[:, -1].copy()
            for j in range(_SERIES_TERMS - 2, -1, -1):
                acc *= u
                acc += coef[:, j]
            out[has] += acc * u
        live &= out > _LOG_TINY
        # the large components at each live frequency: a suffix of the sorted scales
        n_large = c.size - n_small
        idx = np.flatnonzero(live & (n_large > 0))
        order = idx[np.argsort(n_large[idx])]
        lo, chunk = 0, 8
        while lo < c.size:  # chunks grow: the largest few often take a frequency below e^-80 alone
            # frequencies with more than `lo` large components still need components c[-lo-chunk:-lo]
            sel = order[n_large[order] > lo]
            sel = sel[out[sel] > _LOG_TINY]
            if not sel.size:
                break
            cc = c[c.size - min(c.size, lo + chunk) : c.size - lo]
            x = np.outer(t[sel], cc)
            rank = np.arange(cc.size)[::-1] + lo  # position counted from the largest
            if n_large[sel].min() < lo + cc.size:  # some frequencies have fewer large ones than that
                x = np.where(rank[None, :] < n_large[sel][:, None], x, 0.0)
            out[sel] -= np.log1p(x * x).sum(axis=1)
            lo, chunk = lo + cc.size, min(2 * chunk, 256)
    live &= out > _LOG_TINY
    for a, s in zip(comp.ga, comp.gs):  # discrete Gaussians: theta functions, where still alive
        sel = np.flatnonzero(live)
        if not sel.size:
            break
        out[sel] += _dg.log_cf(a * t[sel], s)
        live[sel] = out[sel] > _LOG_TINY
    if steps is not None and comp.a.size:
        _discrete_steps(out, live, comp, *steps)
        return np.maximum(out, _LOG_TINY)
    lo, step = 0, 8
    while lo < comp.a.size:  # chunks grow: the first few terms already prune most frequencies
        sel = np.flatnonzero(live)
        if not sel.size:
            break
        a, p, q = comp.a[lo : lo + step], comp.p[lo : lo + step], comp.q[lo : lo + step]
        lo, step = lo + step, min(2 * step, 256)
        # φ = (1−p)² / (1 − 2p cos x + p²) = q² / (q² + 4p sin²(x/2)): no cancellation when p → 1
        sin2 = np.sin(0.5 * np.outer(t[sel], a)) ** 2
        out[sel] += (2 * np.log(q) - np.log(q * q + 4 * p * sin2)).sum(axis=1)
        live[sel] = out[sel] > _LOG_TINY
    return np.maximum(out, _LOG_TINY)


_BLOCK = 1 << 12  # frequencies per block of the progression kernel (its temporaries stay in cache)
_FIRST = 8  # terms in the first group (the widest): groups then double


def _discrete_steps(out: np.ndarray, live: np.ndarray, comp: Components, j0: int, dt: float) -> None:
    """Adds the discrete factors' ``log φ`` at ``t_i = (j0 + i)·dt`` to ``out`` where ``live``.

    ``sin((j0 + i)θ_k)`` with ``θ_k = a_k·dt/2`` comes from ``sin(x + y) = sin x cos y + cos x sin y`` with
    ``i = B·u + v``: tables of ``O(√n)`` sines and cosines at the block starts and offsets, then two
    products and a sum per value (term by term, each a block of whole rows ``u`` against all offsets
    ``v``: long contiguous loops, no gathers); ``log φ_k = −log1p(4p/q² · sin²)`` (the same as
    ``2 log q − log(q² + 4p sin²)``). A block of frequencies stops as soon as all of it is below
    ``e^-80`` (each factor is ≤ 1).
    """
    n, m = out.size, comp.a.size
    theta = 0.5 * float(dt) * comp.a
    B = math.isqrt(max(n - 1, 0)) + 1
    U = -(-n // B)
    starts = np.outer(theta, j0 + B * np.arange(U))
    offsets = np.outer(theta, np.arange(B))
    su, cu, sv, cv = np.sin(starts), np.cos(starts), np.sin(offsets)[:, None, :], np.cos(offsets)[:, None, :]
    k = (4.0 * comp.p / (comp.q * comp.q))[:, None, None]
    rows = min(U, max(1, _BLOCK // B))
    x, y = np.empty((min(m, 256), rows, B)), np.empty((min(m, 256), rows, B))  # one group's temporaries
    for u0 in range(0, U, rows):
        r = min(rows, U - u0)
        i0, i1 = u0 * B, min(n, (u0 + r) * B)
        here = live[i0:i1]
        if not here.any():
            continue
        acc = out[i0:i1].copy()
        whole = bool(here.all())
        lo, step = 0, _FIRST
        while lo < m:  # term groups grow: the widest terms come first and often settle the block
            hi = min(m, lo + step)
            xa, ya = x[: hi - lo, :r], y[: hi - lo, :r]
            np.multiply(su[lo:hi, u0 : u0 + r, None], cv[lo:hi], out=xa)
            np.multiply(cu[lo:hi, u0 : u0 + r, None], sv[lo:hi], out=ya)
            xa += ya
            xa *= xa
            xa *= k[lo:hi]
            np.log1p(xa, out=xa)
            acc -= xa.sum(axis=0).reshape(-1)[: i1 - i0]
            lo, step = hi, min(2 * step, 256)
            if hi < m and not np.any((acc if whole else acc[here]) > _LOG_TINY):
                break
        if whole:
            out[i0:i1] = acc
        else:
            out[i0:i1] = np.where(here, acc, out[i0:i1])


def phi(t: np.ndarray, comp: Components, steps: tuple[int, float] | None = None) -> np.ndarray:
    v = np.exp(log_phi(t, comp, steps=steps))
    return np.where(v <= math.exp(_LOG_TINY) * 1.0000001, 0.0, v)


def phi_nodes(start: int, stop: int, period: float, comp: Components) -> np.ndarray:
    """``φ(2πj/P)`` for ``j = start … stop − 1`` (``start ≥ 0``): the nodes of Selberg's brackets, an
    arithmetic progression (see :func:`log_phi`'s ``steps``)."""
    if stop <= start:
        return np.zeros(0)
    return phi(2.0 * math.pi * (np.arange(start, stop) / period), comp, steps=(start, 2.0 * math.pi / period))


def _even(
    f: Callable[[np.ndarray, Components, tuple[int, float] | None], np.ndarray],
    t: np.ndarray,
    comp: Components,
    dt: float | None = None,
) -> np.ndarray:
    """``f(t, comp)`` for an even ``f`` on a grid ordered like ``fftfreq`` of odd length (``t[L−k] = −t[k]``):
    the non-negative half is evaluated, the rest mirrored. ``dt``: ``t[k] = k·dt`` (see :func:`log_phi`)."""
    L = t.size
    if L % 2 == 0 or L < 3:
        return f(t, comp, None)
    half = f(t[: (L + 1) // 2], comp, None if dt is None else (0, dt))
    return np.concatenate([half, half[:0:-1]])
