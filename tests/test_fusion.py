"""Fusion-aware budgets: the fused BLUE, the fused α, its use in assess/release, and its calibration.

The calibration test is a simulation over fixed seeds. For a fixed history structure and target, the
fused release ``θ̂_F = t·ỹ + (1−t)·θ̂_H`` has error ``θ̂_F − θ = (1−t)·A·N_H + t·N_new`` whatever the
data, so ``Pr(|θ̂_F − θ| ≤ ε)`` is exactly the fused posterior's mass on ``±ε`` (what the plan claims,
up to the grid's lower-bound interpolation). Over ``n`` independent draws the hit count is binomial;
we accept a hit rate within 4 binomial standard deviations of the mean claimed mass (a correct engine
fails a check with probability < 1e-4), and require it to be at least ``1 − δ`` within the same error.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from stats_helpers import random_box, within_binomial

from dpdesk.engine.answering.fresh import release_fresh, true_answer
from dpdesk.engine.answering.workflow import Request, Settings, assess
from dpdesk.engine.budget.accounting import fresh_alpha
from dpdesk.engine.cube import Cube
from dpdesk.engine.errors import QueryError
from dpdesk.engine.inference.fusion import fuse, fused_confidence, fusion_weight, plan_fusion
from dpdesk.engine.inference.history import History, HistoryRow
from dpdesk.engine.mechanisms.base import meets
from dpdesk.engine.mechanisms.noise import SeededSampler
from dpdesk.engine.mechanisms.registry import noise_family
from dpdesk.engine.queries.query import Query, Term
from dpdesk.engine.schema import Schema

SCHEMA = Schema.from_dict(
    {
        "attributes": [
            {"name": "a", "column": "a", "kind": "categorical", "values": ["p", "q", "r"]},
            {"name": "b", "column": "b", "kind": "numeric", "edges": [0, 10, 20, 40]},
        ]
    }
)
COUNTS = np.array([[5, 40, 12], [80, 0, 2], [7, 150, 61]])
CUBE = Cube(SCHEMA, COUNTS)


def _structure(rng):
    """Random history rows with budgets, and an estimable target (a combination of the rows)."""
    while True:
        rows = [random_box(rng, SCHEMA.shape) for _ in range(int(rng.integers(1, 6)))]
        alphas = rng.uniform(0.02, 0.5, size=len(rows))
        coefs = rng.integers(-1, 2, size=len(rows))
        coefs[0] = 1
        try:
            target = Query(
                SCHEMA.shape,
                terms=tuple(Term(c * t.weight, t.factors) for c, r in zip(coefs, rows) if c for t in r.terms),
            )
        except QueryError:
            continue
        return rows, alphas, target


def _history(rows, alphas, family, sampler) -> History:
    h = History(SCHEMA.shape)
    for q, a in zip(rows, alphas):
        h.append(
            HistoryRow(q, float(a), sampler.release(family, true_answer(q, CUBE), q.sensitivity / a), family)
        )
    return h


# -- the fused BLUE ------------------------------------------------------------------------------
@pytest.mark.parametrize("family", ["laplace", "discrete_laplace"])
@pytest.mark.parametrize("seed", range(6))
def test_fused_blue_is_the_inverse_variance_combination(family, seed):
    rng = np.random.default_rng(seed)
    rows, alphas, target = _structure(rng)
    sampler = SeededSampler(seed)
    h = _history(rows, alphas, family, sampler)
    est = h.estimate(target)
    assert est.estimable
    alpha = float(rng.uniform(0.01, 1.0))
    y_new = sampler.release(family, true_answer(target, CUBE), target.sensitivity / alpha)
    v_new = noise_family(family).variance(target.sensitivity / alpha)
    t = fusion_weight(est.variance, v_new)
    h.append(HistoryRow(target, alpha, y_new, family))
    both = h.estimate(target)
    assert both.estimate == pytest.approx(fuse(est.estimate, y_new, t), rel=1e-9, abs=1e-7)
    assert both.variance == pytest.approx(est.variance * v_new / (est.variance + v_new), rel=1e-9)
    np.testing.assert_allclose(both.coefficients, np.append((1 - t) * est.coefficients, t), atol=1e-9)


# -- the fused α ---------------------------------------------------------------------------------
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**31 - 1),
    eps=st.floats(1.0, 200.0),
    delta=st.floats(0.01, 0.6),
    family=st.sampled_from(["laplace", "discrete_laplace"]),
)
def test_fused_alpha_never_exceeds_thm_5_3(seed, eps, delta, family):
    rng = np.random.default_rng(seed)
    rows, alphas, target = _structure(rng)
    h = _history(rows, alphas, family, SeededSampler(seed))
    est = h.estimate(target)
    plan = plan_fusion(est, target.sensitivity, eps, delta, family)
    fresh = fresh_alpha(target.sensitivity, eps, delta, family)
    assert plan.fresh_alpha == fresh
    assert 0 < plan.alpha <= fresh
    if plan.fused:
        # feasible by the one definition of "meets (ε, δ)" (1 − δ up to the rounding of computed masses)
        assert meets(plan.confidence, delta) and plan.confidence >= 1 - delta - 1e-9
        assert 0 < plan.weight <= 1
        # the plan is feasible: recompute the mass at the charged α
        assert meets(fused_confidence(est, plan.alpha, target.sensitivity, family, eps), delta)
    else:
        assert plan.alpha == fresh


def test_not_estimable_means_no_fusion():
    h = History(SCHEMA.shape)
    est = h.estimate(random_box(np.random.default_rng(0), SCHEMA.shape))
    plan = plan_fusion(est, 1.0, 10.0, 0.1, "laplace")
    assert not plan.fused and plan.alpha == plan.fresh_alpha == fresh_alpha(1.0, 10.0, 0.1)


def test_the_fused_alpha_is_the_smallest_that_works():
    rng = np.random.default_rng(3)
    rows, alphas, target = _structure(rng)
    h = _history(rows, alphas, "laplace", SeededSampler(3))
    est = h.estimate(target)
    eps = 0.6 * est.std
    plan = plan_fusion(est, target.sensitivity, eps, 0.1, "laplace", rtol=1e-4)
    assert plan.fused and plan.alpha < plan.fresh_alpha
    below = fused_confidence(est, plan.alpha * (1 - 2e-3), target.sensitivity, "laplace", eps)
    assert below < 0.9 <= plan.confidence


# -- assess and release --------------------------------------------------------------------------
def _fusable(seed=5, family="discrete_laplace"):
    rng = np.random.default_rng(seed)
    rows, alphas, target = _structure(rng)
    h = _history(rows, alphas, family, SeededSampler(seed))
    est = h.estimate(target)
    return h, target, 0.7 * est.std


def test_assess_charges_the_fused_alpha_and_says_so():
    h, target, eps = _fusable()
    req = Request("r", target, eps=eps, delta=0.1)
    a = assess(h, req, 100.0, schema=SCHEMA)
    assert a.decision == "spend" and a.fused and a.fusion
    assert a.spend_alpha < a.fresh_alpha and a.cost == a.spend_alpha and a.saving > 0
    assert "instead of" in a.reason and "thanks to history" in a.reason
    expected_after = float(np.max(h.cell_costs + a.spend_alpha * np.abs(target.dense()) / target.sensitivity))
    assert a.budget.system_cost_after == pytest.approx(expected_after)
    j = a.to_json()
    assert (
        j["spend_alpha"] == a.spend_alpha and j["fusion_weight"] == a.fusion_weight and j["prior"] == "flat"
    )
    paper = assess(h, req, Settings(100.0, fusion=False))
    assert paper.spend_alpha == paper.fresh_alpha == a.fresh_alpha and paper.fusion_weight is None
    assert "instead of" not in paper.reason


def test_fused_alpha_depends_only_on_public_quantities():
    """Different noise draws (same structure and budgets) give the same decision and α."""
    rng = np.random.default_rng(5)
    rows, alphas, target = _structure(rng)
    eps = 0.7 * _history(rows, alphas, "laplace", SeededSampler(0)).estimate(target).std
    seen = set()
    for s in range(3):
        a = assess(
            _history(rows, alphas, "laplace", SeededSampler(100 + s)), Request("r", target, eps, 0.1), 100.0
        )
        seen.add((a.decision, a.spend_alpha, a.fusion_weight))
    assert len(seen) == 1


def test_fusion_lets_a_request_fit_that_thm_5_3_rejects():
    h, target, eps = _fusable()
    paper = assess(h, Request("r", target, eps, 0.1), Settings(100.0, fusion=False))
    fused = assess(h, Request("r", target, eps, 0.1), 100.0)
    # a total between the fused and the unfused system cost after
    total = (fused.budget.system_cost_after + paper.budget.system_cost_after) / 2
    assert assess(h, Request("r", target, eps, 0.1), Settings(total, fusion=False)).decision == "reject"
    a = assess(h, Request("r", target, eps, 0.1), total)
    assert a.decision == "spend" and a.budget.fits


def test_release_fresh_fuses_and_records_the_raw_answer():
    h, target, eps = _fusable()
    a = assess(h, Request("r", target, eps, 0.1), 100.0)
    fresh = release_fresh(a, CUBE, SeededSampler(9), allow_insecure=True)
    assert fresh.alpha == a.spend_alpha and fresh.fusion_weight == a.fusion_weight
    assert fresh.released == pytest.approx(fuse(a.estimate.estimate, fresh.answer, a.fusion_weight))
    assert fresh.released_interval == (fresh.released - eps, fresh.released + eps)
    assert fresh.interval == (fresh.answer - eps, fresh.answer + eps)  # the raw ỹ keeps its meaning
    row = fresh.history_row()
    assert row.answer == fresh.answer and row.alpha == a.spend_alpha
    # without fusion, released is the raw answer
    b = assess(h, Request("r", target, eps, 0.1), Settings(100.0, fusion=False))
    plain = release_fresh(b, CUBE, SeededSampler(9), allow_insecure=True)
    assert plain.released == plain.answer and plain.fusion_weight is None


# -- calibration ---------------------------------------------------------------------------------
@pytest.mark.calibration
@pytest.mark.parametrize("family", ["laplace", "discrete_laplace"])
@pytest.mark.parametrize("delta", [0.05, 0.2])
def test_fused_releases_are_calibrated(family, delta):
    rng = np.random.default_rng(4242 + int(delta * 100) + (family == "laplace"))
    hits, claimed = [], []
    structures = 0
    while structures < 30:
        rows, alphas, target = _structure(rng)
        theta = true_answer(target, CUBE)
        h = _history(rows, alphas, family, SeededSampler(int(rng.integers(2**31))))
        est = h.estimate(target)
        eps = float(rng.uniform(0.3, 0.9)) * est.std  # history alone is not enough
        plan = plan_fusion(est, target.sensitivity, eps, delta, family)
        if not plan.fused:
            continue
        structures += 1
        A = np.asarray(est.coefficients)
        truths = np.array([true_answer(q, CUBE) for q in rows])
        sampler = SeededSampler(int(rng.integers(2**31)))
        for _ in range(60):
            y = np.array(
                [sampler.release(family, t, q.sensitivity / a) for t, q, a in zip(truths, rows, alphas)]
            )
            y_new = sampler.release(family, theta, target.sensitivity / plan.alpha)
            released = fuse(float(A @ y), y_new, plan.weight)
            hits.append(abs(released - theta) <= eps)
            claimed.append(plan.confidence)
    rate, sd = within_binomial(hits, claimed)
    assert rate >= 1 - delta - 4 * sd
