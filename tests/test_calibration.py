"""Calibration: credible intervals cover the true answer as often as they claim.

With a flat prior the posterior of θ is θ̂ − A·N and θ̂ − θ = A·N, so the interval
``[θ̂ − w, θ̂ + w]`` covers the truth exactly when ``|A·N| ≤ w``: its frequentist coverage equals its
posterior mass. We simulate many random histories over a cube with known counts, draw the noise of
every history row, run the engine, and compare the hit rate with the claimed mass within binomial
error (4 standard deviations, so a correct engine fails with probability < 1e-4 per check). Draws of
one structure share a posterior, so the binomial error is a slight underestimate of the spread of the
claimed masses' average; with 50 structures × 200 draws the 4σ margin still covers it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from stats_helpers import random_box, within_binomial

from dpdesk.engine.answering.fresh import true_answer
from dpdesk.engine.answering.workflow import Request, assess
from dpdesk.engine.cube import Cube
from dpdesk.engine.errors import QueryError
from dpdesk.engine.inference.history import History, HistoryRow
from dpdesk.engine.mechanisms.noise import SeededSampler
from dpdesk.engine.queries.query import Query, Term
from dpdesk.engine.schema import Schema

pytestmark = pytest.mark.calibration

SCHEMA = Schema.from_dict(
    {
        "attributes": [
            {"name": "a", "column": "a", "kind": "categorical", "values": ["p", "q", "r", "s"]},
            {"name": "b", "column": "b", "kind": "numeric", "edges": [0, 10, 20, 40, 80]},
        ]
    }
)
COUNTS = np.array([[5, 40, 12, 0], [80, 33, 2, 19], [7, 7, 150, 61], [0, 1, 3, 26]])
CUBE = Cube(SCHEMA, COUNTS)


def _noise(rng, family, scales, size):
    """``size`` independent draws of each history row's noise (numpy; inference-only randomness)."""
    scales = np.asarray(scales)
    if family == "laplace":
        return rng.laplace(0.0, scales, size=(size, len(scales)))
    p = -np.expm1(-1.0 / scales)
    return (rng.geometric(p, size=(size, len(scales))) - rng.geometric(p, size=(size, len(scales)))).astype(
        float
    )


def _simulate(rng, family, structures, draws_per_structure, delta):
    """Per simulated request: (claimed interval mass, hit, confidence at ±ε, hit at ±ε, decision).

    Each structure (released boxes, budgets, target) is run through the engine once with a real noisy
    history; the engine's error there must equal ``A·N`` exactly. The posterior, its interval and the
    decision depend only on the structure, never on the noise, so the remaining draws of the same
    structure reuse them with their own ``A·N``.
    """
    sampler = SeededSampler(int(rng.integers(2**31)))
    out = []
    made = 0
    while made < structures:
        rows = [random_box(rng, SCHEMA.shape) for _ in range(int(rng.integers(2, 7)))]
        alphas = rng.uniform(0.05, 0.6, size=len(rows))
        # the target: a combination of released rows, so it is estimable
        coefs = rng.integers(-1, 2, size=len(rows))
        coefs[0] = 1
        try:
            target = Query(
                SCHEMA.shape,
                terms=tuple(Term(c * t.weight, t.factors) for c, r in zip(coefs, rows) if c for t in r.terms),
            )
        except QueryError:  # the combination cancelled out to the zero query
            continue
        made += 1
        theta = true_answer(target, CUBE)
        eps = float(rng.uniform(2, 40))
        truths = np.array([true_answer(q, CUBE) for q in rows])
        scales = np.array([q.sensitivity / a for q, a in zip(rows, alphas)])
        first = np.array([sampler.release(family, 0, b) for b in scales])  # the noise alone (θ = 0)
        h = History(SCHEMA.shape)
        for q, a, t, n in zip(rows, alphas, truths, first):
            h.append(HistoryRow(q, float(a), float(t + n), family))
        a = assess(h, Request("t", target, eps=eps, delta=delta), 100.0)
        A = np.asarray(a.estimate.coefficients)
        assert a.estimate.estimate - theta == pytest.approx(float(A @ first), abs=1e-9 * (1 + abs(theta)))
        w = a.interval[1] - a.estimate.estimate
        errors = np.concatenate([[A @ first], _noise(rng, family, scales, draws_per_structure - 1) @ A])
        for err in errors:
            out.append(
                (a.interval_confidence, abs(err) <= w, a.confidence_at_eps, abs(err) <= eps, a.decision)
            )
    return out


@pytest.mark.parametrize("family", ["laplace", "discrete_laplace"])
@pytest.mark.parametrize("delta", [0.05, 0.2, 0.5])
def test_credible_intervals_are_calibrated(family, delta):
    rng = np.random.default_rng(1000 + int(delta * 100) + (family == "laplace"))
    res = _simulate(rng, family, structures=50, draws_per_structure=200, delta=delta)
    claimed = [r[0] for r in res]
    assert min(claimed) >= 1 - delta - 1e-9
    within_binomial([r[1] for r in res], claimed)
    # the mass at ±ε is calibrated too
    within_binomial([r[3] for r in res], [r[2] for r in res])


@pytest.mark.parametrize("delta", [0.1, 0.3])
def test_inferred_answers_cover_at_least_one_minus_delta(delta):
    rng = np.random.default_rng(77 + int(delta * 10))
    res = _simulate(rng, "laplace", structures=50, draws_per_structure=200, delta=delta)
    inferred = [r for r in res if r[4] == "infer"]
    assert len(inferred) >= 200, "the simulation should produce many inferred answers"
    n = len(inferred)
    rate = float(np.mean([r[3] for r in inferred]))
    assert rate >= (1 - delta) - 4 * math.sqrt(delta * (1 - delta) / n)
