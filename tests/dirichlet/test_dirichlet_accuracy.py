"""Data-free accuracy guarantees and exact expected distances (docs/dirichlet.md §6)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dpdesk.engine.dirichlet.accuracy import (
    alpha_for_target,
    expected_bound,
    expected_hellinger,
    reference_counts,
    tail_bound,
)
from dpdesk.engine.dirichlet.candidates import CandidateSet
from dpdesk.engine.dirichlet.hellinger import hellinger
from dpdesk.engine.dirichlet.mechanisms import ExponentialGlobal, LaplaceCounts
from dpdesk.engine.errors import DpdeskError


def test_global_guarantees_hold_on_every_small_table():
    prior = np.array([1.0, 2.0, 1.0])
    for m, alpha in ((5, 0.8), (8, 3.0)):
        cs = CandidateSet(prior, m, m)
        mech = ExponentialGlobal(cs, alpha)
        for c in itertools.product(range(m + 3), repeat=3):
            c = np.array(c)
            h = hellinger(prior + c, cs.parameters())
            p = mech.probabilities(c)
            excess = h - h.min()
            for t in (0.1, 0.3, 0.6):
                assert p[excess > t].sum() <= tail_bound(prior, alpha, cs.count, t) + 1e-12
            assert p @ excess <= expected_bound(prior, alpha, cs.count) + 1e-12


def test_alpha_for_target_meets_the_target_exactly_where_it_binds():
    prior = np.array([1.0, 1.0])
    cs = CandidateSet(prior, 30, 30)
    alpha = alpha_for_target(prior, cs.count, within=0.3, failure=0.05)
    assert tail_bound(prior, alpha, cs.count, 0.3) == pytest.approx(0.05)
    mech = ExponentialGlobal(cs, alpha)
    for c in ([15, 15], [0, 30], [3, 27]):
        h = hellinger(prior + np.array(c), cs.parameters())
        assert mech.probabilities(c)[h - h.min() > 0.3].sum() <= 0.05
    with pytest.raises(DpdeskError, match="distance"):
        alpha_for_target(prior, 10, within=0.0, failure=0.05)
    with pytest.raises(DpdeskError, match="failure"):
        alpha_for_target(prior, 10, within=0.2, failure=1.0)


def test_reference_counts_split_the_size_in_the_prior_proportions():
    assert reference_counts([1, 2, 3], 10).tolist() == [2, 3, 5]
    assert reference_counts([1, 1], 7).sum() == 7
    assert reference_counts([5, 1, 1], 0).tolist() == [0, 0, 0]


def test_laplace_expected_distance_exact_and_monte_carlo_agree():
    mech = LaplaceCounts(np.array([1.0, 1.0, 1.0]), 0.8)
    counts = np.array([3, 0, 7])
    exact = expected_hellinger(mech, counts)
    rng = np.random.default_rng(11)
    p = -np.expm1(-0.8)
    z = rng.geometric(p, size=(40_000, 3)) - rng.geometric(p, size=(40_000, 3))
    h = hellinger(mech.prior + counts, mech.prior + np.maximum(0, counts + z))
    assert exact == pytest.approx(h.mean(), abs=4 * h.std() / np.sqrt(h.size))


def test_noisy_size_quadrature_matches_the_exact_sum():
    from dpdesk.engine.dirichlet.accuracy import expected_hellinger_noisy_size

    prior, counts = np.ones(2), np.array([30, 30])
    make = lambda cs: ExponentialGlobal(cs, 0.6)
    exact = expected_hellinger_noisy_size(prior, counts, size_alpha=0.05, make=make)
    quick = expected_hellinger_noisy_size(prior, counts, size_alpha=0.05, make=make, max_sizes=41)
    assert quick == pytest.approx(exact, abs=2e-3)
