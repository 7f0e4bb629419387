"""Issue 34 item 4: the band shown for a Laplace posterior release includes the mechanism's noise, and
covers the true share at its stated level over repeated releases; the released posterior's own band,
which leaves the noise out, does not (it is shown only with that said)."""

from __future__ import annotations

import numpy as np

from dpdesk.engine.dirichlet.summary import share_bands

TRUE = np.array([1538, 462])  # a 2 000-record box: the true share 0.769
ALPHA = 0.02  # discrete Laplace of scale 50 on each count
PRIOR = np.array([1.0, 1.0])


def _releases(n: int):
    """Seeded releases of the mechanism's law (a test sampler: the noise family's own law)."""
    rng = np.random.default_rng(0)
    p = -np.expm1(-ALPHA)
    for _ in range(n):
        noisy = TRUE + rng.geometric(p, 2) - rng.geometric(p, 2)
        yield noisy, PRIOR + np.maximum(0, noisy)


def test_the_band_with_the_noise_covers_the_true_share_at_its_level_and_the_posterior_alone_does_not():
    share = TRUE[0] / TRUE.sum()
    n = 200
    with_noise = alone = 0
    for noisy, params in _releases(n):
        b, what = share_bands(params, "laplace", PRIOR, noisy, ALPHA)
        assert what == "95 % band including the Laplace noise"
        with_noise += b.low[0] <= share <= b.high[0]
        b0, what0 = share_bands(params, "exponential-global", PRIOR, None, ALPHA)
        assert "leaves out" in what0
        alone += b0.low[0] <= share <= b0.high[0]
    se = (0.95 * 0.05 / n) ** 0.5
    assert with_noise / n >= 0.95 - 3 * se  # the stated 95 %, within three binomial standard errors
    assert alone / n < 0.8  # the released Beta's own band misses the truth far more often than 5 %
