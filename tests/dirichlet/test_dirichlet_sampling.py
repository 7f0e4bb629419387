"""Released outputs follow the mechanisms' exact distributions, with OpenDP's samplers and the seeded one.

OpenDP cannot be seeded, so its tests bound their false-failure probability instead: every category's
count is checked against its exact binomial bounds (tests/stats_helpers.py), and a correct sampler
fails a test with probability at most 10⁻⁶; each shows its power by bounding the chance that draws
from a wrong law pass (below 10⁻⁶ too). The seeded sampler's tests are deterministic (χ²).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from stats_helpers import FALSE_FAILURE, assert_counts_follow, chance_to_pass

from dpdesk.engine.dirichlet.candidates import CandidateSet
from dpdesk.engine.dirichlet.mechanisms import ExponentialGlobal, ExponentialSmooth, LaplaceCounts, NoisySize
from dpdesk.engine.mechanisms.noise import SeededSampler
from dpdesk.engine.mechanisms.secure_noise import OpenDPSampler


def _chisquare(observed: np.ndarray, probs: np.ndarray, min_expected: float = 5.0) -> float:
    """p-value after merging the smallest cells until every expected count is at least 5."""
    n = observed.sum()
    order = np.argsort(probs)
    obs, exp = list(observed[order].astype(float)), list(probs[order] * n)
    while len(exp) > 2 and exp[0] < min_expected:
        # pop before adding: `exp[1] += exp.pop(0)` would load exp[1], then store into the shifted list
        smallest_exp, smallest_obs = exp.pop(0), obs.pop(0)
        exp[0] += smallest_exp
        obs[0] += smallest_obs
    return float(stats.chisquare(obs, np.array(exp) * sum(obs) / sum(exp)).pvalue)


def _indices(mech, params: list[np.ndarray]) -> np.ndarray:
    table = {tuple(r): i for i, r in enumerate(mech.candidates.parameters())}
    return np.array([table[tuple(p)] for p in params])


@pytest.mark.parametrize("kind", ["global", "smooth"])
def test_exponential_release_matches_exact_probabilities_with_opendp(kind):
    prior = np.array([1.0, 1.0, 1.0])
    cs = CandidateSet(prior, 6, 6)
    mech = ExponentialGlobal(cs, 2.0) if kind == "global" else ExponentialSmooth(cs, 4.0, 1e-3)
    counts, n = np.array([4, 1, 1]), 2000
    sampler = OpenDPSampler()
    draws = [mech.release(counts, sampler) for _ in range(n)]
    assert not draws[0].flags.writeable
    observed = np.bincount(_indices(mech, draws), minlength=cs.count)
    bounds = assert_counts_follow(observed, mech.probabilities(counts))
    # power: the law at other counts would pass these bounds with probability below 10⁻⁶
    assert chance_to_pass(n, bounds, mech.probabilities(np.array([1, 1, 4]))) < FALSE_FAILURE


def test_exponential_release_with_the_seeded_sampler():
    cs = CandidateSet(np.array([0.5, 2.0]), 10, 10)
    mech = ExponentialGlobal(cs, 1.5)
    sampler = SeededSampler(7)
    observed = np.bincount(
        _indices(mech, [mech.release([7, 3], sampler) for _ in range(5000)]), minlength=cs.count
    )
    assert _chisquare(observed, mech.probabilities([7, 3])) > 1e-3
    assert _chisquare(observed, ExponentialGlobal(cs, 0.75).probabilities([7, 3])) < 1e-3


def test_laplace_counts_match_the_clipped_discrete_laplace():
    alpha, n, upto = 0.6, 3000, 30
    mech = LaplaceCounts(np.array([1.0, 2.0]), alpha)
    counts = np.array([1, 6])
    sampler = OpenDPSampler()
    released = np.array([mech.release(counts, sampler) for _ in range(n)]) - mech.prior
    assert np.all(released >= 0) and np.all(released == np.round(released))

    def pmf(count: int) -> np.ndarray:
        out = mech.marginal(count, upto)
        out[-1] += 1 - out.sum()  # the last bin holds everything above
        return out

    for i in range(2):  # two coordinates: each at half the false-failure probability
        observed = np.bincount(np.minimum(released[:, i].astype(int), upto), minlength=upto + 1)
        bounds = assert_counts_follow(observed, pmf(int(counts[i])), FALSE_FAILURE / 2)
        # power: the law of a count one larger would pass with probability below 10⁻⁶
        assert chance_to_pass(n, bounds, pmf(int(counts[i]) + 1)) < FALSE_FAILURE
    # the law tested, in closed form where clipping acts: Pr(Z ≤ −1) = e^-α/(1+e^-α) lands at 0 for the
    # count of 1, and nothing below
    assert pmf(1)[0] == pytest.approx(math.exp(-alpha) / (1 + math.exp(-alpha)), rel=1e-12)


def test_noisy_size_matches_its_pmf():
    size = NoisySize(0.5)
    sampler = SeededSampler(3)
    draws = np.array([size.release(4, sampler) for _ in range(4000)])
    upto = 25
    pmf = size.pmf(4, upto)
    pmf[-1] += 1 - pmf.sum()
    assert _chisquare(np.bincount(np.minimum(draws, upto), minlength=upto + 1), pmf) > 1e-3
    assert size.alpha == 0.5 and size.delta == 0.0
