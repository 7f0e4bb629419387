"""Brent's root finder and the inverse error function, without importing SciPy.

``import scipy.optimize`` and ``import scipy.special`` take most of a second in a fresh process, and
the fusion search (the first spend decision of every command) needs one root and one quantile.
:func:`brentq` is SciPy's ``brentq`` (``scipy/optimize/Zeros/brentq.c``) step for step, so a search
visits the same points and returns the same root to the bit; :func:`erfinv` is the normal quantile of
the standard library, ``erfinv(p) = Φ⁻¹((1 + p)/2)/√2``, polished by two Newton steps on ``math.erf``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from statistics import NormalDist

__all__ = ["brentq", "erfinv"]

_EPS = 2.220446049250313e-16


def brentq(
    f: Callable[[float], float],
    a: float,
    b: float,
    *,
    xtol: float = 2e-12,
    rtol: float = 4 * _EPS,
    maxiter: int = 100,
) -> float:
    """A root of ``f`` in ``[a, b]`` (``f(a)`` and ``f(b)`` of opposite signs), as SciPy's ``brentq``.

    Raises ``ValueError`` when the signs agree and ``RuntimeError`` when ``maxiter`` steps do not
    converge (SciPy's errors).

    Examples
    --------
    >>> round(brentq(lambda x: x * x - 2.0, 0.0, 2.0), 12)
    1.414213562373
    """
    if xtol <= 0:
        raise ValueError(f"xtol too small ({xtol:g} <= 0)")
    if rtol < 4 * _EPS:
        raise ValueError(f"rtol too small ({rtol:g} < {4 * _EPS:g})")
    xpre, xcur = float(a), float(b)
    xblk = fblk = spre = scur = 0.0
    fpre, fcur = f(xpre), f(xcur)
    if fpre == 0:
        return xpre
    if fcur == 0:
        return xcur
    if math.copysign(1.0, fpre) == math.copysign(1.0, fcur):
        raise ValueError("f(a) and f(b) must have different signs")
    for _ in range(maxiter):
        if fpre != 0 and fcur != 0 and math.copysign(1.0, fpre) != math.copysign(1.0, fcur):
            xblk, fblk = xpre, fpre
            spre = scur = xcur - xpre
        if abs(fblk) < abs(fcur):
            xpre, xcur, xblk = xcur, xblk, xcur
            fpre, fcur, fblk = fcur, fblk, fcur
        delta = (xtol + rtol * abs(xcur)) / 2
        sbis = (xblk - xcur) / 2
        if fcur == 0 or abs(sbis) < delta:
            return xcur
        if abs(spre) > delta and abs(fcur) < abs(fpre):
            if xpre == xblk:  # interpolate
                stry = -fcur * (xcur - xpre) / (fcur - fpre)
            else:  # extrapolate
                dpre = (fpre - fcur) / (xpre - xcur)
                dblk = (fblk - fcur) / (xblk - xcur)
                stry = -fcur * (fblk * dblk - fpre * dpre) / (dblk * dpre * (fblk - fpre))
            if 2 * abs(stry) < min(abs(spre), 3 * abs(sbis) - delta):  # good short step
                spre, scur = scur, stry
            else:  # bisect
                spre = scur = sbis
        else:  # bisect
            spre = scur = sbis
        xpre, fpre = xcur, fcur
        xcur += scur if abs(scur) > delta else (delta if sbis > 0 else -delta)
        fcur = f(xcur)
    raise RuntimeError(f"brentq: failed to converge after {maxiter} iterations, value is {xcur}")


def erfinv(p: float) -> float:
    """The inverse error function on ``(-1, 1)``.

    >>> round(erfinv(0.95) * math.sqrt(2), 6)   # the two-sided 95 % normal quantile
    1.959964
    """
    if p == 0.0:
        return 0.0
    x = NormalDist().inv_cdf((1.0 + p) / 2.0) / math.sqrt(2.0)  # (1 + p)/2 rounds off tiny p ...
    for _ in range(2):  # ... which Newton's steps on erf itself restore
        x -= (math.erf(x) - p) / (2.0 / math.sqrt(math.pi) * math.exp(-x * x))
    return x
