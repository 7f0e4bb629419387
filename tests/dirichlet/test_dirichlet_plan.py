"""Assess from public inputs, then draw exactly the assessed release."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from dpdesk.engine.cube import build_cube
from dpdesk.engine.dirichlet.accuracy import alpha_for_target, tail_bound
from dpdesk.engine.dirichlet.plan import assess_posterior, draw_posterior
from dpdesk.engine.dirichlet.request import parse_posterior
from dpdesk.engine.dirichlet.sampling import SeededPosteriorSampler
from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.schema import Schema

SCHEMA = Schema.from_dict(
    {
        "attributes": [
            {"name": "age", "kind": "numeric", "edges": [0, 65, 90], "labels": ["0-65", "65-90"]},
            {"name": "education", "kind": "categorical", "values": ["school", "college", "degree"]},
        ]
    }
)
QUERY = parse_posterior('posterior(education | age="65-90"; prior=1)', SCHEMA)


@pytest.fixture(scope="module")
def cube():
    rng = np.random.default_rng(5)
    df = pd.DataFrame({"age": rng.uniform(0, 90, 300), "education": rng.choice(["school", "college", "degree"], 300)})
    return build_cube(df, SCHEMA)


def test_public_size_fixes_the_candidates_and_the_draw_picks_one(cube):
    a = assess_posterior(QUERY, budget=0.8, size=40)
    assert a.charge.alpha == 0.8 and a.charge.delta == 0 and a.size_alpha == 0
    assert a.candidates is not None and a.candidates.count == math.comb(42, 2)
    assert a.reference_counts is not None and sum(a.reference_counts) == 40
    assert set(a.reference) == {"laplace", "exponential-global"} and all(0 < v < 1 for v in a.reference.values())
    rec = a.record()
    json.dumps(rec)  # plain JSON
    assert rec["mechanism"] == "exponential-global" and rec["alpha"] == 0.8 and rec["size"] == 40
    out = draw_posterior(a, cube, SeededPosteriorSampler(1))
    assert any(np.array_equal(out.parameters, r) for r in a.candidates.parameters())
    assert out.noisy_size is None and out.mechanism["candidates"]["size"] == 40
    # public description only: the global sensitivity depends on the prior alone
    assert set(out.mechanism) == {"mechanism", "alpha", "delta", "candidates", "global_sensitivity"}


def test_noisy_size_is_released_first_and_charged(cube):
    a = assess_posterior(QUERY, mechanism="exponential-smooth", budget=1.0, delta=1e-6)
    assert a.size is None and a.candidates is None
    assert a.size_alpha == pytest.approx(0.25) and a.posterior_alpha == pytest.approx(0.75)
    assert a.charge.alpha == 1.0 and a.charge.delta == 1e-6
    out = draw_posterior(a, cube, SeededPosteriorSampler(2))
    assert out.noisy_size is not None and out.noisy_size == round(out.noisy_size)
    assert out.candidates.size == max(0, int(out.noisy_size))
    assert np.isclose(out.parameters.sum(), 3 + out.candidates.size)
    assert set(out.mechanism) == {"mechanism", "alpha", "delta", "candidates", "eps0", "beta", "split"}
    assert out.mechanism["alpha"] == pytest.approx(0.75)


def test_laplace_noises_every_count_and_clips(cube):
    a = assess_posterior(QUERY, mechanism="laplace", budget=0.05)
    assert a.size_alpha == 0 and a.charge.alpha == 0.05
    out = draw_posterior(a, cube, SeededPosteriorSampler(3))
    noisy = np.array(out.noisy_counts)
    assert np.array_equal(out.parameters, 1 + np.maximum(0, noisy))
    assert out.candidates is None and out.noisy_size is None


def test_accuracy_target_sets_the_budget_of_the_global_mechanism():
    a = assess_posterior(QUERY, within=0.2, failure=0.05, size=40)
    n = a.candidates.count
    assert tail_bound(QUERY.prior, a.alpha, n, 0.2) == pytest.approx(0.05)
    b = assess_posterior(QUERY, within=0.2, failure=0.05)  # noisy size: N bounded by the cap
    assert b.posterior_alpha == pytest.approx(alpha_for_target(QUERY.prior, b.max_candidates, 0.2, 0.05))
    assert b.alpha == pytest.approx(b.posterior_alpha / 0.75)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(), "needs a budget"),
        (dict(mechanism="magic", budget=1), "must be one of"),
        (dict(budget=-1), "budget"),
        (dict(budget=1, within=0.1, failure=0.1), "not both"),
        (dict(mechanism="laplace", within=0.1, failure=0.1), "global-sensitivity mechanism only"),
        (dict(mechanism="exponential-smooth", budget=1), "delta"),
        (dict(budget=1, delta=0.01), "smooth-sensitivity mechanism only"),
        (dict(budget=1, size=-3), "size"),
        (dict(budget=1, size=2.5), "size"),
        (dict(within=0, failure=0.1), "distance"),
        (dict(budget=1, size_share=1.0), "size share"),
    ],
)
def test_bad_settings_are_one_line_errors(kwargs, message):
    with pytest.raises(DpdeskError, match=message) as err:
        assess_posterior(QUERY, **kwargs)
    assert "\n" not in str(err.value)
