"""Mechanism objects: each noise family's privacy map, accuracy model and sampler binding, and the registry."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.inference import grid
from dpdesk.engine.mechanisms.charge import Charge, ChargeTerm
from dpdesk.engine.mechanisms.laplace import DISCRETE_LAPLACE, LAPLACE
from dpdesk.engine.mechanisms.registry import (
    NOISE_FAMILIES,
    POSTERIOR_METHODS,
    check_method,
    family_for,
    noise_family,
)
from dpdesk.engine.queries.query import query_from_json, query_from_vector
from dpdesk.engine.registry import MECHANISMS, kinds, mechanism

FAMILIES = [LAPLACE, DISCRETE_LAPLACE]


@pytest.mark.parametrize("fam", FAMILIES, ids=lambda f: f.name)
def test_opendp_measurement_states_the_alpha_the_mechanism_charges(fam):
    """The OpenDP measurement the secure sampler applies to a family's lattice index spends exactly the α
    the family's own privacy map states (the steps one record can move the index, at the lattice scale)."""
    pytest.importorskip("opendp.prelude")
    from fractions import Fraction

    from dpdesk.engine.mechanisms.secure_noise import OpenDPSampler

    sampler = OpenDPSampler()
    for sensitivity, alpha in ((1, 0.3), (2, 0.05), (5, 1.7)):
        scale = fam.scale(sensitivity, alpha)
        lattice = fam.on_lattice(Fraction(3), scale, float(sensitivity))
        meas = sampler.lattice_measurement(fam, lattice.scale)
        assert meas.map(lattice.steps) == pytest.approx(alpha, rel=1e-9)
        assert fam.privacy_loss(sensitivity, scale) == pytest.approx(alpha, rel=1e-15)
        q = query_from_vector([sensitivity, -1, 0], (3,))
        np.testing.assert_allclose(
            fam.charge_for(q, alpha).dense(3), [alpha, alpha / sensitivity, 0.0], rtol=1e-15
        )


@pytest.mark.parametrize("fam", FAMILIES, ids=lambda f: f.name)
@pytest.mark.parametrize("S,eps,delta", [(1, 10.0, 0.05), (2, 3.5, 0.2), (1, 1.99, 0.5)])
def test_alpha_for_meets_the_requirement_through_the_tail(fam, S, eps, delta):
    a = fam.alpha_for(S, eps, delta)
    assert fam.tail(fam.scale(S, a), eps) <= delta * (1 + 1e-12)
    assert fam.tail(fam.scale(S, a * (1 - 1e-6)), eps) > delta  # and it is the smallest such α


@pytest.mark.parametrize("fam", FAMILIES, ids=lambda f: f.name)
def test_variance_and_characteristic_function_match_the_posterior_kernels(fam):
    scale = 2.7
    comp = grid.make_components(np.array([1.0]), np.array([scale]), np.array([fam.lattice]))
    assert comp.variance == pytest.approx(fam.variance(scale), rel=1e-12)
    t = np.linspace(-3.0, 3.0, 41)
    np.testing.assert_allclose(grid.log_phi(t, comp), fam.log_cf(t, scale), rtol=1e-10, atol=1e-12)
    # and the seeded draw has that variance (sd of the sample variance of 40 000 draws ≈ 1.2 %)
    draws = np.asarray(fam.draw_seeded(np.random.default_rng(5), scale, 40_000), dtype=float)
    assert draws.var() == pytest.approx(fam.variance(scale), rel=0.05)
    assert np.all(draws == np.rint(draws)) == fam.lattice


def test_registry_is_the_one_table():
    # the Gaussian families follow (tests/test_gaussian_mechanisms.py)
    assert [f.name for f in NOISE_FAMILIES][:2] == ["discrete_laplace", "laplace"]
    assert noise_family("laplace") is LAPLACE and noise_family(DISCRETE_LAPLACE) is DISCRETE_LAPLACE
    assert mechanism("inference").kind == "inferred" and set(kinds()) == {
        "fresh",
        "inferred",
        "posterior",
        "partition",
        "selection",
        "estimate",
        "synthetic",
        "measurement",
        "mean",
        "mean-inferred",
    }
    assert all(MECHANISMS[name].name == name for name in MECHANISMS)
    assert family_for(query_from_vector([1, 2, 0], (3,))) is DISCRETE_LAPLACE
    assert family_for(query_from_vector([0.5, 2, 0], (3,))) is LAPLACE
    assert list(POSTERIOR_METHODS)[0] == check_method("fft")
    with pytest.raises(
        DpdeskError,
        match=r"noise family \('cauchy'\) must be one of discrete_laplace, laplace, discrete_gaussian",
    ):
        noise_family("cauchy")
    with pytest.raises(DpdeskError, match="method .*'exact'.* must be one of fft, direct, mc"):
        check_method("exact")
    with pytest.raises(DpdeskError, match="unknown mechanism 'gumbel'"):
        mechanism("gumbel")


def test_charge_json_round_trip_by_reference_and_in_full():
    q = query_from_vector([2, 0, -1, 0], (2, 2))
    charge = Charge((ChargeTerm(0.25, q), ChargeTerm(0.1)), delta=1e-6)
    by_ref = charge.to_json({"query": q.to_json(), "eps": 1.0})
    assert by_ref["terms"][0]["query"] == "query" and by_ref["terms"][1]["query"] == "all"
    payload = {"query": q.to_json()}
    back = Charge.from_json(by_ref, payload, 4, (2, 2))
    assert back.same_as(charge)
    np.testing.assert_allclose(back.dense(4), [0.6, 0.1, 0.35, 0.1])
    assert [back.at(j) for j in range(4)] == pytest.approx([0.6, 0.1, 0.35, 0.1])
    full = Charge.from_json(charge.to_json(), {}, 4, (2, 2))
    assert full.same_as(charge) and not full.same_as(Charge((ChargeTerm(0.25, q),)))
    other = query_from_json({"indices": [0, 2], "values": [2, 1]}, 4, (2, 2))
    assert not Charge((ChargeTerm(0.25, other),)).same_as(Charge((ChargeTerm(0.25, q),)))
    with pytest.raises(DpdeskError, match="names 'query'"):
        Charge.from_json(by_ref, {}, 4, (2, 2))
    assert Charge().free and not charge.free and math.isclose(charge.delta, 1e-6)
