"""Inference over count and sum releases held in one history (docs/sums.md, Theorem 2).

A sum is a linear query over the vector of counts and sums, so history's BLUE, its exact posterior, the
interval and the infer/spend decision are the count machinery's, unchanged: checked against an
independent generalised-least-squares reference on the dense vector (primal and dual forms agree), by
calibration at fixed truths (the interval covers as often as its posterior mass says, within binomial
error), and through the answering workflow: a sum answered fresh, then a related combination of sums
and counts answered from history for free, with its interval.
"""

from __future__ import annotations

import numpy as np
import pytest
from stats_helpers import within_binomial

from dpdesk.engine.answering.fresh import true_answer
from dpdesk.engine.answering.workflow import Request, Settings, assess
from dpdesk.engine.cube import Cube, MeasureSums
from dpdesk.engine.inference.history import History, HistoryRow
from dpdesk.engine.inference.posterior import posterior
from dpdesk.engine.inference.prior import BoundedPrior
from dpdesk.engine.mechanisms.registry import noise_family
from dpdesk.engine.queries.layout import Layout
from dpdesk.engine.queries.measured import lift
from dpdesk.engine.queries.text import parse_query
from dpdesk.engine.schema import Schema

SCHEMA = Schema.from_dict(
    {
        "attributes": [
            {"name": "ward", "column": "ward", "kind": "categorical", "values": ["a", "b", "c"]},
            {"name": "age", "column": "age", "kind": "categorical", "values": ["young", "old"]},
        ],
        "measures": [
            {"name": "cost", "column": "cost", "bounds": [0, 500], "nulls": "skip"},
            {"name": "stay", "column": "stay", "bounds": [1, 30], "nulls": "replace", "null_value": 1},
        ],
    }
)
LAYOUT = Layout.of(SCHEMA)
COUNTS = np.array([[40, 12], [7, 90], [3, 55]])
COST = np.array([[8000.5, 2100.0], [900.0, 30500.25], [100.0, 19000.0]])
COST_VALUES = np.array([[38, 12], [7, 80], [3, 50]])
STAY = np.array([[120.0, 50.0], [20.0, 700.0], [5.0, 300.0]])
CUBE = Cube(
    SCHEMA,
    COUNTS,
    measures=(MeasureSums("cost", COST, COST_VALUES, 10), MeasureSums("stay", STAY, COUNTS, 0)),
)
TRUTH = np.concatenate(
    [COUNTS.ravel(), COST.ravel(), STAY.ravel(), COST_VALUES.ravel()]
)  # the vector, by hand

RELEASES = [  # (text, α, noise family)
    ('sum(cost | ward="a")', 0.5, "laplace"),
    ('count(ward="a")', 0.4, "discrete_laplace"),
    ('sum(cost | ward=["a", "b"])', 0.3, "laplace"),
    ('sum(stay | age="old") + count(age="old")', 0.6, "laplace"),
    ('count(cost | ward="b")', 0.5, "discrete_laplace"),
]


def history(answers=None):
    h = History(SCHEMA.shape, layout=LAYOUT)
    for i, (text, alpha, family) in enumerate(RELEASES):
        q = parse_query(text, SCHEMA)
        h.append(HistoryRow(q, alpha, 0.0 if answers is None else answers[i], family))
    return h


def test_the_vector_is_the_cubes():
    for text in (
        'sum(cost | ward="b") - 2*count(ward="b")',
        'count(cost | age="old")',
        "sum(stay) + sum(cost)",
    ):
        q = parse_query(text, SCHEMA)
        assert true_answer(q, CUBE) == pytest.approx(float(q.dense() @ TRUTH), rel=1e-12)


@pytest.mark.parametrize("form", ["primal", "dual"])
def test_blue_matches_generalised_least_squares(form):
    rng = np.random.default_rng(3)
    answers = rng.normal(1000, 300, len(RELEASES))
    h = history(answers)
    H = np.array([lift(parse_query(t, SCHEMA), LAYOUT).dense() for t, _, _ in RELEASES])
    sd = np.array(
        [np.sqrt(noise_family(f).variance(parse_query(t, SCHEMA).sensitivity / a)) for t, a, f in RELEASES]
    )
    W2 = np.diag(1 / sd**2)
    target = parse_query('sum(cost | ward="a") - 2*count(ward="a") + sum(cost | ward="b")', SCHEMA)
    M = np.linalg.pinv(H.T @ W2 @ H)
    A = target.dense() @ M @ H.T @ W2
    est = h.estimate(target, form=form)
    assert est.estimable
    np.testing.assert_allclose(est.coefficients, A, atol=1e-9)
    assert est.estimate == pytest.approx(float(A @ answers), rel=1e-9)
    assert est.variance == pytest.approx(float(np.sum(A**2 * sd**2)), rel=1e-9)
    # a sum over cells no release separated from others is not estimable
    assert not h.estimate(parse_query('sum(cost | ward="c")', SCHEMA), form=form).estimable
    assert not h.estimate(parse_query('sum(stay | age="old")', SCHEMA), form=form).estimable


def test_costs_per_cell_add_count_and_sum_releases():
    h = history()
    expected = np.zeros((3, 2))
    expected[0] += 0.5 + 0.4 + 0.3  # ward a: the sum of cost, its count, the two-ward sum
    expected[1] += 0.3 + 0.5  # ward b: the two-ward sum, the count of cost values
    expected[:, 1] += 0.6  # old: stay + count, charged 31/31 of α
    np.testing.assert_allclose(h.cell_costs.reshape(3, 2), expected, rtol=1e-12)


@pytest.mark.calibration
def test_calibrated_at_fixed_truths():
    """At the fixed table above, the interval ``θ̂ ± w`` of a combination inferred from history covers the
    truth as often as its posterior mass says (4 binomial sd: a correct engine fails < 1e-4)."""
    targets = [
        parse_query('sum(cost | ward="a") - 2*count(ward="a")', SCHEMA),
        parse_query('sum(cost | ward="b")', SCHEMA),
        parse_query('sum(stay | age="old") + count(age="old") + count(cost | ward="b")', SCHEMA),
    ]
    rng = np.random.default_rng(11)
    structure = history()
    for target in targets:
        est = structure.estimate(target)
        assert est.estimable
        post = posterior(0.0, est.coefficients, est.noise_scales, list(est.families))
        w = post.interval(0.1).high
        claimed = post.central_mass(w)
        truth = true_answer(target, CUBE)
        truths = np.array([true_answer(parse_query(t, SCHEMA), CUBE) for t, _, _ in RELEASES])
        draws = 4000
        noise = np.array(
            [
                noise_family(f).draw_seeded(rng, parse_query(t, SCHEMA).sensitivity / a, draws)
                for t, a, f in RELEASES
            ]
        )
        hits = np.abs(est.coefficients @ (truths[:, None] + noise) - truth) <= w
        within_binomial(hits, [claimed] * len(hits))


def test_a_sum_answered_fresh_then_a_related_one_free():
    h = History(SCHEMA.shape, layout=LAYOUT)
    settings = Settings(total_budget=3.0)
    first = Request("r1", parse_query('sum(cost | ward="a")', SCHEMA), eps=3000.0, delta=0.05)
    a1 = assess(h, first, settings, schema=SCHEMA)
    assert a1.decision == "spend"
    assert a1.pricing.noise.name == "laplace"  # a sum is not on the integers
    assert a1.pricing.fresh_alpha == pytest.approx(500 * np.log(20) / 3000)  # Thm 5.3 with S = 500
    np.testing.assert_allclose(a1.pricing.charge.dense(6), [a1.spend_alpha] * 2 + [0] * 4)
    h.append(HistoryRow(first.query, a1.spend_alpha, 10250.0, "laplace"))
    h.append(HistoryRow(parse_query('count(ward="a")', SCHEMA), 1.0, 52.0, "discrete_laplace"))
    related = Request(
        "r2", parse_query('sum(cost | ward="a") - 2*count(ward="a")', SCHEMA), eps=3100.0, delta=0.05
    )
    a2 = assess(h, related, settings, schema=SCHEMA)
    assert a2.decision == "infer" and a2.pricing.charge is not None
    assert a2.inference.estimate.estimate == pytest.approx(10250.0 - 2 * 52.0)
    iv = a2.inference.credible
    assert iv.low < 10146.0 < iv.high and iv.confidence >= 0.95
    assert a2.inference.release_interval == pytest.approx((10146.0 - 3100.0, 10146.0 + 3100.0))
    assert a2.inference.confidence_at_eps >= 0.95
    # the known bounds of a mixed query: each record adds between 0 − 2 and 500 − 2
    bounded = assess(h, related, Settings(3.0, prior=BoundedPrior(100)), schema=SCHEMA)
    assert bounded.inference.prior_bounds == (-200.0, 49800.0)
