"""Zero-concentrated accounting: per-cell ρ (exact, in rationals), the conversion to (ε, δ) against
OpenDP's own, the inverse and the hard stop on the converted figure (tests/store/test_rho_refused.py:
a pure-ε project refuses a release priced in ρ)."""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import numpy as np
import pytest

from dpdesk.engine.budget import zcdp
from dpdesk.engine.errors import BudgetError, HistoryError
from dpdesk.engine.inference.history import History, HistoryRow
from dpdesk.engine.mechanisms.charge import Charge, ChargeTerm
from dpdesk.engine.mechanisms.gaussian import DISCRETE_GAUSSIAN, GAUSSIAN
from dpdesk.engine.mechanisms.laplace import DISCRETE_LAPLACE, LAPLACE
from dpdesk.engine.queries.query import query_from_vector

DELTAS = (1e-3, 1e-6, 1e-10)
RHOS = (1e-7, 1e-4, 0.005, 0.02, 0.5, 2.0)


@pytest.fixture(scope="module")
def dp():
    prelude = pytest.importorskip("opendp.prelude")
    prelude.enable_features("contrib")
    return prelude


# -- the conversion -----------------------------------------------------------------------------


@pytest.mark.parametrize("rho", RHOS)
def test_tight_conversion_is_opendps(dp, rho):
    """CKS20 Cor. 13 as OpenDP's make_zCDP_to_approxDP computes it, on a Gaussian of that ρ."""
    sigma = 1.0 / math.sqrt(2.0 * rho)
    meas = dp.m.make_gaussian(dp.atom_domain(T="i64"), dp.absolute_distance(T="i64"), scale=sigma)
    assert float(meas.map(1)) == pytest.approx(rho, rel=1e-12)
    profile = dp.c.make_zCDP_to_approxDP(meas).map(1)
    for delta in DELTAS:
        theirs = float(profile.epsilon(delta))
        ours = zcdp.epsilon_tight(rho, delta)
        assert ours == pytest.approx(theirs, rel=1e-12, abs=1e-15)
        if ours > 0:  # δ at that ε is δ again (both directions of the same curve)
            assert zcdp.delta_tight(rho, ours) == pytest.approx(delta, rel=1e-9)
            assert float(profile.delta(ours)) == pytest.approx(delta, rel=1e-9)


@pytest.mark.parametrize("rho", RHOS)
def test_tight_never_exceeds_simple(rho):
    for delta in DELTAS:
        simple = zcdp.epsilon_simple(rho, delta)
        assert simple == rho + 2 * math.sqrt(rho * math.log(1 / delta))
        assert zcdp.epsilon_tight(rho, delta) <= simple
    assert zcdp.epsilon(rho, 1e-6, "simple") == zcdp.epsilon_simple(rho, 1e-6)


def test_pure_to_zcdp_is_opendps_cast(dp):
    """A Laplace release at α costs ρ = α²/2 (Bun–Steinke Prop. 1.4), as OpenDP's make_pureDP_to_zCDP says."""
    for alpha in (0.05, 0.3, 1.7):
        meas = DISCRETE_LAPLACE.lattice_measurement(dp, 1.0 / alpha)
        cast = dp.c.make_pureDP_to_zCDP(meas)
        assert float(cast.map(1)) == pytest.approx(zcdp.rho_of_pure(alpha), rel=1e-12)


@pytest.mark.parametrize("conversion", ["tight", "simple"])
@pytest.mark.parametrize("total", [0.1, 1.0, 8.0])
def test_rho_for_is_the_largest_rho_within_the_total(conversion, total):
    for delta in DELTAS:
        rho = zcdp.rho_for(total, delta, conversion)
        assert zcdp.epsilon(rho, delta, conversion) <= total
        assert zcdp.epsilon(rho * (1 + 1e-9), delta, conversion) > total
    # the tight conversion buys more ρ for the same total
    assert zcdp.rho_for(total, 1e-6, "tight") > zcdp.rho_for(total, 1e-6, "simple")


def test_bad_inputs_are_one_line_errors():
    with pytest.raises(BudgetError, match="delta"):
        zcdp.epsilon_tight(0.1, 0.0)
    with pytest.raises(BudgetError, match="rho"):
        zcdp.epsilon_simple(-1.0, 1e-6)
    with pytest.raises(BudgetError, match="conversion"):
        zcdp.rho_for(1.0, 1e-6, "loose")
    with pytest.raises(BudgetError, match="total epsilon"):
        zcdp.zcdp_preview(np.zeros(3), 0.0, 1e-6)


# -- per-cell ρ, exactly --------------------------------------------------------------------------

SHAPE = (2, 3)
# (coefficients, α, family): α are dyadic, so Fraction(α) is the float exactly
ROWS = [
    ([1, 1, 0, 0, 0, 0], 0.5, LAPLACE),
    ([0, 2, 0, 1, 0, 0], 0.25, DISCRETE_LAPLACE),
    ([1, 0, 0, 1, 1, 0], 0.75, GAUSSIAN),
    ([0, 3, -1, 0, 0, 1], 1.5, DISCRETE_GAUSSIAN),
    ([0.5, 0, 0, 0, 0, 0.25], 0.125, GAUSSIAN),
]


def _exact_rho() -> list[Fraction]:
    """ρ_j = Σ_i (α_i |Q_ij| / S_i)² / 2 in rationals (Laplace and Gaussian rows alike)."""
    rho = [Fraction(0)] * 6
    for coef, alpha, _ in ROWS:
        s = max(abs(Fraction(c)) for c in coef)
        for j, c in enumerate(coef):
            rho[j] += (Fraction(alpha) * abs(Fraction(c)) / s) ** 2 / 2
    return rho


def test_cell_rho_of_mixed_releases_is_exact():
    charges = [fam.charge_for(query_from_vector(c, SHAPE), a) for c, a, fam in ROWS]
    got = zcdp.cell_rho(charges, SHAPE)
    np.testing.assert_allclose(got, [float(r) for r in _exact_rho()], rtol=1e-15, atol=0)
    hist = History(SHAPE, [HistoryRow(query_from_vector(c, SHAPE), a, 0.0, f.name) for c, a, f in ROWS])
    np.testing.assert_allclose(zcdp.history_rho(hist), got, rtol=1e-15, atol=0)
    with pytest.raises(HistoryError, match="ρ"):  # no pure-ε reading of a history with Gaussian rows
        _ = hist.cell_costs


def test_a_pure_release_converts_per_cell_after_adding_its_terms():
    """Two uniform terms ε₁, ε₂ (one release, one pure guarantee per cell ε₁ + ε₂): ρ = (ε₁ + ε₂)²/2."""
    q = query_from_vector([2, 1, 0, 0, 0, 1], SHAPE)
    two = Charge((ChargeTerm(0.25), ChargeTerm(0.5)))
    np.testing.assert_allclose(zcdp.rho_charge(two, 6).dense(6), [0.75**2 / 2] * 6, rtol=1e-15)
    mixed = Charge((ChargeTerm(0.25), ChargeTerm(0.5, q)), delta=1e-9)
    expected = [(0.25 + 0.5 * abs(c)) ** 2 / 2 for c in q.dense()]
    converted = zcdp.rho_charge(mixed, 6)
    assert converted.measure == "rho" and converted.delta == 1e-9
    np.testing.assert_allclose(converted.dense(6), expected, rtol=1e-15)
    assert zcdp.rho_charge(Charge(), 6).free


def test_the_hard_stop_is_on_the_converted_figure():
    total, delta = 1.0, 1e-6
    budget = zcdp.rho_for(total, delta)
    now = np.array([0.25, 0.5, 0.0]) * budget
    q = query_from_vector([0, 1, 0], (3,))
    # the Gaussian α whose ρ fills cell 1 exactly to the budget, and one a hair above it
    fill = GAUSSIAN.alpha_of_rho(budget - now[1])
    ok = zcdp.zcdp_preview(now, total, delta, GAUSSIAN.charge_for(q, fill * (1 - 1e-9)))
    assert ok.fits and ok.limiting_cell == 1 and ok.system_cost_after <= total
    assert ok.system_cost == pytest.approx(zcdp.epsilon_tight(0.5 * budget, delta), rel=1e-15)
    assert ok.system_cost_after == zcdp.epsilon_tight(ok.rho_after, delta)
    over = zcdp.zcdp_preview(now, total, delta, GAUSSIAN.charge_for(q, fill * (1 + 1e-7)))
    assert not over.fits and over.system_cost_after > total and over.remaining_after < 0
    # a Laplace release is charged ε²/2 per cell in the same totals
    lap = zcdp.zcdp_preview(now, total, delta, LAPLACE.charge_for(q, 0.1))
    assert lap.cell_rho_after[1] == pytest.approx(now[1] + 0.1**2 / 2, rel=1e-15)
    assert dataclasses.replace(lap).fits
