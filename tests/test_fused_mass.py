"""The fused mass on ±ε from history's law computed once (issue 12 item 7), against independent references.

``S = (1 − t)·H + t·N``: the references below are written out in the test — closed-form Laplace and
discrete-Laplace distribution functions, and exact enumeration of atoms — never the engine's transforms.
Every bracket ``(lower, upper)`` must hold the reference, and be as narrow as its kind promises.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpdesk.engine.inference import grid as _g
from dpdesk.engine.inference.fusedmass import FusedMass, _Laplace, _Smooth, _Spectral, _Stepped, fused_mass
from dpdesk.engine.inference.fusion import plan_fusion
from dpdesk.engine.inference.history import Estimate
from dpdesk.engine.mechanisms.base import meets
from dpdesk.engine.mechanisms.registry import noise_family


def _estimate(coef, scales, family) -> Estimate:
    coef, scales = np.asarray(coef, float), np.asarray(scales, float)
    families = (family,) * len(coef) if isinstance(family, str) else tuple(family)
    var = float(np.sum(coef**2 * np.array([noise_family(f).variance(b) for f, b in zip(families, scales)])))
    return Estimate(True, len(coef), "primal", 0.0, 0.0, coef, scales, families, var)


def _issue():
    """Issue 12 item 1's history: BLUE weights ≈ 0.6003, 0.6003, 0.3997, −0.3997 (not on one lattice)."""
    from dpdesk.engine.inference.history import History, HistoryRow
    from dpdesk.engine.queries.query import query_from_vector

    h = History((3,))
    for q, alpha, y in (
        ([1, 0, 0], 1.24, 10.0),
        ([0, 1, 0], 2.55, 10.0),
        ([1, 1, 1], 2.69, 30.0),
        ([0, 0, 1], 1.0, 10.0),
    ):
        h.append(HistoryRow(query_from_vector(q, (3,)), alpha, y, "discrete_laplace"))
    est = h.estimate(query_from_vector([1, 1, 0], (3,)))
    return list(est.coefficients), list(est.noise_scales)


ISSUE_COEF, ISSUE_SCALES = _issue()


def _dlap(b, reach):
    """Atoms −reach..reach of the discrete Laplace of scale b and their masses."""
    k = np.arange(-reach, reach + 1)
    p = math.exp(-1.0 / b)
    return k, (1 - p) / (1 + p) * p ** np.abs(k)


def _reach(b):
    return math.ceil(40 * b)  # e^-40 left beyond


def _enumerate(coef, scales):
    values, weights = np.zeros(1), np.ones(1)
    for a, b in zip(coef, scales):
        k, pk = _dlap(b, _reach(b))
        values = (values[:, None] + a * k[None, :]).ravel()
        weights = (weights[:, None] * pk[None, :]).ravel()
        # sums of the same atoms in another order coincide: merge them to keep the list short
        values, inverse = np.unique(np.round(values, 9), return_inverse=True)
        weights = np.bincount(inverse.ravel(), weights=weights)
    return values, weights


def _laplace_cdf(x, c):
    return np.where(x < 0, 0.5 * np.exp(np.minimum(x, 0) / c), 1 - 0.5 * np.exp(-np.maximum(x, 0) / c))


def _weight(est, sens, family, alpha):
    fam = noise_family(family)
    return est.variance / (est.variance + fam.variance(sens / alpha))


@pytest.mark.parametrize("alpha", [0.05, 0.2, 0.8])
@pytest.mark.parametrize("mixed", [False, True])
def test_continuous_history_with_a_discrete_fresh_term(alpha, mixed):
    # H = 0.7·Laplace(10) (closed form), or that plus a discrete-Laplace(2) row (smooth, interpolated):
    # Pr(|S| ≤ ε) = Σ_k p_k Σ_j Pr(K = j) Pr(0.7 L ∈ window_k − j), Laplace distribution functions only
    coef, scales, fams = (
        ([0.7, 1.0], [10.0, 2.0], ["laplace", "discrete_laplace"]) if mixed else ([0.7], [10.0], ["laplace"])
    )
    est, eps = _estimate(coef, scales, fams), 6.0
    mass = fused_mass(est, 1.0, "discrete_laplace", eps)
    assert isinstance(mass.law, _Smooth if mixed else _Laplace)
    t = _weight(est, 1.0, "discrete_laplace", alpha)
    k, pk = _dlap(1.0 / alpha, _reach(1.0 / alpha))
    j, pj = _dlap(2.0, _reach(2.0)) if mixed else (np.zeros(1), np.ones(1))
    hi = (eps - t * k[:, None]) / (1 - t) - j[None, :]
    lo = (-eps - t * k[:, None]) / (1 - t) - j[None, :]
    exact = float(pk @ (_laplace_cdf(hi, 7.0) - _laplace_cdf(lo, 7.0)) @ pj)
    lower, upper = mass.bounds(alpha)
    assert lower <= exact <= upper and upper - lower < 1e-5


@pytest.mark.parametrize("coef,scales", [([1.0], [3.0]), (ISSUE_COEF, ISSUE_SCALES)])
def test_stepped_history_with_a_discrete_fresh_term(coef, scales):
    # one integer row (a lattice) and the issue's four weights off one lattice (listed atoms)
    est, eps = _estimate(coef, scales, "discrete_laplace"), 1.6
    mass = fused_mass(est, 1.0, "discrete_laplace", eps)
    assert isinstance(mass.law, _Stepped)
    comp = _g.make_components(np.asarray(coef), np.asarray(scales), np.ones(len(coef), bool))
    assert (_g.lattice_step(comp) is not None) == (len(coef) == 1)  # the issue's weights: listed atoms
    values, weights = _enumerate(coef, scales)
    for alpha in (0.3, 1.0, 2.5):
        t = _weight(est, 1.0, "discrete_laplace", alpha)
        k, pk = _dlap(1.0 / alpha, _reach(1.0 / alpha))
        s = ((1 - t) * values[:, None] + t * k[None, :]).ravel()
        w = (weights[:, None] * pk[None, :]).ravel()
        exact = float(w[np.abs(s) <= eps + 1e-9].sum())
        lower, upper = mass.bounds(alpha)
        assert lower <= exact + 1e-12 and exact <= upper + 1e-12 and upper - lower < 1e-8


def test_stepped_history_with_a_continuous_fresh_term():
    est, eps = _estimate([1.0, 2.0], [2.0, 1.5], "discrete_laplace"), 3.0
    mass = fused_mass(est, 1.0, "laplace", eps)
    values, weights = _enumerate([1.0, 2.0], [2.0, 1.5])
    for alpha in (0.2, 1.0):
        t = _weight(est, 1.0, "laplace", alpha)
        c = t / alpha
        exact = float(
            np.dot(
                weights, _laplace_cdf(eps - (1 - t) * values, c) - _laplace_cdf(-eps - (1 - t) * values, c)
            )
        )
        lower, upper = mass.bounds(alpha)
        assert lower <= exact <= upper and upper - lower < 1e-8


def test_selberg_brackets_of_the_fused_sum_hold_the_exact_mass():
    # the spectral form serves histories with too many atoms to list; checked here where listing is possible
    coef, scales, eps = ISSUE_COEF, ISSUE_SCALES, 1.6
    est = _estimate(coef, scales, "discrete_laplace")
    comp = _g.make_components(np.asarray(coef), np.asarray(scales), np.ones(4, bool))
    values, weights = _enumerate(coef, scales)
    for family in ("discrete_laplace", "laplace"):
        spectral = FusedMass(est, 1.0, family, eps, _Spectral(comp, 0.0))
        for alpha in (0.4, 1.5):
            t = _weight(est, 1.0, family, alpha)
            if family == "laplace":
                c = t / alpha
                exact = float(
                    np.dot(
                        weights,
                        _laplace_cdf(eps - (1 - t) * values, c) - _laplace_cdf(-eps - (1 - t) * values, c),
                    )
                )
            else:
                k, pk = _dlap(1.0 / alpha, _reach(1.0 / alpha))
                s = ((1 - t) * values[:, None] + t * k[None, :]).ravel()
                exact = float((weights[:, None] * pk[None, :]).ravel()[np.abs(s) <= eps + 1e-9].sum())
            lower, upper = spectral.bounds(alpha)
            assert lower <= exact <= upper and upper - lower < 1e-3


def test_the_fused_plan_on_the_issue_example_meets_its_claim_exactly():
    coef, scales, eps, delta = ISSUE_COEF, ISSUE_SCALES, 1.6, 0.08
    est = _estimate(coef, scales, "discrete_laplace")
    plan = plan_fusion(est, 1.0, eps, delta, "discrete_laplace")
    assert plan.fused and plan.alpha < plan.fresh_alpha
    values, weights = _enumerate(coef, scales)

    order = np.argsort(values)
    values, cum = values[order], np.concatenate([[0.0], np.cumsum(weights[order])])

    def exact(alpha):  # Σ_k p_k Pr(H in window_k), H's atoms sorted
        t = _weight(est, 1.0, "discrete_laplace", alpha)
        k, pk = _dlap(1.0 / alpha, _reach(1.0 / alpha))
        lo = np.searchsorted(values, (-eps - t * k) / (1 - t) - 1e-9, side="left")
        hi = np.searchsorted(values, (eps - t * k) / (1 - t) + 1e-9, side="right")
        return float(np.dot(pk, cum[hi] - cum[lo]))

    # (history alone holds 0.9137: a tiny, wide fresh term smears the atoms next to ±ε into the window)
    assert meets(exact(plan.alpha), delta) and plan.confidence <= exact(plan.alpha) + 1e-12
    assert not meets(exact(plan.alpha * (1 - 1e-3)), delta)  # the smallest, to the search's precision
