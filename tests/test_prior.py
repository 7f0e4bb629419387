"""The known-bounds prior: truncation, highest-density intervals, and calibration near a bound.

What the calibration tests check. A truncated posterior is calibrated in the Bayesian sense: if the
truth is drawn from the prior (flat on the bounds) and the data from the noise model, an interval of
posterior mass ``p`` covers the truth with probability ``p``, averaged over truths and data. It is
*not* a frequentist guarantee at each fixed truth. We therefore draw truths uniformly on a short range
``[0, N]`` — the table size ``N`` is comparable to the noise scale, so every truth is near the bound
0 (and near N) — draw the noise, compute the HDI and the best ``2ε`` window, and compare the hit rate
with the mean claimed mass within 4 binomial standard deviations (fixed seeds).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.inference.history import History, HistoryRow
from dpdesk.engine.inference.posterior import posterior
from dpdesk.engine.inference.prior import BoundedPrior, query_bounds, truncate
from dpdesk.engine.queries.query import query_from_vector
from dpdesk.engine.answering.workflow import Request, Settings, assess
from stats_helpers import within_binomial


def test_bounds_of_a_weighted_query():
    q = query_from_vector([2, 0, -1, 1], (4,))
    assert query_bounds(q, 50) == (-50.0, 100.0)
    assert BoundedPrior(50).describe(q) == "bounded [-50, 100]"
    assert BoundedPrior(10).bounds(query_from_vector([1, 1, 0, 0], (4,))) == (0.0, 10.0)
    with pytest.raises(DpdeskError):
        BoundedPrior(0)


@pytest.mark.parametrize("family", ["laplace", "discrete_laplace"])
def test_truncation_renormalises_and_hdi_hugs_the_bound(family):
    post = posterior(-2.0, [1.0], [6.0], family)
    t = truncate(post, 0.0, 1000.0)
    assert t.total == pytest.approx(1.0)
    assert t.prob_less(0.0) == pytest.approx(0.0, abs=1e-12)
    hdi = t.interval(0.2)
    assert hdi.low == pytest.approx(0.0) and hdi.confidence >= 0.8
    # truncated Laplace beyond its mode is exponential with scale b: [0, b ln(1/δ)] (continuous)
    if family == "laplace":
        assert hdi.high == pytest.approx(6.0 * math.log(5.0), abs=2 * post.spacing)
    # it is narrower than the flat credible interval
    flat = post.interval(0.2)
    assert hdi.high - hdi.low < flat.high - flat.low


def test_far_bounds_change_nothing():
    post = posterior(500.0, [1.0, 0.5], [6.0, 9.0])
    t = truncate(post, 0.0, 1e6)
    hdi, flat = t.interval(0.1), post.interval(0.1)
    assert hdi.low == pytest.approx(flat.low, abs=post.spacing)
    assert hdi.high == pytest.approx(flat.high, abs=post.spacing)
    w = t.best_window(20.0)
    assert (w.low + w.high) / 2 == pytest.approx(500.0, abs=post.spacing)
    assert w.confidence == pytest.approx(post.prob_between(490.0, 510.0), abs=2e-3)


def test_estimate_far_outside_the_bounds_piles_up_at_the_bound():
    t = truncate(posterior(-1e6, [1.0], [1.0]), 0.0, 10.0)
    assert t.interval(0.1).low == 0.0 and t.center == 0.0 and t.total == pytest.approx(1.0)


def test_assess_with_the_prior_reports_it_and_releases_the_best_window():
    h = History((3,))
    q = query_from_vector([1, 0, 0], (3,))
    h.append(HistoryRow(q, 0.1, 1.0, "discrete_laplace"))
    req = Request("r", q, eps=15.0, delta=0.2)
    flat = assess(h, req, 10.0)
    bounded = assess(h, req, Settings(10.0, prior=BoundedPrior(1000)))
    assert flat.prior == "flat" and bounded.prior == "bounded [0, 1000]"
    assert bounded.to_json()["prior_bounds"] == [0.0, 1000.0]
    lo, hi = bounded.release_interval
    assert lo >= 0.0 and hi - lo == pytest.approx(30.0)
    assert bounded.confidence_at_eps > flat.confidence_at_eps
    assert bounded.interval[0] >= 0.0 and bounded.interval_confidence >= 0.8
    assert bounded.decision == "infer" and flat.decision == "spend"
    # budgets never depend on the prior (the fused α uses the flat posterior)
    tight = Request("t", q, eps=4.0, delta=0.2)
    f2, b2 = assess(h, tight, 10.0), assess(h, tight, Settings(10.0, prior=BoundedPrior(1000)))
    assert b2.decision == f2.decision == "spend"
    assert b2.fresh_alpha == f2.fresh_alpha and b2.spend_alpha == f2.spend_alpha


@pytest.mark.calibration
@pytest.mark.parametrize("delta", [0.05, 0.2, 0.5])
def test_hdi_is_calibrated_near_zero_continuous(delta):
    """Truth θ ~ U[0, N], one or two noisy releases of it, continuous Laplace noise."""
    rng = np.random.default_rng(310 + int(100 * delta))
    N = 30.0
    hits, claimed, whits, wclaimed = [], [], [], []
    for _ in range(1500):
        theta = rng.uniform(0.0, N)
        scales = rng.uniform(3.0, 25.0, size=int(rng.integers(1, 3)))
        y = theta + rng.laplace(0.0, scales)
        w = 1.0 / scales**2
        A = w / w.sum()  # the BLUE weights of repeated measurements
        t = truncate(posterior(float(A @ y), A, scales, "laplace"), 0.0, N)
        hdi = t.interval(delta)
        hits.append(hdi.low <= theta <= hdi.high)
        claimed.append(hdi.confidence)
        win = t.best_window(float(scales.min()))
        whits.append(win.low <= theta <= win.high)
        wclaimed.append(win.confidence)
    assert min(claimed) >= 1 - delta - 1e-9
    within_binomial(hits, claimed)
    within_binomial(whits, wclaimed)


@pytest.mark.calibration
@pytest.mark.parametrize("delta", [0.1, 0.3])
def test_hdi_is_calibrated_near_zero_through_assess_discrete(delta):
    """Integer counts x ~ U{0..N} in one cell, discrete Laplace releases, the engine end to end."""
    rng = np.random.default_rng(77 + int(100 * delta))
    N = 25
    q = query_from_vector([1, 0], (2,))
    prior = BoundedPrior(N)
    hits, claimed, whits, wclaimed = [], [], [], []
    for _ in range(1000):
        theta = int(rng.integers(0, N + 1))
        h = History((2,))
        for _ in range(int(rng.integers(1, 3))):
            alpha = float(rng.uniform(0.05, 0.4))
            p = -np.expm1(-alpha)
            h.append(HistoryRow(q, alpha, float(theta + rng.geometric(p) - rng.geometric(p)), "discrete_laplace"))
        a = assess(h, Request("r", q, eps=float(rng.uniform(2, 10)), delta=delta), Settings(100.0, prior=prior, fusion=False))
        lo, hi = a.interval
        hits.append(lo <= theta <= hi)
        claimed.append(a.interval_confidence)
        wl, wh = a.release_interval
        whits.append(wl <= theta <= wh)
        wclaimed.append(a.confidence_at_eps)
    within_binomial(hits, claimed)
    within_binomial(whits, wclaimed)
