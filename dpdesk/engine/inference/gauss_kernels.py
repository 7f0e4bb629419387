"""The Gaussian terms' kernels of the posterior methods in :mod:`~dpdesk.engine.inference.grid`.

A sum of continuous Gaussian terms is one Gaussian (variance ``g2``), whose transform decays like
``e^{−g2 t²/2}``: :func:`fft_gaussian` sums the aliases of the bin masses' transform with a proven bound
from that factor alone, when no continuous Laplace term is there to carry the bound of
:func:`~dpdesk.engine.inference.grid.fft_general`. :func:`gauss_bins` and :func:`lattice_bins` are the
per-term bin masses of paper Algorithm 2 (``direct``) for a Gaussian and for any lattice term given its
masses; :func:`dg_half_width` cuts a discrete Gaussian where its tails hold a given mass. Private to the
engine.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from dpdesk.engine.errors import Cancelled
from dpdesk.engine.inference.charfn import Components, phi

__all__ = ["dg_half_width", "fft_gaussian", "gauss_bins", "lattice_bins"]


def _check(cancelled: Callable[[], bool] | None) -> None:
    if cancelled is not None and cancelled():
        raise Cancelled("posterior computation cancelled")


def _gauss_alias_sum(g2: float, hf: float, n_from: int) -> float:
    """``Σ_{|n|>n_from} e^{−g2 τ_n²/2} · 2/((2|n|−1)π)`` with ``τ_n = (2|n|−1)π/h_f``: times ``|sin(ω/2)|`` it
    bounds the aliases beyond ``n_from`` of the bin masses' transform at ``ω`` (see :func:`_fft_gaussian`)."""
    total = 0.0
    n = n_from + 1
    while True:
        k = (2 * n - 1) * math.pi
        term = 2.0 * math.exp(-0.5 * g2 * (k / hf) ** 2) * 2.0 / k
        total += term
        if term <= 1e-18 * total or term == 0.0:
            return total
        n += 1


def fft_gaussian(
    comp: Components,
    h: float,
    n_out: int,
    target: float,
    cancelled: Callable[[], bool] | None = None,
    give_up: Callable[[float], bool] | None = None,
) -> tuple[np.ndarray | None, float]:
    """:func:`~dpdesk.engine.inference.grid.fft_general` when the continuous part is Gaussian only (variance ``g2``, the rest discrete).

    The bin masses' transform is ``X(ω) = Σ_n φ(t_n) sinc(t_n h_f/2)``, ``t_n = (ω + 2πn)/h_f``. For
    ``|ω| ≤ π`` and ``n ≠ 0``, ``|t_n| ≥ (2|n|−1)π/h_f``, ``|sin(t_n h_f/2)| = |sin(ω/2)|`` and every factor of
    ``φ`` but the Gaussian's is at most 1 in size, so the aliases beyond ``N`` add at most
    ``|sin(ω/2)| Σ_{|n|>N} e^{−g2 τ_n²/2}·2/((2|n|−1)π)``; ``N`` and the fine grid grow until the ℓ1 bound
    ``√(Σ_k E_k²)`` (as in :func:`~dpdesk.engine.inference.grid.fft_general`) is within ``target``.
    """
    for r in (1, 3, 5, 9, 15, 25, 45, 75, 135):
        _check(cancelled)
        L = n_out * r
        hf = h / r
        w = 2 * np.pi * np.fft.fftfreq(L)
        s_half = np.abs(np.sin(w / 2))
        norm = math.sqrt(float(np.sum(s_half**2)))
        for N in (0, 1, 2, 4, 8, 16, 32):
            err = norm * _gauss_alias_sum(comp.g2, hf, N)
            if err <= target:
                break
        if err <= target or L * (2 * N + 1) * max(1, comp.a.size + comp.ga.size) > 6e5 or L > 2**17:
            break
    err += 1e-16 * math.sqrt(L) * 4
    if give_up is not None and give_up(err):
        return None, err
    X = np.zeros(L)
    for n in range(-N, N + 1):
        _check(cancelled)
        tn = (w + 2 * np.pi * n) / hf
        X += phi(tn, comp) * np.sinc(tn * hf / (2 * np.pi))
    fine = np.fft.fftshift(np.real(np.fft.ifft(X)))
    mass = fine.reshape(n_out, r).sum(axis=1)
    return np.clip(mass, 0.0, None), err


def gauss_bins(h: float, kmax: int, sd: float) -> np.ndarray:
    """Masses of a continuous Gaussian of standard deviation ``sd`` on bins ``[jh − h/2, jh + h/2]``."""
    edges = (np.arange(-kmax, kmax + 2) - 0.5) * h / (sd * math.sqrt(2.0))
    erfc = np.vectorize(math.erfc, otypes=[float])
    # each side's cumulative mass from its own tail: no cancellation far out
    cdf = np.where(edges < 0, 0.5 * erfc(-np.minimum(edges, 0.0)), 1.0 - 0.5 * erfc(np.maximum(edges, 0.0)))
    return np.diff(cdf)


def lattice_bins(h: float, a: float, n: int, pmf: np.ndarray) -> np.ndarray:
    """Masses ``pmf`` at ``a·k``, ``|k| ≤ n``, gathered into bins ``[jh − h/2, jh + h/2)`` around 0."""
    kmax = int(math.ceil(a * n / h + 0.5))
    idx = np.floor(a * np.arange(-n, n + 1) / h + 0.5).astype(np.int64) + kmax
    return np.bincount(idx, weights=pmf, minlength=2 * kmax + 1)


def dg_half_width(sigma: float, tail: float) -> int:
    """An ``n`` with ``Pr(|K| > n) ≤ tail`` for ``K ~ N_Z(0, σ²)``: ``Pr(|K| ≥ x) ≤ 2e^{−x²/(2σ²)}``
    (CKS20 Cor. 9's moment bound) at ``x = n + 1``."""
    return max(0, math.ceil(sigma * math.sqrt(2.0 * math.log(2.0 / tail))) - 1)
