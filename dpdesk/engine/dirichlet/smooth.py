"""Local and smooth sensitivity of the Hellinger utility, and the calibration that makes it private.

Everything here except :func:`calibrate` reads the data and must never be released, recorded in the
ledger, or used to choose anything: it only sets the scale inside one mechanism draw
(docs/dirichlet.md §4). Counts are the ``k`` category counts of the requested box; neighbours add or
remove one record, i.e. change one count by one.

``local_bound(c)`` bounds the local sensitivity of ``u_c(r) = -H(Dir(prior + c), r)`` over *every*
candidate set by the triangle inequality: ``max over neighbours c' of H(Dir(prior+c), Dir(prior+c'))``.
``smooth_bound(c, β) = max_{c'} local_bound(c')·exp(-β‖c - c'‖₁)`` is then a β-smooth upper bound on
the local sensitivity (Nissim–Raskhodnikova–Smith 2007, Def. 2.1): ‖·‖₁ moves by at most one between
neighbours, and the maximum includes ``c' = c``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpdesk.engine.dirichlet.hellinger import global_sensitivity, step_hellinger
from dpdesk.engine.errors import DpdeskError

__all__ = ["SmoothCalibration", "calibrate", "local_bound", "smooth_bound", "smooth_epsilon"]


def _as_counts(prior: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    prior = np.asarray(prior, dtype=float)
    counts = np.asarray(counts, dtype=np.int64)
    if counts.shape != prior.shape or np.any(counts < 0):
        raise ValueError(f"counts ({counts.tolist()}) must be {prior.size} non-negative integers")
    return prior, counts


def local_bound(prior: np.ndarray, counts: np.ndarray) -> float:
    """``max_{c' ~ c} H(Dir(prior + c), Dir(prior + c'))`` over add/remove neighbours ``c'``."""
    prior, counts = _as_counts(prior, counts)
    p = prior + counts
    total = p.sum()
    best = float(step_hellinger(p, total).max())  # add one record of category i
    has = counts >= 1
    if has.any():  # remove one record of category i
        best = max(best, float(step_hellinger(p[has] - 1.0, total - 1.0).max()))
    return best


def _best_over_added(p: np.ndarray, t: np.ndarray, d0: np.ndarray, room: np.ndarray, beta: float) -> float:
    """``max over 0 ≤ u ≤ room of exp(-β(d0 + u))·step(p, t + u)``, for vectors of starting tables.

    ``ln step(p, T)`` is concave in ``T`` (``ln g`` is concave, so ``1 - g(p)/g(T)`` is concave in
    ``T``, and so are its square root and logarithm), hence ``ln step(p, t + u) - βu`` is concave in
    ``u`` and its integer maximum is where the forward difference first turns non-positive: a binary
    search finds it, and its neighbours are checked against rounding.
    """

    def score(u: np.ndarray) -> np.ndarray:
        return np.asarray(np.log(np.maximum(step_hellinger(p, t + u), 1e-300)) - beta * u)

    lo, hi = np.zeros_like(room), room.copy()
    while np.any(lo < hi):
        mid = (lo + hi) // 2
        down = score(mid + 1) <= score(mid)
        hi = np.where(down & (lo < hi), mid, hi)
        lo = np.where(~down & (lo < hi), mid + 1, lo)
    best = 0.0
    for shift in (-1, 0, 1):
        u = np.clip(lo + shift, 0, room)
        best = max(best, float(np.max(np.exp(-beta * (d0 + u)) * step_hellinger(p, t + u))))
    return best


def smooth_bound(prior: np.ndarray, counts: np.ndarray, beta: float) -> float:
    """``S_β(c) = max_{c'} local_bound(c')·exp(-β‖c - c'‖₁)``, the β-smooth sensitivity bound.

    Only tables that empty category ``i`` by ``r`` records and add ``u`` records elsewhere can raise
    category ``i``'s step (the step grows as ``p_i`` falls and as the total rises), so the search
    runs over ``(i, r, u)``: every ``r`` explicitly, and ``u`` by :func:`_best_over_added`. It stops at
    the distance beyond which even the global sensitivity, discounted by ``exp(-βd)``, cannot beat the
    best value found, so the result is exact, not a truncation. ``β = 0`` gives the global sensitivity.
    """
    prior, counts = _as_counts(prior, counts)
    if not beta >= 0:
        raise ValueError(f"beta ({beta}) must be non-negative")
    glob = global_sensitivity(prior)
    best = local_bound(prior, counts)
    if beta == 0:
        return glob
    if best >= glob:
        return best
    far = int(math.ceil(math.log(glob / best) / beta))
    p = prior + counts
    total = float(p.sum())
    for i in range(prior.size):
        r = np.arange(int(min(counts[i], far)) + 1)
        # add-one step of category i at the table with r of its records removed and u added elsewhere
        best = max(best, _best_over_added(p[i] - r, total - r, r, far - r, beta))
        rem = r[counts[i] - r >= 1]  # the remove-one step of that table (one more record of i gone)
        if rem.size:
            best = max(best, _best_over_added(p[i] - rem - 1.0, total - rem - 1.0, rem, far - rem, beta))
    return best


def smooth_epsilon(eps0: float, beta: float, n_candidates: int, delta: float) -> float:
    """The ε of the smooth-sensitivity exponential mechanism (docs/dirichlet.md Thm 4.1).

    ``P_c(r) ∝ exp(ε₀·v_c(r) / (2·S(c)))``, with ``v_c = u_c - max u_c ∈ [-1, 0]`` and ``S`` a β-smooth
    upper bound on ``v``'s local sensitivity, is ``(ε, δ)``-DP with
    ``ε = ε₀ + (e^β - 1)·ln(N/δ)``.
    """
    return eps0 + math.expm1(beta) * math.log(n_candidates / delta)


@dataclass(frozen=True)
class SmoothCalibration:
    """Public parameters of a smooth-sensitivity release: ``ε₀`` and ``β`` meeting ``(alpha, delta)``."""

    alpha: float
    delta: float
    n_candidates: int
    split: float
    eps0: float
    beta: float


def calibrate(alpha: float, delta: float, n_candidates: int, split: float = 0.5) -> SmoothCalibration:
    """Spend ``split·α`` on ``ε₀`` and the rest on the smoothness term, exactly meeting Thm 4.1.

    ``β = ln(1 + (1 - split)·α / ln(N/δ))`` so that ``ε₀ + (e^β - 1)·ln(N/δ) = α``. Public inputs only.
    """
    if not (math.isfinite(alpha) and alpha > 0):
        raise DpdeskError(f"budget ({alpha}) must be a positive number")
    if not (0 < delta < 1):
        raise DpdeskError(f"delta ({delta}) must be in (0, 1) for the smooth-sensitivity mechanism")
    if not (0 < split < 1):
        raise DpdeskError(f"split ({split}) must be in (0, 1)")
    if n_candidates < 1:
        raise DpdeskError(f"n_candidates ({n_candidates}) must be at least 1")
    eps0 = split * alpha
    beta = math.log1p((1 - split) * alpha / math.log(n_candidates / delta))
    return SmoothCalibration(alpha, delta, int(n_candidates), split, eps0, beta)
