"""Numerical kernels behind :mod:`dpdesk.engine.inference.posterior`: the grid and the three mass-function methods.

This module owns the arithmetic that turns a noise mixture ``S = Σ_k A_k N_k`` (independent continuous
or discrete Laplace or Gaussian ``N_k``) into probability masses on a grid of bins centred on ``j·h``: the tail bound
that sizes the grid, the ``fft`` method with its rigorous aliasing bound, the exact lattice transform, the
literal paper Algorithm 2 (``direct``) and Algorithm 1 (``mc``). Everything here works on offsets from
the centre; :mod:`dpdesk.engine.inference.posterior` validates input and wraps the result. The
characteristic function itself is :mod:`~dpdesk.engine.inference.charfn`'s. Private to the engine.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from statistics import NormalDist
from typing import overload

import numpy as np

from dpdesk.engine.errors import Cancelled
from dpdesk.engine.inference.aliases import alias_residual, aliases, discrete_aliases
from dpdesk.engine.inference.charfn import Components, _even, log_phi, make_components, phi, phi_nodes
from dpdesk.engine.inference.gauss_kernels import dg_half_width, fft_gaussian, gauss_bins, lattice_bins
from dpdesk.engine.mechanisms import discrete_gaussian as _dg

# the characteristic-function names are re-exported: the kernels' callers read them here
__all__ = [
    "LATTICE_MAX_POINTS",
    "OUTPUT_POINTS",
    "Components",
    "common_step",
    "direct",
    "draw",
    "fast_len",
    "fft_general",
    "fft_lattice",
    "histogram",
    "lattice_step",
    "log_phi",
    "make_components",
    "nice_spacing",
    "odd_fast_len",
    "phi",
    "phi_nodes",
    "tail_halfwidth",
]

LATTICE_MAX_POINTS = 2**20 + 1
OUTPUT_POINTS = 2000


def _fftconvolve(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Full linear convolution through real FFTs (scipy.signal's, without importing scipy.signal)."""
    n = u.size + v.size - 1
    size = fast_len(n)
    return np.fft.irfft(np.fft.rfft(u, size) * np.fft.rfft(v, size), size)[:n]


def fast_len(n: int) -> int:
    """The smallest 5-smooth integer ≥ n (a length pocketfft transforms fastest). numpy's FFT (the same
    pocketfft as scipy.fft) is used throughout: importing scipy.fft costs a cold command ~0.1 s."""
    best, p2 = None, 1
    while True:
        p3 = p2
        while True:
            p5 = p3
            while p5 < n:
                p5 *= 5
            best = p5 if best is None else min(best, p5)
            if p3 >= n:
                break
            p3 *= 3
        if p2 >= n:
            return best
        p2 *= 2


def _check(cancelled: Callable[[], bool] | None) -> None:
    if cancelled is not None and cancelled():
        raise Cancelled("posterior computation cancelled")


# ---------------------------------------------------------------- tail bound (Chernoff) and grid


def tail_halfwidth(comp: Components, tail: float) -> float:
    """Smallest T found with ``P(|S| > T) <= tail`` by a Chernoff bound over a grid of tilts.

    The Laplace terms' moment generating functions are finite below ``s = 1/c_max``; the Gaussian part
    adds ``v s²/2`` to ``log M(s)`` (``v``: :attr:`Components.subgaussian`; the discrete Gaussian's is
    at most the continuous one's, CKS20 Cor. 9), and brings tilts of its own around ``√(2 ln(2/tail)/v)``.
    """
    cmax = comp.max_scale
    v = comp.subgaussian
    parts = []
    if cmax > 0:
        u = np.concatenate([np.linspace(0.02, 0.9, 24), 1 - np.geomspace(0.1, 1e-4, 16)])
        parts.append(u / cmax)
    if v > 0:
        sg = math.sqrt(2.0 * math.log(2.0 / tail) / v) * np.geomspace(0.02, 2.0, 32)
        parts.append(sg[sg * cmax < 1 - 1e-4] if cmax > 0 else sg)
    s = np.concatenate(parts)
    logm = 0.5 * v * s * s
    for lo in range(0, comp.c.size, 512):
        x = np.outer(s, comp.c[lo : lo + 512]) ** 2
        logm -= np.log1p(-x).sum(axis=1)
    for lo in range(0, comp.a.size, 512):
        a, q = comp.a[lo : lo + 512], comp.q[lo : lo + 512]
        r = -np.log1p(-q)  # 1/b
        sa = np.outer(s, a)
        # M(s) of a·K: q² / ((1 − p e^{sa})(1 − p e^{−sa})), with 1 − p e^{±sa} = −expm1(±sa − 1/b)
        logm += (2 * np.log(q) - np.log(-np.expm1(sa - r)) - np.log(-np.expm1(-sa - r))).sum(axis=1)
    # P(S > T) <= exp(log M(s) - sT); both tails together <= tail
    return float(np.min((logm - math.log(tail / 2.0)) / s))


def nice_spacing(raw: float) -> float:
    """The smallest of 1, 2, 5 × 10^k at least ``raw`` (readable bin widths)."""
    k = math.floor(math.log10(raw))
    for m in (1.0, 2.0, 5.0, 10.0):
        if m * 10.0**k >= raw * (1 - 1e-12):
            return m * 10.0**k
    return 10.0 ** (k + 1)  # pragma: no cover


def odd_fast_len(n: int) -> int:
    """The smallest odd 5-smooth integer ≥ n (odd keeps the grid symmetric about 0): the least ``3^i 5^k``
    at or above it (they are sparse: listing them beats testing every odd number)."""
    n = max(n, 1)
    best, p5 = None, 1
    while True:
        p = p5
        while p < n:
            p *= 3
        best = p if best is None else min(best, p)
        if p5 >= n:
            return best
        p5 *= 5


def lattice_step(comp: Components) -> float | None:
    """The step g of the lattice ``gZ`` that all discrete atoms live on, or None (paper-free extension)."""
    if comp.continuous or not comp.steps.size:
        return None
    return common_step(comp.steps)


def common_step(a: np.ndarray) -> float | None:
    """A step ``g`` of which every (positive) ``a`` is an integer multiple: their gcd, or ``min/q`` for ``q ≤ 12``."""
    if np.all(a == np.round(a)):
        return float(np.gcd.reduce(a.astype(np.int64)))
    amin = float(a.min())
    for q in range(1, 13):
        ratio = a / (amin / q)
        if np.all(np.abs(ratio - np.round(ratio)) <= 1e-9 * ratio):
            return amin / q
    return None


@overload
def fft_general(
    comp: Components,
    h: float,
    n_out: int,
    target: float,
    cancelled: Callable[[], bool] | None = None,
    give_up: None = None,
) -> tuple[np.ndarray, float]: ...


@overload
def fft_general(
    comp: Components,
    h: float,
    n_out: int,
    target: float,
    cancelled: Callable[[], bool] | None = None,
    *,
    give_up: Callable[[float], bool],
) -> tuple[np.ndarray | None, float]: ...


def fft_general(
    comp: Components,
    h: float,
    n_out: int,
    target: float,
    cancelled: Callable[[], bool] | None = None,
    give_up: Callable[[float], bool] | None = None,
) -> tuple[np.ndarray | None, float]:
    """Bin masses of S on ``n_out`` bins of width ``h`` (centred on ``jh``) and a bound on their TV error.

    With at least one continuous component (largest scale ``c1``, the rest ``R``), the bin masses'
    DTFT is ``Σ_n φ(t_n) sinc(t_n h_f/2)`` over all aliases ``t_n = (ω + 2πn)/h_f``. Terms with
    ``|n| ≤ N`` are summed explicitly; beyond, either they are dropped (error ``Σ|φ1 sinc R(t_n)|``)
    or ``R(t_n)`` is replaced by ``R(t_0)``, whose alias sum against Laplace(c1) is known in closed
    form (error ``Σ|φ1 sinc (R(t_n) − R(t_0))|``) -- whichever bound is smaller at that frequency.
    The fine grid ``h_f = h/r`` and ``N`` grow until ``sqrt(Σ_k E_k²)`` (Parseval + Cauchy-Schwarz:
    an ℓ1 bound on the error of the fine masses, hence of the aggregated ones) is within ``target``.
    Without continuous components (discrete noise, non-lattice coefficients) no rigorous bound is
    available; the returned figure is the size of the last aliases summed, an estimate.

    ``give_up(err)``, when given, is asked with the error bound the masses would carry once the aliases
    are known (with a continuous component): when it answers True, ``(None, err)`` is returned without
    summing them, since the caller would discard masses that loose. ``φ`` is even and, ``L`` being odd,
    the frequencies of aliases ``n`` and ``−n`` (and of ``w`` itself) are mirror images: each ``|t|`` is
    evaluated once.

    Continuous Gaussian terms are part of the rest ``R`` (they make ``|R(t)| ≤ e^{−g2 t²/2}`` fall fast);
    without any continuous Laplace term, :func:`~.gauss_kernels.fft_gaussian` bounds the aliases by the Gaussian alone.
    """
    if not comp.c.size and comp.g2 > 0:
        return fft_gaussian(comp, h, n_out, target, cancelled, give_up)
    rest = dataclasses.replace(comp, c=comp.c[:-1]) if comp.c.size else comp
    c1 = float(comp.c[-1]) if comp.c.size else None
    var_rest = rest.variance
    top = rest.c[-8:]

    def bound_rest(tau: float) -> float:
        return float(np.prod(1.0 / (1.0 + (top * tau) ** 2))) * math.exp(-0.5 * rest.g2 * tau * tau)

    for r in (1, 3, 5, 9, 15, 25, 45, 75, 135, 225, 405):
        _check(cancelled)
        L = n_out * r
        hf = h / r
        w = 2 * np.pi * np.fft.fftfreq(L)
        if c1 is None:
            break
        r0 = _even(phi, w / hf, rest, 2 * np.pi / (L * hf))
        for N in (0, 1, 2, 4, 8, 16, 32):
            plain, corr = alias_residual(w, hf, c1, bound_rest, r0, var_rest, N)
            err = math.sqrt(float(np.sum(np.minimum(plain, corr) ** 2)))
            if err <= target:
                break
        # give up refining (and report the larger bound) before the work gets out of hand; this
        # happens when discrete terms, whose characteristic functions do not decay, share the
        # posterior with a continuous one
        if err <= target or L * (2 * N + 1) * max(1, rest.c.size + rest.a.size) > 6e5 or L > 2**17:
            break
    if c1 is None:
        X, err = discrete_aliases(comp, w, hf, L)
    else:
        if give_up is not None and give_up(err + 1e-16 * math.sqrt(L) * 4):
            return None, err + 1e-16 * math.sqrt(L) * 4
        X = aliases(w, hf, c1, rest, r0, corr < plain, N, L, cancelled)
    fine = np.fft.fftshift(np.real(np.fft.ifft(X)))
    mass = fine.reshape(n_out, r).sum(axis=1)
    return np.clip(mass, 0.0, None), err + 1e-16 * math.sqrt(L) * 4


def fft_lattice(comp: Components, g: float, half: int) -> tuple[np.ndarray, float]:
    """Exact masses of S on ``g·{-half..half}``: the pmf's DFT is φ at ``2πk/(L g)`` with no aliasing."""
    # twice the length, so what wraps around is the tail beyond ±(3·half), not beyond ±half
    L = odd_fast_len(4 * half + 1)
    t = 2 * np.pi * np.fft.fftfreq(L) / g
    full = np.fft.fftshift(np.real(np.fft.ifft(phi(t, comp))))
    mass = full[L // 2 - half : L // 2 + half + 1]
    return np.clip(mass, 0.0, None), 1e-16 * math.sqrt(L) * 4


# ---------------------------------------------------------------- direct (paper Algorithm 2)


def _component_bins(
    h: float, kmax: int, c: float | None = None, a: float | None = None, p: float | None = None
) -> np.ndarray:
    """Masses of one term ``A_k N_k`` on bins ``[jh − h/2, jh + h/2]``, ``|j| ≤ kmax`` (exact per term)."""
    edges = (np.arange(-kmax, kmax + 2) - 0.5) * h
    if c is not None:
        cdf = np.where(
            edges < 0, 0.5 * np.exp(np.minimum(edges, 0) / c), 1 - 0.5 * np.exp(-np.maximum(edges, 0) / c)
        )
    elif a is not None and p is not None:
        # P(aN < x) for the discrete Laplace: atoms at a·n, bins half-open on the right
        n = np.ceil(edges / a - 1e-12) - 1  # largest n with a n < edge
        # each branch's power is clipped to where that branch is used, so neither overflows
        cdf = np.where(n < 0, p ** np.maximum(-n, 0) / (1 + p), 1 - p ** np.maximum(n + 1, 0) / (1 + p))
    else:
        raise ValueError("a term is either continuous (c) or discrete (a and p)")
    return np.diff(cdf)


def direct(
    comp: Components,
    h: float,
    gamma: float,
    progress: Callable[[float], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> tuple[np.ndarray, float]:
    """Paper Algorithm 2: per-term truncated bin masses (lost mass γ/m each), convolved shortest first.

    The result is the law of ``Σ_k round_h(A_k N_k)``, which differs from the binned law of ``S``
    by the per-term rounding; ``discretisation`` estimates that second-order effect
    (``V·∫|f''|/4`` with ``V = Σ min(h²/12, Var term)`` and ``∫|f''| ≤ 2/c_max²`` for the widest continuous
    Laplace term, ``4/(σ²√(2πe))`` for the continuous Gaussian part). Exact when every term lives on the
    lattice ``hZ``. The continuous Gaussian terms are one term (their sum is Gaussian).
    """
    m = comp.c.size + comp.a.size + comp.ga.size + (comp.g2 > 0)
    each = gamma / m
    vectors = []
    for c in comp.c:
        k = int(math.ceil(c * math.log(1 / each) / h + 0.5))
        vectors.append(_component_bins(h, k, c=c))
    for a, p, q in zip(comp.a, comp.p, comp.q):
        n = math.ceil(math.log(each * (1 + p) / 2) / math.log1p(-q)) if p > 0 else 0
        k = int(math.ceil(a * n / h + 0.5))
        vectors.append(_component_bins(h, k, a=a, p=p))
    if comp.g2 > 0:
        sd = math.sqrt(comp.g2)
        k = int(math.ceil(sd * -NormalDist().inv_cdf(each / 2) / h + 0.5))
        vectors.append(gauss_bins(h, k, sd))
    for a, sigma in zip(comp.ga, comp.gs):
        n = dg_half_width(sigma, each)
        vectors.append(lattice_bins(h, a, n, _dg.pmf(sigma, np.arange(-n, n + 1))))
    vectors.sort(key=len)
    out = vectors[0]
    for i, v in enumerate(vectors[1:], 1):
        _check(cancelled)
        out = _fftconvolve(out, v) if len(v) > 64 else np.convolve(out, v)
        if progress is not None and i % 16 == 0:
            progress(i / m)
    if progress is not None:
        progress(1.0)
    v_disc = np.sum(np.minimum(h * h / 12, 2 * comp.c**2)) + min(h * h / 12, comp.g2)
    steps = comp.steps
    on_lattice = np.abs(steps / h - np.round(steps / h)) <= 1e-9 * steps / h
    var_dg = np.array([a * a * _dg.variance(s) for a, s in zip(comp.ga, comp.gs)])
    var_d = np.concatenate([comp.a**2 * 2 * comp.p / comp.q**2, var_dg])
    v_disc += np.sum(np.where(on_lattice, 0.0, np.minimum(h * h / 12, var_d)))
    # ∫|f''| of the density: at most that of any one continuous part (the rest only smooths it)
    # (the widest Laplace term's, continuous or not, as always; a discrete Gaussian's as if continuous)
    curv = [2.0 / comp.max_scale**2] if comp.max_scale > 0 else []
    if comp.g2 > 0:
        curv.append(4.0 / (comp.g2 * math.sqrt(2 * math.pi * math.e)))
    if comp.ga.size:
        curv.append(4.0 / (float(np.max(comp.ga * comp.gs)) ** 2 * math.sqrt(2 * math.pi * math.e)))
    discretisation = float(v_disc * min(curv) / 4) if v_disc > 0 else 0.0
    return np.clip(out, 0.0, None), discretisation


# ---------------------------------------------------------------- mc (paper Algorithm 1)


def draw(comp: Components, rng: np.random.Generator, n: int) -> np.ndarray:
    """n draws of S, vectorised over samples (a chunk of components at a time)."""
    s = np.zeros(n)
    for c in np.array_split(comp.c, max(1, comp.c.size // 64)) if comp.c.size else []:
        s += (rng.laplace(0.0, 1.0, size=(n, c.size)) * c).sum(axis=1)
    for lo in range(0, comp.a.size, 64):
        a, q = comp.a[lo : lo + 64], comp.q[lo : lo + 64]
        # discrete Laplace = difference of two geometric counts on {0, 1, ...}
        g1 = rng.geometric(q, size=(n, a.size)) - rng.geometric(q, size=(n, a.size))
        s += (g1 * a).sum(axis=1)
    if comp.g2 > 0:
        s += rng.normal(0.0, math.sqrt(comp.g2), n)
    for a, sigma in zip(comp.ga, comp.gs):
        s += a * _dg.draw(rng, float(sigma), n)
    return s


def histogram(samples: np.ndarray, h: float, half: int) -> np.ndarray:
    idx = np.rint(samples / h).astype(np.int64) + half
    idx = idx[(idx >= 0) & (idx <= 2 * half)]
    return np.bincount(idx, minlength=2 * half + 1).astype(float)
