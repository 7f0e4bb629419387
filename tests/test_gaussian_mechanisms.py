"""The Gaussian noise families: their privacy map against OpenDP's own, the per-cell ρ they charge, their
accuracy model (the discrete one exact on its lattice) and their law against brute-force lattice sums.

References are independent of the code under test: OpenDP's measurements and maps, ``math.erfc``, and
lattice sums written out term by term here (``math.fsum`` over every integer that carries mass).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dpdesk.engine.errors import BudgetError, DpdeskError
from dpdesk.engine.inference import grid
from dpdesk.engine.mechanisms import discrete_gaussian as dg
from dpdesk.engine.mechanisms.charge import Charge
from dpdesk.engine.mechanisms.gaussian import DISCRETE_GAUSSIAN, GAUSSIAN
from dpdesk.engine.mechanisms.laplace import DISCRETE_LAPLACE, LAPLACE
from dpdesk.engine.mechanisms.registry import NOISE_FAMILIES, family_for, noise_family
from dpdesk.engine.queries.query import Query, Term, query_from_vector
from dpdesk.engine.registry import MECHANISMS

FAMILIES = [GAUSSIAN, DISCRETE_GAUSSIAN]


@pytest.fixture(scope="module")
def dp():
    prelude = pytest.importorskip("opendp.prelude")
    prelude.enable_features("contrib")
    return prelude


def _lattice(sigma: float) -> tuple[np.ndarray, np.ndarray, float]:
    """Every integer carrying mass above e^-800, its unnormalised mass, and their fsum."""
    k = np.arange(-int(40 * sigma) - 40, int(40 * sigma) + 41, dtype=float)
    f = np.exp(-k * k / (2 * sigma * sigma))
    return k, f, math.fsum(f)


# -- the privacy map ------------------------------------------------------------------------------


@pytest.mark.parametrize("fam", FAMILIES, ids=lambda f: f.name)
@pytest.mark.parametrize("sensitivity,alpha", [(1, 0.3), (2, 0.05), (5, 1.7), (3, 0.01)])
def test_opendp_map_states_the_rho_the_family_charges(dp, fam, sensitivity, alpha):
    """OpenDP's make_gaussian, applied to θ's lattice index (σ = S/α in value units), states ρ = α²/2 for
    sensitivity S: the family's own map."""
    sigma = fam.scale(sensitivity, alpha)
    lat = fam.on_lattice(Fraction(7), sigma, float(sensitivity))
    meas = fam.lattice_measurement(dp, lat.scale)
    assert str(meas.output_measure).startswith("ZeroConcentratedDivergence")
    assert float(meas.map(lat.steps)) == pytest.approx(fam.rho(alpha), rel=1e-12)
    assert float(meas.map(lat.steps)) <= fam.rho(alpha) * (1 + 1e-15)
    assert fam.rho(alpha) == pytest.approx(sensitivity**2 / (2 * sigma**2), rel=1e-15)
    assert fam.opendp_loss(meas, lat.steps) == pytest.approx(alpha, rel=1e-12)
    # vectors of draws: the l2 map of one record moving one coordinate by S is the same
    vec = fam.lattice_measurement(dp, lat.scale, size=4)
    assert float(vec.map(lat.steps)) == pytest.approx(fam.rho(alpha), rel=1e-12)


@pytest.mark.parametrize("fam", FAMILIES, ids=lambda f: f.name)
def test_per_cell_rho_is_the_squared_coefficient_over_two_sigma_squared(fam):
    """ρ_j = Q_j²/(2σ²) cell by cell, in exact rationals, for product-form and sparse queries."""
    shape = (2, 3)
    prod = Query(shape, terms=(Term(2.0, (np.array([1.0, 0.0]), np.array([1.0, 3.0, 0.0]))),))
    sparse = query_from_vector([0, -2, 1, 0, 4, 0], shape)
    for q in (prod, sparse):
        alpha = 0.75
        sigma = Fraction(q.sensitivity) / Fraction(alpha)
        charge = fam.charge_for(q, alpha)
        assert charge.measure == "rho" and charge.delta == 0.0
        expected = [float(Fraction(v) ** 2 / (2 * sigma**2)) for v in q.dense()]
        np.testing.assert_allclose(charge.dense(q.n_cells), expected, rtol=1e-15)
        assert charge.largest(q.n_cells) == pytest.approx(max(expected), rel=1e-15)
        assert charge.at(1) == pytest.approx(expected[1], rel=1e-15)


def test_a_rho_charge_keeps_its_measure_through_the_ledger_form():
    q = query_from_vector([1, 1, 0, 0], (4,))
    charge = GAUSSIAN.charge_for(q, 0.5)
    payload = {"query": q.to_json(), "alpha": 0.5}
    written = charge.to_json(payload)
    assert written["measure"] == "rho" and written["terms"][0]["query"] == "query"  # 0/1: Q² is Q
    back = Charge.from_json(written, payload, 4, (4,))
    assert back.measure == "rho" and back.same_as(charge)
    # a pure charge's ledger form is what it always was (no measure member), and the two never match
    pure = LAPLACE.charge_for(q, 0.125)
    assert "measure" not in pure.to_json(payload) and pure.dense(4).tolist() == charge.dense(4).tolist()
    assert not pure.same_as(charge)
    with pytest.raises(DpdeskError, match="measure"):
        Charge(measure="delta")


def test_the_recorded_release_is_re_priced_by_the_same_map():
    q = query_from_vector([2, 0, -1, 0], (2, 2))
    c = DISCRETE_GAUSSIAN.contribution({"query": q.to_json(), "alpha": 0.4, "answer": 17.0}, (2, 2))
    assert c.charge.measure == "rho"
    np.testing.assert_allclose(c.charge.dense(4), [0.4**2 / 2, 0.0, 0.4**2 / 8, 0.0], rtol=1e-15)
    assert c.rows[0].family == "discrete_gaussian" and c.rows[0].alpha == 0.4


# -- the accuracy model ---------------------------------------------------------------------------


@pytest.mark.parametrize("S,eps,delta", [(1, 10.0, 0.05), (2, 3.5, 0.2), (1, 1.99, 0.5), (3, 250.0, 1e-6)])
def test_gaussian_alpha_for_is_the_normal_quantile(S, eps, delta):
    a = GAUSSIAN.alpha_for(S, eps, delta)
    sigma = S / a
    assert math.erfc(eps / (sigma * math.sqrt(2))) == pytest.approx(delta, rel=1e-9)
    assert GAUSSIAN.tail(sigma, eps) == pytest.approx(delta, rel=1e-9)


@pytest.mark.parametrize("S,eps,delta", [(1, 10.0, 0.05), (2, 3.5, 0.2), (1, 1.99, 0.5), (1, 4.0, 0.05)])
def test_discrete_gaussian_alpha_for_is_the_smallest_that_meets_the_exact_lattice_tail(S, eps, delta):
    a = DISCRETE_GAUSSIAN.alpha_for(S, eps, delta)

    def brute_tail(sigma: float) -> float:
        k, f, z = _lattice(sigma)
        return math.fsum(f[np.abs(k) > math.floor(eps)]) / z

    assert brute_tail(S / a) <= delta * (1 + 1e-9)
    assert brute_tail(S / (a * (1 - 1e-6))) > delta  # the smallest such α


@pytest.mark.parametrize("sigma,level", [(2.0, 0.05), (5.0, 0.05), (0.7, 0.1), (30.0, 0.01), (1000.0, 0.05)])
def test_discrete_gaussian_accuracy_never_looser_than_opendps(dp, sigma, level):
    """OpenDP's discrete_gaussian_scale_to_accuracy is a bound (Pr(|K| ≥ a) ≤ level); the exact lattice tail
    gives an accuracy at most that wide."""
    bound = dp.discrete_gaussian_scale_to_accuracy(sigma, level)
    exact = next(m for m in range(int(60 * sigma) + 60) if dg.tail(sigma, m) <= level)  # Pr(|K| > m)
    assert exact + 1 <= bound + 1e-9  # OpenDP's "≥ a" is our "> a − 1"
    assert dg.tail(sigma, bound - 1) <= level


# -- the law ------------------------------------------------------------------------------------


@pytest.mark.parametrize("sigma", [0.05, 0.3, 0.99, 1.0, 2.5, 40.0, 199.0, 201.0, 600.0])
def test_discrete_gaussian_law_against_lattice_sums(sigma):
    k, f, z = _lattice(sigma)
    assert dg.normaliser(sigma) == pytest.approx(z, rel=1e-14)
    assert DISCRETE_GAUSSIAN.variance(sigma) == pytest.approx(math.fsum(k * k * f) / z, rel=1e-13)
    assert DISCRETE_GAUSSIAN.fourth_moment(sigma) == pytest.approx(math.fsum(k**4 * f) / z, rel=1e-13)
    for m in (0.0, 0.5 * sigma, sigma, 2.2 * sigma, 6.0 * sigma):
        ref = math.fsum(f[np.abs(k) > math.floor(m)]) / z
        assert DISCRETE_GAUSSIAN.tail(sigma, m) == pytest.approx(ref, rel=1e-12, abs=1e-300)
    if sigma <= 40:
        t = np.linspace(-7.0, 7.0, 29)
        cf = np.array([math.fsum(np.cos(u * k) * f) for u in t]) / z
        np.testing.assert_allclose(np.exp(DISCRETE_GAUSSIAN.log_cf(t, sigma)), cf, rtol=0, atol=2e-15)


@pytest.mark.parametrize("fam", FAMILIES, ids=lambda f: f.name)
def test_variance_and_characteristic_function_match_the_posterior_kernels(fam):
    scale = 2.7
    comp = grid.make_components(np.array([1.0]), np.array([scale]), np.array([fam.lattice]), np.array([True]))
    assert comp.variance == pytest.approx(fam.variance(scale), rel=1e-12)
    t = np.linspace(-3.0, 3.0, 41)
    np.testing.assert_allclose(grid.log_phi(t, comp), fam.log_cf(t, scale), rtol=1e-10, atol=1e-12)
    # seeded draws have that law: variance (sd of the sample variance of 40 000 draws ≈ 0.7 %) and tail
    draws = np.asarray(fam.draw_seeded(np.random.default_rng(5), scale, 40_000), dtype=float)
    assert draws.var() == pytest.approx(fam.variance(scale), rel=0.035)
    p = fam.tail(scale, 3.0)  # binomial sd of the hit rate: √(p(1−p)/n) ≈ 0.0021
    assert abs(float(np.mean(np.abs(draws) > 3.0)) - p) < 4.5 * math.sqrt(p * (1 - p) / draws.size)
    assert np.all(draws == np.rint(draws)) == fam.lattice


@pytest.mark.parametrize("fam", FAMILIES, ids=lambda f: f.name)
def test_opendp_draws_the_family(dp, fam):
    """The vetted sampler's releases of θ = 0: integers for the discrete family (the continuous one on its
    fine lattice), and the family's spread (sd of the sample variance of 2 000 draws ≈ 3.2 %: within 5 sd)."""
    from dpdesk.engine.mechanisms.secure_noise import OpenDPSampler

    sampler = OpenDPSampler()
    if fam.lattice:
        out = np.asarray(sampler.release_vector(fam, np.zeros(2000, dtype=np.int64), 3.0), dtype=float)
    else:
        out = np.array([sampler.release(fam, 0, 3.0, 1.0) for _ in range(2000)])
    assert np.all(out == np.rint(out)) == fam.lattice
    assert out.var() == pytest.approx(fam.variance(3.0), rel=0.16)


def test_registered_beside_laplace_without_changing_the_default():
    assert [f.name for f in NOISE_FAMILIES] == [
        "discrete_laplace",
        "laplace",
        "discrete_gaussian",
        "gaussian",
    ]
    assert noise_family("gaussian") is GAUSSIAN and MECHANISMS["discrete_gaussian"] is DISCRETE_GAUSSIAN
    assert family_for(query_from_vector([1, 1, 0], (3,))) is DISCRETE_LAPLACE
    assert family_for(query_from_vector([0.5, 1, 0], (3,))) is LAPLACE
    assert DISCRETE_GAUSSIAN.applies_to(query_from_vector([2, -1, 0], (3,)))
    assert not DISCRETE_GAUSSIAN.applies_to(query_from_vector([0.5, 1, 0], (3,)))
    assert LAPLACE.measure == DISCRETE_LAPLACE.measure == "epsilon"


def test_bad_requirements_are_refused_in_one_line():
    with pytest.raises(BudgetError, match="delta"):
        GAUSSIAN.alpha_for(1.0, 2.0, 1.5)
    with pytest.raises(BudgetError, match="sensitivity"):
        DISCRETE_GAUSSIAN.alpha_for(0.0, 2.0, 0.1)
