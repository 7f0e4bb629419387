"""Released outputs follow the mechanisms' exact distributions (chi-square), with OpenDP's samplers.

OpenDP cannot be seeded, so its tests use p > 1e-4 (a false alarm once in 10 000 runs) and each
shows its power by rejecting a wrong distribution with the same draws.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

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
    counts = np.array([4, 1, 1])
    sampler = OpenDPSampler()
    draws = [mech.release(counts, sampler) for _ in range(2000)]
    assert not draws[0].flags.writeable
    idx = _indices(mech, draws)
    observed = np.bincount(idx, minlength=cs.count)
    probs = mech.probabilities(counts)
    assert _chisquare(observed, probs) > 1e-4
    # power: the same draws reject the distribution at other counts
    assert _chisquare(observed, mech.probabilities(np.array([1, 1, 4]))) < 1e-4


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
    alpha = 0.6
    mech = LaplaceCounts(np.array([1.0, 2.0]), alpha)
    counts = np.array([1, 6])
    sampler = OpenDPSampler()
    released = np.array([mech.release(counts, sampler) for _ in range(3000)]) - mech.prior
    assert np.all(released >= 0) and np.all(released == np.round(released))
    upto = 30
    for i in range(2):
        v = np.minimum(released[:, i].astype(int), upto)
        pmf = mech.marginal(int(counts[i]), upto)
        pmf[-1] += 1 - pmf.sum()  # the last bin holds everything above
        observed = np.bincount(v, minlength=upto + 1)
        assert _chisquare(observed, pmf) > 1e-4
    # clipping puts Pr(Z <= -1) = e^-α/(1+e^-α) at 0 for the count of 1, and the draws show it
    assert np.mean(released[:, 0] == 0) == pytest.approx(math.exp(-alpha) / (1 + math.exp(-alpha)), abs=0.04)
    wrong = mech.marginal(2, upto)
    wrong[-1] += 1 - wrong.sum()
    assert (
        _chisquare(np.bincount(np.minimum(released[:, 0].astype(int), upto), minlength=upto + 1), wrong)
        < 1e-4
    )


def test_noisy_size_matches_its_pmf():
    size = NoisySize(0.5)
    sampler = SeededSampler(3)
    draws = np.array([size.release(4, sampler) for _ in range(4000)])
    upto = 25
    pmf = size.pmf(4, upto)
    pmf[-1] += 1 - pmf.sum()
    assert _chisquare(np.bincount(np.minimum(draws, upto), minlength=upto + 1), pmf) > 1e-3
    assert size.alpha == 0.5 and size.delta == 0.0
