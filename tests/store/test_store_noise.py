"""Secure noise: the release path draws from OpenDP, and OpenDP's discrete Laplace matches the posterior model."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats
from stats_helpers import FALSE_FAILURE, assert_counts_follow, chance_to_pass

from dpdesk.engine.inference.posterior import posterior
from dpdesk.engine.mechanisms.laplace import DISCRETE_LAPLACE, LAPLACE
from dpdesk.engine.mechanisms.noise import SeededSampler
from dpdesk.engine.mechanisms.registry import noise_family
from dpdesk.engine.mechanisms.secure_noise import OpenDPSampler
from dpdesk.store import Project
from dpdesk.store.errors import StoreError


def test_release_path_uses_opendp(store, monkeypatch):
    """Every fresh answer hands the exact true answer to OpenDP's sampler, which returns the released value."""
    calls = []
    real_release = OpenDPSampler.release

    def spy(self, family, value, scale, sensitivity=None):
        released = real_release(self, family, value, scale, sensitivity)
        calls.append((noise_family(family).name, value, scale, sensitivity, released))  # the family object
        return released

    monkeypatch.setattr(OpenDPSampler, "release", spy)
    path = store.new_project(budget=10)
    with Project.open(path, "w") as p:
        p.add_request('count(age="0-30")', 4, 0.1)
        p.add_request("[0.5, 0, 0, 1.5]", 4, 0.1)
        first = p.answer("r1")
        second = p.answer("r2")
        entries = p.ledger()
    assert [c[0] for c in calls] == ["discrete_laplace", "laplace"]
    # the true answers, exact: 10 + 20 people aged 0-30; 0.5·10 + 1.5·10 (cells <=50K and >50K, 30-150)
    assert [c[1] for c in calls] == [30, Fraction(5) + 15] and all(isinstance(c[1], Fraction) for c in calls)
    for (family, _, scale, sensitivity, released), release, entry in zip(calls, (first, second), entries):
        pl = entry.payload
        assert pl["sampler"].startswith("opendp-") and pl["family"] == family == release.family
        assert scale == pytest.approx(pl["sensitivity"] / pl["alpha"]) and sensitivity == pl["sensitivity"]
        assert release.answer == pl["released"] == pl["answer"] == released  # nothing to fuse with: ỹ
    assert float(first.answer).is_integer()  # 30 + integer noise
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
    """8000 OpenDP releases of 0 (the release method, ``release``) against the engine's posterior mass for
    one discrete-Laplace row, itself checked against the closed-form pmf. Bin by bin (tests/stats_helpers.py):
    a correct sampler fails with probability below 10⁻⁶; draws of scale 2.5 would pass with probability
    below 10⁻⁶ (at 6000 draws that was 3·10⁻⁴)."""
    scale, n = 2.0, 8000
    sampler = OpenDPSampler()
    draws = np.array([sampler.release("discrete_laplace", 0, scale, 1) for _ in range(n)])
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


def test_opendp_laplace_release_is_on_its_lattice_with_the_charged_scale():
    """A Laplace release of θ at scale b is θ's lattice point plus OpenDP's discrete Laplace on the lattice
    G·Z (G = 2^(⌊log₂ b⌋ − 52)): its values are multiples of G, and 20 000 releases of 0 at b = 3 fall in
    20 bins of equal mass under Laplace(3) (tests/stats_helpers.py: a correct sampler fails with probability
    below 10⁻⁶; scale 3.6 would pass with probability below 10⁻⁶)."""
    sampler = OpenDPSampler()
    theta, b, sens = Fraction(37, 100), 3.0, 0.37  # G = 2^-51
    some = [sampler.release("laplace", theta, b, sens) for _ in range(200)]
    assert all((Fraction(y) / Fraction(1, 2**51)).denominator == 1 for y in some)
    n = 20_000
    draws = sampler.release_vector("laplace", np.zeros(n, dtype=np.int64), b)
    assert all((Fraction(float(y)) / Fraction(1, 2**51)).denominator == 1 for y in draws[:500])
    edges = stats.laplace(scale=b).ppf(np.linspace(0, 1, 21))
    observed = np.histogram(draws, edges)[0]
    assert observed.sum() == n
    bounds = assert_counts_follow(observed, np.full(20, 1 / 20))
    assert chance_to_pass(n, bounds, np.diff(stats.laplace(scale=3.6).cdf(edges))) < FALSE_FAILURE
    with pytest.raises(ValueError):
        sampler.release("cauchy", 0.0, 1.0, 1.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        sampler.release("laplace", 0.0, 0.0, 1.0)
    with pytest.raises(ValueError, match="sensitivity"):
        sampler.release("laplace", 0.0, 1.0)  # a Laplace release is charged for a sensitivity
    with pytest.raises(ValueError, match="integer"):
        sampler.release("discrete_laplace", 0.5, 1.0, 1)  # integer noise on an integer value only
    with pytest.raises(ValueError, match="finite"):
        sampler.release("laplace", math.nan, 1.0, 1.0)


@pytest.mark.parametrize("sensitivity, alpha", [(2.0, 0.25), (0.37, 1.0), (1.5, 1e-6), (1.0, 700.0)])
def test_the_measurement_privacy_map_is_the_charge(sensitivity, alpha):
    """OpenDP's own map over the lattice steps one record can move the index: the α charged (to 10⁻¹²),
    and never above it; the noise scale in value units is at most 1 + 2⁻⁵²/α above S/α."""
    sampler = OpenDPSampler()
    b = sensitivity / alpha
    lat = LAPLACE.on_lattice(Fraction(0), b, sensitivity)
    meas = sampler.lattice_measurement(LAPLACE, lat.scale)
    assert meas.map(lat.steps) == pytest.approx(alpha, rel=1e-12) and meas.map(lat.steps) <= alpha * (
        1 + 1e-15
    )
    assert lat.steps < 2**60 and lat.scale < 2**54  # the lattice index stays far inside i64
    assert 1 <= lat.scale * 2.0**lat.exponent / b <= 1 + 2**-52 / alpha + 1e-15
    assert sampler.lattice_measurement(LAPLACE, lat.scale) is meas  # cached
    if float(sensitivity).is_integer():
        d = DISCRETE_LAPLACE.on_lattice(Fraction(7), b, sensitivity)
        assert sampler.lattice_measurement(DISCRETE_LAPLACE, d.scale).map(d.steps) == pytest.approx(alpha)
