"""Every number the curator sees holds what it claims (issue 12 items 1 and 2).

Discrete-Laplace rows whose BLUE weights are not on one lattice give a posterior with atoms everywhere;
rounding each term to a shared grid is not exact. The references here are independent of the module:
exact enumeration of the atoms with numpy written out in the test, and the closed form of a single term.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpdesk.engine.answering.workflow import Request, assess
from dpdesk.engine.inference.history import History, HistoryRow
from dpdesk.engine.inference.posterior import posterior
from dpdesk.engine.queries.query import query_from_vector

# issue 12 item 1: four discrete-Laplace releases, BLUE weights 0.600, 0.600, 0.400, −0.400
ROWS = [([1, 0, 0], 1.24, 10.0), ([0, 1, 0], 2.55, 10.0), ([1, 1, 1], 2.69, 30.0), ([0, 0, 1], 1.0, 10.0)]


def issue_history() -> History:
    h = History((3,))
    for q, alpha, y in ROWS:
        h.append(HistoryRow(query_from_vector(q, (3,)), alpha, y, "discrete_laplace"))
    return h


def issue_request() -> Request:
    return Request("1", query_from_vector([1, 1, 0], (3,)), eps=1.6, delta=0.08)


def test_the_assessment_reports_the_method_that_ran():
    a = assess(issue_history(), issue_request(), 100.0, method="fft")
    assert a.method == a.posterior.method
    assert a.requested_method == "fft"
    out = a.to_json()
    assert out["method"] == a.posterior.method and out["method_requested"] == "fft"
    assert out["error_bound"] == a.posterior.error_bound
    # nothing ran for a query history cannot estimate
    b = assess(issue_history(), Request("2", query_from_vector([0, 1, 0], (3,)), 1.0, 0.1), 100.0)
    assert b.estimable  # [0,1,0] was released, so it is estimable; an unseen shape is not:
    c = assess(History((3,)), Request("3", query_from_vector([0, 1, 0], (3,)), 1.0, 0.1), 100.0)
    assert c.method is None and c.to_json()["method"] is None and c.requested_method == "fft"


# -- item 1: exact posteriors of discrete sums off one lattice --------------------------------------


def _enumerate(coefficients, scales, reach=60):
    """Every atom of Σ A_k K_k over |K_k| ≤ reach, with its mass (independent of the engine)."""
    values, weights = np.zeros(1), np.ones(1)
    for a, b in zip(coefficients, scales):
        k = np.arange(-reach, reach + 1)
        p = np.exp(-1.0 / b)
        pmf = (1 - p) / (1 + p) * p ** np.abs(k)
        values = (values[:, None] + a * k[None, :]).ravel()
        weights = (weights[:, None] * pmf[None, :]).ravel()
    return values, weights


def _exact_mass(values, weights, low, high):
    return float(weights[(values >= low - 1e-9) & (values <= high + 1e-9)].sum())


def test_the_issue_example_is_computed_exactly_and_does_not_infer():
    h, req = issue_history(), issue_request()
    est = h.estimate(req.query)
    values, weights = _enumerate(est.coefficients, est.noise_scales, reach=28)  # scales ≤ 1: e^-28 left
    assert weights.sum() == pytest.approx(1.0, abs=1e-12)
    truth = _exact_mass(values, weights, -req.eps, req.eps)
    assert truth == pytest.approx(0.9137, abs=1e-4)  # the issue's enumeration and simulation
    for method in ("fft", "direct"):
        a = assess(h, req, 100.0, method=method)
        assert a.confidence_at_eps == pytest.approx(truth, abs=1e-9)
        assert a.error_bound < 1e-6 and a.method == "atoms" and a.requested_method == method
        assert a.decision != "infer" and "0.9137 < 0.9200" in a.reason
        lo, hi = a.interval  # the 92 % credible interval holds 92 % of the exact law
        assert _exact_mass(values, weights, lo - a.estimate.estimate, hi - a.estimate.estimate) >= 0.92


def test_atom_posteriors_match_enumeration_everywhere():
    rng = np.random.default_rng(12)
    for _ in range(6):
        coef = rng.uniform(0.2, 1.0, 3) * rng.choice([-1, 1], 3)
        scales = rng.uniform(0.3, 1.5, 3)
        post = posterior(5.0, coef, scales, "discrete_laplace", align=1.0)
        assert post.method == "atoms"
        values, weights = _enumerate(coef, scales)
        for lo, hi in ((-1.0, 1.0), (-0.3, 2.2), (0.0, 0.0), (-3.7, -0.1)):
            assert post.prob_between(5.0 + lo, 5.0 + hi) == pytest.approx(
                _exact_mass(values, weights, lo, hi), abs=1e-9
            )
        for delta in (0.05, 0.2, 0.5):
            ci = post.interval(delta)
            held = _exact_mass(values, weights, ci.low - 5.0, ci.high - 5.0)
            assert held >= 1 - delta and ci.confidence == pytest.approx(held, abs=1e-9)
            # narrowest: the next atom inside would fall short
            inner = values[np.abs(values) < ci.high - 5.0 - 1e-9]
            if inner.size:
                w = float(np.abs(inner).max())
                assert _exact_mass(values, weights, -w, w) < 1 - delta + post.error_bound


def test_bandlimited_brackets_hold_the_exact_mass():
    # too many atoms to list (three unrelated coefficients, wide terms): proven brackets instead
    coef, scales = np.array([0.61, 0.37, 0.23]), np.array([30.0, 40.0, 25.0])
    post = posterior(0.0, coef, scales, "discrete_laplace", align=20.0)
    assert post.method == "bandlimited"
    # reference: enumerate two terms exactly and add the third through its closed-form distribution
    v, w = _enumerate(coef[:2], scales[:2], reach=900)
    p = np.exp(-1.0 / scales[2])

    def cdf3(x):  # Pr(0.23·K ≤ x) for discrete Laplace K
        n = np.floor(x / coef[2] + 1e-12)
        return np.where(n >= 0, 1 - p ** (n + 1) / (1 + p), p ** (-n) / (1 + p))

    for half in (20.0, 7.5, 45.0):
        exact = float(np.dot(w, cdf3(half - v) - cdf3(-half - v - 1e-9)))
        got = post.central_mass(half)  # a proven lower bound; at ±align exact to the stated bound
        assert got <= exact + 1e-12
        if half == 20.0:
            assert exact - got <= post.error_bound < 1e-3


def test_a_very_wide_term_is_bracketed_without_listing_its_lattice():
    # a release at a tiny α (noise scale 10⁶) next to a narrow one off its lattice: listing the wide
    # term's atoms would take ~7·10⁷ lattice points (over a GB of arrays); the law is bracketed instead
    import tracemalloc

    coef, scales = np.array([0.6, 0.4]), np.array([1.0, 1e6])
    tracemalloc.start()
    try:
        post = posterior(0.0, coef, scales, "discrete_laplace", align=2e5)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 200e6
    assert post.method == "bandlimited"
    # reference: the narrow term enumerated, the wide one through its closed-form distribution
    v, w = _enumerate(coef[:1], scales[:1], reach=60)
    p = np.exp(-1.0 / scales[1])

    def cdf(x):  # Pr(0.4·K ≤ x) for discrete Laplace K of scale 10⁶
        n = np.floor(x / coef[1] + 1e-12)
        return np.where(n >= 0, 1 - p ** (n + 1) / (1 + p), p ** (-n) / (1 + p))

    exact = float(np.dot(w, cdf(2e5 - v) - cdf(-2e5 - v - 1e-9)))
    got = post.central_mass(2e5)
    assert got <= exact + 1e-12 and exact - got <= post.error_bound < 1e-3
