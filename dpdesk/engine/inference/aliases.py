"""The alias sums of :func:`~dpdesk.engine.inference.grid.fft_general`: the bin masses' DTFT is a sum over
all aliases ``t_n = (ω + 2πn)/h_f`` of the noise sum's characteristic function; these are its explicit
terms, the bound on the rest (dropped, or replaced by Laplace(c1)'s closed-form alias sum against
``R(t_0)``), and the discrete-only estimate.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from dpdesk.engine.errors import Cancelled
from dpdesk.engine.inference.charfn import Components, phi

__all__ = ["alias_residual", "aliases", "discrete_aliases"]


def _check(cancelled: Callable[[], bool] | None) -> None:
    if cancelled is not None and cancelled():
        raise Cancelled("posterior computation cancelled")


def _laplace_bins_dtft(c1: float, h: float, w: np.ndarray) -> np.ndarray:
    """Exact DTFT at ``w`` of the bin masses of Laplace(c1) on bins ``[jh - h/2, jh + h/2]`` (all aliases)."""
    x = h / c1
    # 2 sinh(x/2)·e^{-x} written as -e^{-x/2}·expm1(-x): no overflow when c1 ≪ h
    coef = -math.exp(-x / 2) * math.expm1(-x)
    # Re e^{iw}/(1 − e^{−x} e^{iw}) = (cos w − e^{−x}) / (1 − 2e^{−x} cos w + e^{−2x}), in real arithmetic and
    # written with 1 − e^{−x} = −expm1(−x) and 1 − cos w = 2 sin²(w/2): no cancellation near w = 0
    d = -math.expm1(-x)
    s2 = 2.0 * np.sin(w / 2) ** 2
    out: np.ndarray = -np.expm1(-x / 2) + coef * (d - s2) / (d * d + 2.0 * math.exp(-x) * s2)
    return out


# ---------------------------------------------------------------- fft, general (non-lattice) case


def alias_residual(
    w: np.ndarray,
    hf: float,
    c1: float,
    bound_rest: Callable[[float], float],
    r0: np.ndarray,
    var_rest: float,
    n_from: int,
    mirrored: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Per-frequency bound on ``Σ_{|n|>n_from} |φ1(t_n) sinc_n| · d_n`` for both spectral variants.

    ``d_n`` is ``|R(t_n)|`` for the plain sum and ``|R(t_n) − R(t_0)|`` for the Laplace-corrected one,
    with ``|R(t)| ≤ bound_rest(|t|)`` (monotone) and ``|R(t_n) − R(t_0)| ≤ var_rest (t_n² + t_0²)/2``.
    Blocks of n double in length, so the sum costs O(L log n_max).
    """
    L = w.size
    if mirrored and L % 2 and L >= 3:  # every quantity is even in w (fftfreq order, odd L): mirror a half
        half = (L + 1) // 2
        plain, corr = alias_residual(w[:half], hf, c1, bound_rest, r0[:half], var_rest, n_from, False)
        return np.concatenate([plain, plain[:0:-1]]), np.concatenate([corr, corr[:0:-1]])
    # Every block's weight is a number times |sin(w/2)|: the numbers are summed in Python and the
    # arrays touched once, except in blocks where the variance bound is the smaller somewhere (the first
    # few; it grows as t²), which add min(·,·) per frequency.
    s = np.abs(np.sin(w / 2))
    abs_r0 = np.abs(r0)
    top_r0 = float(np.max(abs_r0))
    t0sq: np.ndarray | None = None
    plain_sum = 0.0  # Σ k_n br_n: the plain sum over blocks, per unit of |sin(w/2)|
    corr_br, corr_r0 = 0.0, 0.0  # Σ k_n br_n and Σ k_n over blocks where the corrected term is br + |R(t0)|
    corr_min: np.ndarray | None = None  # Σ k_n min(br + |R(t0)|, variance bound) over the other blocks
    na = n_from + 1
    while na < 2**24:
        nb = 2 * na
        tau = (2 * na - 1) * math.pi / hf  # lower bound on |t_n| in the block
        tmax = (2 * nb + 1) * math.pi / hf
        k = 2 * (nb - na + 1) / (1 + (c1 * tau) ** 2) / ((na - 0.5) * math.pi)
        br = bound_rest(tau)
        plain_sum += k * br
        if var_rest * tmax**2 / 2 >= br + top_r0:  # the variance bound is the larger everywhere
            corr_br += k * br
            corr_r0 += k
        else:
            if t0sq is None:
                t0sq = (w / hf) ** 2
            term = k * np.minimum(br + abs_r0, var_rest * (tmax**2 + t0sq) / 2)
            corr_min = term if corr_min is None else corr_min + term
        na = nb + 1
    plain = s * plain_sum
    corr = s * (corr_br + corr_r0 * abs_r0 + (corr_min if corr_min is not None else 0.0))
    tail = 2 * s * (hf / (c1 * math.pi)) ** 2 / (4 * math.pi) / (2 * (na - 1.5) ** 2) * 2
    return plain + tail, corr + tail


def _alias_pair(
    tp: np.ndarray,
    tm: np.ndarray,
    need_p: np.ndarray,
    need_m: np.ndarray,
    rest: Components,
    mirror: np.ndarray | None = None,
    steps: tuple[int, float] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``φ_rest`` at the aliases ``tp`` (where ``need_p``) and ``tm`` (where ``need_m``), zero elsewhere.

    With ``mirror`` (``tm[mirror[k]] = −tp[k]``), ``φ(tp)`` serves both: φ is even. With ``steps = (m L,
    dt)`` too, ``tp`` is ``(m L + k)·dt`` for ``k`` in ``fftfreq`` order (``|k| ≤ (L − 1)/2``): a progression
    once its negative half is put first, evaluated whole (see :func:`log_phi`).
    """
    rp, rm = np.zeros(tp.size), np.zeros(tm.size)
    if mirror is None:
        rp[need_p], rm[need_m] = phi(tp[need_p], rest), phi(tm[need_m], rest)
        return rp, rm
    both = need_p | need_m[mirror]
    if steps is not None and both.mean() > 0.5:
        half = (tp.size + 1) // 2
        low = tp.size - half  # entries of k < 0, stored after the non-negative ones
        ph = phi(np.concatenate([tp[half:], tp[:half]]), rest, steps=(steps[0] - low, steps[1]))
        rp[:half], rp[half:] = ph[low:], ph[:low]
    else:
        rp[both] = phi(tp[both], rest)
    rm[need_m] = rp[mirror][need_m]
    rp[~need_p] = 0.0
    return rp, rm


def discrete_aliases(comp: Components, w: np.ndarray, hf: float, L: int) -> tuple[np.ndarray, float]:
    """Discrete terms only: the DTFT summed over aliases ``|n| ≤ 8``, and the size of the next ones (an
    estimate, not a bound: their characteristic functions do not decay)."""
    N = 8
    X = np.zeros(L)
    for n in range(-N, N + 1):
        tn = (w + 2 * np.pi * n) / hf
        X += phi(tn, comp) * np.sinc(tn * hf / (2 * np.pi))
    last = sum(
        phi(tn, comp) * np.abs(np.sinc(tn * hf / (2 * np.pi)))
        for tn in ((w + 2 * np.pi * (N + 1)) / hf, (w - 2 * np.pi * (N + 1)) / hf)
    )
    return X, math.sqrt(float(np.sum(last**2))) * (N + 1)


def aliases(
    w: np.ndarray,
    hf: float,
    c1: float,
    rest: Components,
    r0: np.ndarray,
    use_corr: np.ndarray,
    N: int,
    L: int,
    cancelled: Callable[[], bool] | None,
) -> np.ndarray:
    """With a continuous Laplace component of scale ``c1``: the DTFT over aliases ``|n| ≤ N`` explicitly,
    the rest dropped or (``use_corr``) replaced by Laplace(c1)'s closed-form alias sum against ``R(t_0)``."""
    t0 = w / hf
    X = np.where(
        use_corr,
        _laplace_bins_dtft(c1, hf, w) * r0,
        r0 / (1 + (c1 * t0) ** 2) * np.sinc(t0 * hf / (2 * np.pi)),
    )
    mirror = (-np.arange(L)) % L if L % 2 else None  # index of -w (odd L: fftfreq is symmetric)
    for m in range(1, N + 1):
        _check(cancelled)
        tp, tm = (w + 2 * np.pi * m) / hf, (w - 2 * np.pi * m) / hf
        bp = 1 / (1 + (c1 * tp) ** 2) * np.sinc(tp * hf / (2 * np.pi))
        bm = 1 / (1 + (c1 * tm) ** 2) * np.sinc(tm * hf / (2 * np.pi))
        rp, rm = _alias_pair(
            tp,
            tm,
            np.abs(bp) > 1e-30,
            np.abs(bm) > 1e-30,
            rest,
            mirror,
            None if mirror is None else (m * L, 2 * np.pi / (L * hf)),
        )
        X += bp * np.where(use_corr, rp - r0, rp)
        X += bm * np.where(use_corr, rm - r0, rm)
    return X
