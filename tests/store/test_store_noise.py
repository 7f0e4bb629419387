"""Secure noise: the release path draws from OpenDP, and OpenDP's discrete Laplace matches the posterior model."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from stats_helpers import FALSE_FAILURE, assert_counts_follow, chance_to_pass

from dpdesk.engine.inference.posterior import posterior
from dpdesk.engine.mechanisms.noise import SeededSampler
from dpdesk.engine.mechanisms.registry import noise_family
from dpdesk.engine.mechanisms.secure_noise import OpenDPSampler
from dpdesk.store import Project
from dpdesk.store.errors import StoreError


def test_release_path_uses_opendp(store, monkeypatch):
    calls = []
    real_draw = OpenDPSampler.draw

    def spy(self, family, scale):
        value = real_draw(self, family, scale)
        calls.append((noise_family(family).name, scale, value))  # the release path passes the family object
        return value

    monkeypatch.setattr(OpenDPSampler, "draw", spy)
    path = store.new_project(budget=10)
    with Project.open(path, "w") as p:
        p.add_request('count(age="0-30")', 4, 0.1)
        p.add_request("[0.5, 0, 0, 1.5]", 4, 0.1)
        first = p.answer("r1")
        second = p.answer("r2")
        entries = p.ledger()
    assert [c[0] for c in calls] == ["discrete_laplace", "laplace"]
    for (family, scale, noise), release, entry in zip(calls, (first, second), entries):
        pl = entry.payload
        assert pl["sampler"].startswith("opendp-") and pl["family"] == family == release.family
        assert scale == pytest.approx(pl["sensitivity"] / pl["alpha"])
        assert release.answer == pl["released"] == pl["answer"]  # nothing to fuse with: ỹ is released
    assert float(calls[0][2]).is_integer() and float(first.answer).is_integer()  # 30 + integer noise
    assert first.answer - calls[0][2] == 30.0  # the true count of cells age 0-30 (10 + 20)
    # and the posterior the engine builds for the released row models that same family
    with Project.open(path, "r") as p:
        h = p.history()
        assert [r.family for r in h.rows] == ["discrete_laplace", "laplace"]


def test_fused_fresh_answer_records_raw_and_released_values(store):
    path = store.new_project(budget=20)
    with Project.open(path, "w") as p:
        p.add_request("[1,0,0,0]", 10, 0.05)
        p.add_request("[1,0,0,0]", 5, 0.05)
        p.answer("r1")
        a = p.assess("r2")
        assert a.decision == "spend" and a.fused
        release = p.answer("r2")
        entry = p.ledger()[-1]
        pl = entry.payload
        assert release.fusion_weight == pytest.approx(a.fusion_weight)
        t, theta_h = pl["fusion_weight"], pl["history_estimate"]
        assert pl["released"] == pytest.approx(t * pl["answer"] + (1 - t) * theta_h)
        assert release.answer == pl["released"] and list(release.interval) == list(pl["interval"])
        assert pl["interval"] == pytest.approx([pl["released"] - 5, pl["released"] + 5])
        assert pl["alpha"] == pytest.approx(a.spend_alpha) and pl["alpha"] < a.fresh_alpha
        assert p.history().rows[-1].answer == pl["answer"]  # history keeps the raw noisy answer
        assert p.verify().ok


def test_seeded_sampler_only_in_test_projects(store):
    real = store.new_project("real.dpdesk", budget=10)
    with Project.open(real, "w") as p:
        p.add_request("[1,0,0,0]", 4, 0.1)
        with pytest.raises(StoreError, match="not secure"):
            p.answer("r1", sampler=SeededSampler(1))
        assert p.ledger() == [] and p.request("r1").status == "pending"
    test = store.new_project("test.dpdesk", budget=10, test_project=True)
    with Project.open(test, "w") as p:
        p.add_request("[1,0,0,0]", 4, 0.1)
        release = p.answer("r1", sampler=SeededSampler(1))
        assert release.entry.payload["sampler"].startswith("seeded")


def test_opendp_discrete_laplace_matches_the_posterior_model():
    """8000 OpenDP draws (the release method, ``draw``) against the engine's posterior mass for one
    discrete-Laplace row, itself checked against the closed-form pmf. Bin by bin (tests/stats_helpers.py):
    a correct sampler fails with probability below 10⁻⁶; draws of scale 2.5 would pass with probability
    below 10⁻⁶ (at 6000 draws that was 3·10⁻⁴)."""
    scale, n = 2.0, 8000
    sampler = OpenDPSampler()
    draws = np.array([sampler.draw("discrete_laplace", scale) for _ in range(n)])
    assert np.all(draws == np.round(draws))
    post = posterior(0.0, np.array([1.0]), np.array([scale]), ["discrete_laplace"])
    assert post.lattice and post.spacing == 1.0
    model = dict(zip(np.round(post.grid).astype(int).tolist(), post.mass.tolist()))

    def bins(s: float) -> np.ndarray:  # (-inf, -7], -6, ..., 6, [7, inf) in closed form
        q = math.exp(-1.0 / s)
        return np.array(
            [q**7 / (1 + q), *((1 - q) / (1 + q) * q ** abs(k) for k in range(-6, 7)), q**7 / (1 + q)]
        )

    for k in range(-8, 9):  # the posterior is the exact pmf (1-q)/(1+q) q^|k|
        q = math.exp(-1.0 / scale)
        assert model[k] == pytest.approx((1 - q) / (1 + q) * q ** abs(k), rel=1e-9, abs=1e-15)
    tail = sum(m for k, m in model.items() if k >= 7)
    assert tail == pytest.approx(bins(scale)[-1], rel=1e-9)
    observed = [np.sum(draws <= -7)] + [np.sum(draws == k) for k in range(-6, 7)] + [np.sum(draws >= 7)]
    bounds = assert_counts_follow(observed, bins(scale))
    # a sampler with the wrong scale would fail the same test (the test has power)
    assert chance_to_pass(n, bounds, bins(2.5)) < FALSE_FAILURE


def test_opendp_float_laplace_scale():
    """20 000 draws in 20 bins of equal mass under Laplace(3) (tests/stats_helpers.py: a correct sampler
    fails with probability below 10⁻⁶; scale 3.6 would pass with probability below 10⁻⁶)."""
    sampler = OpenDPSampler()
    n = 20_000
    draws = np.array(sampler.draw_many("laplace", 3.0, n))
    edges = stats.laplace(scale=3.0).ppf(np.linspace(0, 1, 21))
    observed = np.histogram(draws, edges)[0]
    assert observed.sum() == n
    bounds = assert_counts_follow(observed, np.full(20, 1 / 20))
    assert chance_to_pass(n, bounds, np.diff(stats.laplace(scale=3.6).cdf(edges))) < FALSE_FAILURE
    with pytest.raises(ValueError):
        sampler.draw("cauchy", 1.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        sampler.draw("laplace", 0.0)


def test_measurement_privacy_map_matches_alpha():
    sampler = OpenDPSampler()
    sensitivity, alpha = 2.0, 0.25
    meas = sampler.measurement("discrete_laplace", sensitivity / alpha)
    assert meas.map(2) == pytest.approx(alpha)
    assert sampler.measurement("discrete_laplace", sensitivity / alpha) is meas  # cached
