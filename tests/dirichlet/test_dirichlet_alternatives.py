"""The law of each posterior mechanism's release at public counts (engine/dirichlet/alternatives.py),
checked against the independent expected-distance code of engine/dirichlet/accuracy.py."""

from __future__ import annotations

import numpy as np
import pytest

from dpdesk.engine.dirichlet.accuracy import expected_hellinger
from dpdesk.engine.dirichlet.alternatives import COMPONENTS, release_law
from dpdesk.engine.dirichlet.candidates import CandidateSet
from dpdesk.engine.dirichlet.display import bands_of, curve_range, density_of
from dpdesk.engine.dirichlet.hellinger import hellinger
from dpdesk.engine.dirichlet.mechanisms import ExponentialGlobal, LaplaceCounts


def _expected_h(law, truth):
    return float(law.weights @ hellinger(truth, law.parameters))


# exact over 9 candidates; Laplace: 1 681 noise pairs (tails < 1e-6) represented by 1 000 stratified
# components, whose expectation of a function with values in [0, 1] is off by at most 1/1 000
@pytest.mark.parametrize(
    ("mech", "tol"),
    [
        (ExponentialGlobal(CandidateSet.for_size(np.array([1.0, 2.0]), 8), 1.5), 1e-12),
        (LaplaceCounts(np.array([1.0, 2.0]), 0.7), 1.0 / COMPONENTS),
    ],
    ids=["exponential", "laplace"],
)
def test_the_release_law_gives_the_same_expected_distance_as_the_accuracy_code(mech, tol):
    counts = np.array([3, 5])
    law = release_law(mech, counts)
    assert _expected_h(law, mech.prior + counts) == pytest.approx(expected_hellinger(mech, counts), abs=tol)
    grid = np.linspace(0, 1, 4001)
    assert np.trapezoid(density_of(law, grid), grid) == pytest.approx(1.0, abs=1e-3)


def test_a_law_with_many_candidates_is_represented_by_a_stratified_sample_that_keeps_its_spread():
    mech = ExponentialGlobal(CandidateSet.for_size(np.array([1.0, 1.0]), 5000), 0.2)  # nearly flat over 5 001
    counts = np.array([1000, 4000])
    law = release_law(mech, counts)
    assert law.parameters.shape[0] <= COMPONENTS < 5001
    p = mech.probabilities(counts)
    full = mech.candidates.parameters()
    exact_mean = p @ (full[:, 0] / full.sum(axis=1))
    assert law.mean[0] == pytest.approx(
        exact_mean, abs=2e-3
    )  # stratified: error ≤ 1/(2·COMPONENTS) per quantile
    spread = np.sqrt(p @ (full[:, 0] / full.sum(axis=1) - exact_mean) ** 2)
    shares = law.parameters[:, 0] / law.parameters.sum(axis=1)
    assert np.sqrt(law.weights @ (shares - law.mean[0]) ** 2) == pytest.approx(spread, rel=0.01)
    lo, hi = curve_range([law])
    assert (lo, hi) == (0.0, 1.0)  # a flat law needs the whole axis
    assert curve_range([np.array([2001.0, 8001.0])])[1] < 0.3  # a sharp posterior gets a narrow window


def test_mixture_bands_of_a_single_dirichlet_match_its_own_bands():
    from dpdesk.engine.dirichlet.display import DirichletMixture, proportion_bands

    a = np.array([3.0, 5.0, 9.0])
    mixed = bands_of(DirichletMixture(np.array([1.0]), a[None, :]))
    own = proportion_bands(a)
    np.testing.assert_allclose(mixed.mean, own.mean)
    np.testing.assert_allclose(mixed.low, own.low, atol=1.5e-3)  # read off a 1 001-point CDF
    np.testing.assert_allclose(mixed.high, own.high, atol=1.5e-3)
