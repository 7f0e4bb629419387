"""Hellinger distance between Dirichlet distributions, and the one-record steps behind its sensitivity.

For Dirichlet parameters ``a`` and ``b`` (Beta when there are two), the Bhattacharyya coefficient is
``BC = B((a+b)/2) / sqrt(B(a) B(b))`` with the multivariate Beta function ``B``, and the Hellinger
distance is ``H = sqrt(1 - BC)``, a metric on distributions with values in ``[0, 1]``
(docs/dirichlet.md §1).

Adding one record of category ``i`` to a posterior ``Dir(p)`` moves it to ``Dir(p + e_i)``; the
distance of that step has the closed form ``H² = 1 - g(p_i)/g(Σp)`` with
``g(x) = Γ(x+½) / (Γ(x)·√x)``, which rises from ``g(0+) = 0`` to ``1`` (§2). Every sensitivity in this
package is built from it, so :func:`log_g` is computed to full relative precision: its value is about
``-1/(8x)`` and a difference of log-gammas would lose the digits that matter for large ``x``.
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln

__all__ = ["global_sensitivity", "hellinger", "log_g", "step_hellinger"]

# Above this, ln g(x) comes from the asymptotic series of Γ(x+½)/(Γ(x)√x); its first omitted term is
# below 2e-11 relative there, while log-gamma differences would lose ~1e-14·x·ln x absolutely.
_SERIES_FROM = 40.0


def log_g(x: np.ndarray | float) -> np.ndarray:
    """``ln g(x)`` with ``g(x) = Γ(x+½)/(Γ(x)√x)``, for ``x > 0`` (elementwise)."""
    x = np.asarray(x, dtype=float)
    out = np.empty_like(x)
    small = x <= _SERIES_FROM
    xs = x[small]
    out[small] = gammaln(xs + 0.5) - gammaln(xs) - 0.5 * np.log(xs)
    xl = x[~small]
    inv = 1.0 / xl
    series = inv * (
        -1.0 / 8 + inv * (1.0 / 128 + inv * (5.0 / 1024 + inv * (-21.0 / 32768 + inv * (-399.0 / 262144))))
    )
    out[~small] = np.log1p(series)
    return out


def step_hellinger(p: np.ndarray | float, total: np.ndarray | float) -> np.ndarray:
    """``H(Dir(q), Dir(q + e_i))`` for any ``q`` with ``q_i = p`` and ``Σq = total`` (elementwise).

    ``H² = 1 - g(p)/g(total)``; requires ``0 < p < total``.
    """
    d = log_g(p) - log_g(total)
    return np.asarray(np.sqrt(np.maximum(-np.expm1(d), 0.0)))


def global_sensitivity(prior: np.ndarray) -> float:
    """The add/remove global sensitivity of ``-H(Dir(prior + c), r)`` over all counts ``c``.

    By the triangle inequality it is at most ``sup_{c,i} H(Dir(prior+c), Dir(prior+c+e_i))``; the step
    grows as ``p_i`` shrinks and as the total grows, so the supremum is ``sqrt(1 - g(min prior))``,
    approached by a table where the rarest-prior category is empty and the others are huge
    (docs/dirichlet.md §2.1). It depends on the prior only, never on the data.
    """
    prior = np.asarray(prior, dtype=float)
    return float(np.sqrt(-np.expm1(log_g(prior.min()))))


def hellinger(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hellinger distance between ``Dir(a)`` and ``Dir(b)``; the last axis holds the parameters.

    ``a`` and ``b`` broadcast against each other, so one posterior can be scored against a whole
    candidate matrix at once.

    Examples
    --------
    >>> round(float(hellinger(np.array([5.0, 5.0]), np.array([4.0, 6.0]))), 6)
    0.233629
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    m = 0.5 * (a + b)
    per = gammaln(m) - 0.5 * (gammaln(a) + gammaln(b))
    tot = gammaln(m.sum(axis=-1)) - 0.5 * (gammaln(a.sum(axis=-1)) + gammaln(b.sum(axis=-1)))
    log_bc = per.sum(axis=-1) - tot
    return np.asarray(np.sqrt(np.clip(-np.expm1(np.minimum(log_bc, 0.0)), 0.0, 1.0)))
