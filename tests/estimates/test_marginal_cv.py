"""Cross-validation of the max-entropy trade-off over whole held-out marginals tracks the true error.

The oracle is the true table: the CV estimate subtracts the released noise's variance from the
held-out squared errors, so it differs from the true held-out error only by noise terms whose standard
deviation follows from the noise law (Laplace: var(ν²) = 5σ⁴) and the predictions themselves.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.estimates.marginal_cv import cross_validate_marginals
from dpdesk.engine.estimates.marginals import Marginal

SHAPE = (4, 5, 6, 3)
PAIRS = list(itertools.combinations(range(4), 2))


def _release(b, seed, rows=8_000):
    """A latent-class table: every pair is dependent through the class, so other pairs predict a held-out one."""
    rng = np.random.default_rng(seed)
    z = rng.integers(0, 3, rows)
    cols = [np.array([rng.choice(k, p=p) for p in rng.dirichlet(np.full(k, 0.5), 3)[z]]) for k in SHAPE]
    x = np.zeros(SHAPE)
    np.add.at(x, tuple(cols), 1.0)
    truth = [x.sum(axis=tuple(d for d in range(4) if d not in p)) for p in PAIRS]
    noisy = [Marginal(p, t + rng.laplace(0.0, b, t.shape), 2 * b * b) for p, t in zip(PAIRS, truth)]
    return x.sum(), truth, noisy


@pytest.mark.calibration
def test_cv_curve_tracks_the_true_held_out_error_and_picks_near_its_minimum():
    b, particles = 15.0, 20_000
    n, truth, noisy = _release(b, 5)
    taus = [1e-4, 1e-3, 1e-2, 1e-1]  # boxes of ~0.05 to ~50 nats: from near-independence to an exact fit
    cv = cross_validate_marginals(
        SHAPE, noisy, table_size=n, taus=taus, k=3, seed=1, particles=particles, max_iter=10, gtol=0.25
    )
    x = np.concatenate([t.reshape(-1) for t in truth])
    y = np.concatenate([mg.table.reshape(-1) for mg in noisy])
    s2 = 2 * b * b
    pred = np.asarray(cv.predicted)
    w = pred * (n - pred) / particles  # the predictions' binomial Monte Carlo variance, subtracted by both
    true_mse = np.mean((pred - x) ** 2 - w, axis=1)
    np.testing.assert_allclose(cv.mse, np.mean((pred - y) ** 2 - s2 - w, axis=1), rtol=1e-12)
    # cv − true = mean(ν² − σ² − 2(μ̂ − x)ν): zero mean (held-out noise is independent of the fit), and
    # standard deviation √Σ(5σ⁴ + 4(μ̂ − x)²σ²)/m; every grid point within three of them
    sd = np.sqrt(np.sum(5 * s2**2 + 4 * (pred - x) ** 2 * s2, axis=1)) / x.size
    assert np.all(np.abs(cv.mse - true_mse) <= 3 * sd), (cv.mse, true_mse, sd)
    assert cv.floor_sd == pytest.approx(math.sqrt(5 * s2**2 * x.size) / x.size)
    # the chosen τ's true error is within the two curves' noise of the best true error on the grid
    best = int(np.argmin(true_mse))
    assert true_mse[list(cv.taus).index(cv.best_tau)] <= true_mse[best] + 3 * math.hypot(
        sd[best], sd[np.argmin(cv.mse)]
    )
    # the curve has a shape to choose from: the smallest box is far worse than the best
    assert true_mse[0] > true_mse[best] + 6 * sd[0]
    assert cv.fold_mse.shape == (4, 3) and sorted(i for f in cv.folds for i in f) == list(range(len(PAIRS)))
    assert "cross-validation over whole marginals" in cv.summary()


def test_cv_names_bad_settings():
    n, _, noisy = _release(15.0, 5)
    with pytest.raises(DpdeskError, match="τ grid"):
        cross_validate_marginals(SHAPE, noisy, table_size=n, taus=[0.0, 1.0])
    with pytest.raises(DpdeskError, match="k"):
        cross_validate_marginals(SHAPE, noisy, table_size=n, taus=[1.0], k=7)
    # only (0, 3) holds attribute 3: leaving it out leaves the attribute in no training marginal
    with pytest.raises(DpdeskError, match=r"leaves attributes \[\d\] in no training marginal"):
        cross_validate_marginals(SHAPE, [noisy[i] for i in (2, 0, 3)], table_size=n, taus=[1.0], k=3)
