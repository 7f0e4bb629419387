"""The law of the discrete Gaussian ``N_Z(0, σ²)``: mass ``∝ exp(−k²/(2σ²))`` on the integers.

Canonne, Kamath and Steinke (2020, "The discrete Gaussian for differential privacy") show that adding it
to an integer query of sensitivity ``Δ`` is ``Δ²/(2σ²)``-zCDP, exactly as the continuous Gaussian, and
OpenDP samples it exactly. Its law is not the continuous one rounded: this module computes what the
accuracy model and the posterior need from the lattice sums themselves, each exact to rounding —

* the normaliser ``Z = Σ_k exp(−k²/(2σ²))`` and the moments ``E K²``, ``E K⁴`` by Poisson summation
  (the Jacobi theta identity ``Σ_k g(k) = Σ_n ĝ(2πn)``, whose terms beyond ``|n| = 3`` are below
  ``e^-170`` for ``σ ≥ 1``) or, for ``σ < 1``, by summing the few integers that carry mass;
* the tail ``Pr(|K| > m)`` by summing the integers beyond ``m`` (``σ ≤ 200``: at most ``40σ`` of them
  carry mass above ``e^-800``) or by the Euler–Maclaurin formula with three correction terms, whose
  remainder is below ``2.2e-3/σ⁵`` (``ζ(6)``-bound on ``∫|f⁽⁶⁾|``; below ``1e-14`` of ``Z`` at σ > 200);
* the characteristic function ``φ(t) = Σ_n e^{−σ²(t−2πn)²/2} / Σ_n e^{−σ²(2πn)²/2}`` (positive everywhere),
  as a logarithm;
* seeded draws by the rejection sampler of CKS20 Algorithm 3 (discrete Laplace proposals), for
  simulations over public quantities only — releases draw from OpenDP.

Examples
--------
>>> abs(variance(2.0) / 4.0 - 1) < 1e-6                  # σ ≥ 1: E K² is σ² to within ~1e-7 σ²
True
>>> round(tail(0.5, 0), 6)                                 # Pr(K ≠ 0) at σ = ½
0.213429
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["draw", "fourth_moment", "log_cf", "normaliser", "pmf", "support", "tail", "variance"]

_POISSON = 1.0  # σ at and above which the theta series is summed (Poisson side), below it the integers
_TERMS = 3  # |n| ≤ 3 on the Poisson side: the next term is below e^{-2π²·16} = e^-315 (σ ≥ 1)
_DIRECT_TAIL = 200.0  # σ up to which a tail is summed integer by integer (≤ 40σ + 2 terms)
_SPAN = 40.0  # exp(−(40σ)²/(2σ²)) = e^-800: beyond 40σ nothing is left to add


def _check_sigma(sigma: float) -> float:
    sigma = float(sigma)
    if not (math.isfinite(sigma) and sigma > 0):
        raise ValueError(f"sigma ({sigma!r}) must be a positive finite number")
    return sigma


def support(sigma: float, tail_mass: float = 1e-300) -> int:
    """An ``n`` with ``Pr(|K| > n) ≤ tail_mass`` (a Gaussian tail bound on the lattice sum; a few too many)."""
    sigma = _check_sigma(sigma)
    return int(math.ceil(sigma * math.sqrt(2.0 * math.log(2.0 / tail_mass)))) + 1


def _direct(sigma: float) -> np.ndarray:
    k = np.arange(0, math.ceil(_SPAN * sigma) + 2, dtype=float)
    return k


def _poisson_side(sigma: float, power: int) -> float:
    """``Σ_k k^power exp(−k²/(2σ²))`` (power 0, 2 or 4) through ``Σ_n ĝ(2πn)``, for σ ≥ 1."""
    total = 0.0
    for n in range(-_TERMS, _TERMS + 1):
        w2 = (2.0 * math.pi * n) ** 2
        s2 = sigma * sigma
        g = math.exp(-s2 * w2 / 2.0)
        if power == 0:
            c = 1.0
        elif power == 2:
            c = s2 - s2 * s2 * w2
        else:
            c = 3.0 * s2 * s2 - 6.0 * s2**3 * w2 + s2**4 * w2 * w2
        total += c * g
    return sigma * math.sqrt(2.0 * math.pi) * total


def normaliser(sigma: float) -> float:
    """``Z = Σ_{k∈ℤ} exp(−k²/(2σ²))``."""
    sigma = _check_sigma(sigma)
    if sigma >= _POISSON:
        return _poisson_side(sigma, 0)
    k = _direct(sigma)
    f = np.exp(-(k * k) / (2.0 * sigma * sigma))
    return float(2.0 * f.sum() - 1.0)


def variance(sigma: float) -> float:
    """``E K²`` (a little below σ² for σ ≥ 1, far below it for small σ)."""
    sigma = _check_sigma(sigma)
    if sigma >= _POISSON:
        return _poisson_side(sigma, 2) / _poisson_side(sigma, 0)
    k = _direct(sigma)
    f = np.exp(-(k * k) / (2.0 * sigma * sigma))
    return float(2.0 * np.sum(k * k * f) / (2.0 * f.sum() - 1.0))


def fourth_moment(sigma: float) -> float:
    """``E K⁴``."""
    sigma = _check_sigma(sigma)
    if sigma >= _POISSON:
        return _poisson_side(sigma, 4) / _poisson_side(sigma, 0)
    k = _direct(sigma)
    f = np.exp(-(k * k) / (2.0 * sigma * sigma))
    return float(2.0 * np.sum(k**4 * f) / (2.0 * f.sum() - 1.0))


def pmf(sigma: float, k: np.ndarray) -> np.ndarray:
    """``Pr(K = k)`` at integers ``k``."""
    sigma = _check_sigma(sigma)
    k = np.asarray(k, dtype=float)
    out: np.ndarray = np.exp(-(k * k) / (2.0 * sigma * sigma)) / normaliser(sigma)
    return out


def _upper_sum(sigma: float, a: int) -> float:
    """``Σ_{k ≥ a} exp(−k²/(2σ²))`` for an integer ``a ≥ 0`` (see the module notes)."""
    s2 = sigma * sigma
    if sigma <= _DIRECT_TAIL:
        k = np.arange(a, a + math.ceil(_SPAN * sigma) + 2, dtype=float)
        return float(np.sum(np.exp(-(k * k) / (2.0 * s2))))
    # Euler–Maclaurin: ∫_a^∞ f + f(a)/2 − f'(a)/12 + f'''(a)/720 − f⁽⁵⁾(a)/30240, f⁽ⁿ⁾ = (−1)ⁿ He_n(y) f / σⁿ
    y = a / sigma
    fa = math.exp(-y * y / 2.0)
    integral = sigma * math.sqrt(math.pi / 2.0) * math.erfc(y / math.sqrt(2.0))
    he1, he3, he5 = y, y**3 - 3.0 * y, y**5 - 10.0 * y**3 + 15.0 * y
    d1, d3, d5 = -he1 * fa / sigma, -he3 * fa / sigma**3, -he5 * fa / sigma**5
    return integral + fa / 2.0 - d1 / 12.0 + d3 / 720.0 - d5 / 30240.0


def tail(sigma: float, m: float) -> float:
    """``Pr(|K| > m)`` (``m ≥ 0``; only ``⌊m⌋`` matters): the mass of the integers beyond ``±⌊m⌋``.

    Examples
    --------
    >>> k = np.arange(-60, 61)
    >>> brute = float(pmf(3.0, k)[np.abs(k) > 4].sum())
    >>> abs(tail(3.0, 4.5) - brute) < 1e-15
    True
    """
    sigma = _check_sigma(sigma)
    if not m >= 0:
        raise ValueError(f"m ({m!r}) must be ≥ 0")
    a = math.floor(m) + 1
    return min(1.0, 2.0 * _upper_sum(sigma, a) / normaliser(sigma))


def log_cf(t: np.ndarray, sigma: float) -> np.ndarray:
    """``log φ(t)``, ``φ(t) = E cos(tK)`` (real and positive: the law is symmetric, a theta function)."""
    sigma = _check_sigma(sigma)
    t = np.asarray(t, dtype=float)
    s2 = sigma * sigma
    if sigma >= _POISSON:
        r = t - 2.0 * math.pi * np.round(t / (2.0 * math.pi))  # in [−π, π]
        acc = np.ones(r.shape)
        for n in range(-_TERMS, _TERMS + 1):
            if n:
                # (r − 2πn)² − r² = 4π²n² − 4πnr ≥ 0 on [−π, π]
                acc += np.exp(-s2 * (4.0 * math.pi**2 * n * n - 4.0 * math.pi * n * r) / 2.0)
        base = 1.0 + 2.0 * sum(math.exp(-2.0 * math.pi**2 * s2 * n * n) for n in range(1, _TERMS + 1))
        return -s2 * r * r / 2.0 + np.log(acc) - math.log(base)
    k = np.arange(1, math.ceil(_SPAN * sigma) + 2, dtype=float)
    w = np.exp(-(k * k) / (2.0 * s2))
    num = 1.0 + 2.0 * (np.cos(np.multiply.outer(t, k)) * w).sum(axis=-1)
    out: np.ndarray = np.log(num) - math.log(1.0 + 2.0 * float(w.sum()))
    return out


def draw(rng: np.random.Generator, sigma: float, size: int | None = None) -> np.ndarray | int:
    """Draws of ``N_Z(0, σ²)`` by CKS20 Algorithm 3 (seeded; simulations only, never releases).

    Proposals ``Y`` are discrete Laplace with scale ``t = ⌊σ⌋ + 1``; each is kept with probability
    ``exp(−(|Y| − σ²/t)²/(2σ²))``, which makes the kept ones exactly discrete Gaussian.
    """
    sigma = _check_sigma(sigma)
    n = 1 if size is None else int(size)
    t = math.floor(sigma) + 1
    p = -math.expm1(-1.0 / t)
    out = np.empty(n, dtype=np.int64)
    done = 0
    while done < n:
        want = max(16, int(1.6 * (n - done)) + 8)
        y = rng.geometric(p, want) - rng.geometric(p, want)
        keep = rng.random(want) < np.exp(-((np.abs(y) - sigma * sigma / t) ** 2) / (2.0 * sigma * sigma))
        y = y[keep][: n - done]
        out[done : done + y.size] = y
        done += y.size
    return int(out[0]) if size is None else out
