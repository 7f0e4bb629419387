"""The spend policy (budget pacing): headroom, declining, raising α, and what assess does with it."""

from __future__ import annotations

import numpy as np
import pytest
from stats_helpers import within_binomial

from dpdesk.engine.answering.fresh import release_fresh, true_answer
from dpdesk.engine.answering.workflow import Request, Settings, assess
from dpdesk.engine.budget.accounting import fresh_alpha, preview
from dpdesk.engine.budget.policy import SpendPolicy, headroom
from dpdesk.engine.cube import Cube
from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.inference.fusion import fuse, fused_confidence
from dpdesk.engine.inference.history import History, HistoryRow
from dpdesk.engine.mechanisms.laplace import LAPLACE
from dpdesk.engine.mechanisms.noise import SeededSampler
from dpdesk.engine.queries.query import query_from_vector
from dpdesk.engine.schema import Schema

N = 12
SCHEMA = Schema.from_dict(
    {"attributes": [{"name": "c", "column": "c", "kind": "numeric", "edges": list(range(N + 1))}]}
)
CUBE = Cube(SCHEMA, np.random.default_rng(0).integers(0, 60, N))


def _q(vec):
    return query_from_vector(np.asarray(vec, dtype=float), (N,))


def _random_query(rng):
    vec = np.zeros(N)
    idx = rng.choice(N, size=int(rng.integers(1, 6)), replace=False)
    vec[idx] = rng.integers(1, 4, idx.size)
    return _q(vec)


def test_headroom_is_the_largest_alpha_that_fits():
    rng = np.random.default_rng(1)
    for _ in range(200):
        q = _random_query(rng)
        costs = rng.uniform(0, 1.0, N) * (rng.random(N) < 0.7)
        room, cell = headroom(q, costs, 1.0)
        assert cell is not None and q.dense()[cell] != 0
        if room > 0:
            assert preview(costs, 1.0, LAPLACE.charge_for(q, room * (1 - 1e-9))).fits
            assert not preview(costs, 1.0, LAPLACE.charge_for(q, room * (1 + 1e-6))).fits
            # the limiting cell is the one that overflows first
            assert preview(costs, 1.0, LAPLACE.charge_for(q, room * (1 + 1e-6))).limiting_cell == cell


def test_a_spent_cell_leaves_no_headroom():
    costs = np.zeros(N)
    costs[3] = 1.0
    assert headroom(_q(np.eye(N)[3] + np.eye(N)[4]), costs, 1.0) == (0.0, 3)


@pytest.mark.parametrize(
    "kw", [dict(floor=-0.1), dict(floor=1.5), dict(cap=0.0), dict(cap=float("nan")), dict(floor=0.6, cap=0.5)]
)
def test_policy_fractions_are_checked(kw):
    with pytest.raises(DpdeskError, match="spend policy"):
        SpendPolicy(**kw)


def test_a_neutral_policy_changes_nothing():
    rng = np.random.default_rng(2)
    h = History((N,))
    sampler = SeededSampler(2)
    for _ in range(15):
        q = _random_query(rng)
        h.append(
            HistoryRow(
                q, 0.05, sampler.release("laplace", true_answer(q, CUBE), q.sensitivity / 0.05), "laplace"
            )
        )
    for i in range(40):
        req = Request(str(i), _random_query(rng), eps=float(rng.uniform(2, 200)), delta=0.2)
        a = assess(h, req, 1.0, family="laplace")
        b = assess(h, req, Settings(1.0, policy=SpendPolicy()), family="laplace")
        assert (a.decision, a.spend_alpha, a.fusion_weight) == (b.decision, b.spend_alpha, b.fusion_weight)
        assert b.policy == "greedy"


def test_the_cap_declines_a_request_that_would_drain_its_cells():
    q = _q(np.eye(N)[0] + np.eye(N)[1])
    eps = fresh_alpha(1.0, 1.0, 0.2, "laplace") / 0.4  # Thm 5.3's α is ∝ 1/ε: this ε needs α = 0.4
    need = fresh_alpha(q.sensitivity, eps, 0.2, "laplace")
    assert 0.3 < need < 0.6
    h = History((N,))
    plain = assess(h, Request("r", q, eps, 0.2), 1.0, family="laplace")
    assert plain.decision == "spend"
    a = assess(
        h,
        Request("r", q, eps, 0.2),
        Settings(1.0, policy=SpendPolicy(cap=0.25)),
        family="laplace",
        schema=SCHEMA,
    )
    assert a.decision == "reject" and a.cost == 0.0
    assert a.reason.startswith("declined by the spend policy") and "25%" in a.reason
    # both cells have the same room: both are named, not one picked among equals
    assert 'limited by all 2 cells of count(c=["0-1", "1-2"]))' in a.reason
    assert a.headroom == pytest.approx(1.0) and a.needed_alpha == pytest.approx(need)
    # a looser cap lets it through at the α it needs
    b = assess(h, Request("r", q, eps, 0.2), Settings(1.0, policy=SpendPolicy(cap=0.6)), family="laplace")
    assert b.decision == "spend" and b.spend_alpha == pytest.approx(need)


def test_the_floor_raises_alpha_and_the_release_uses_it():
    q = _q(2 * np.eye(N)[0] + np.eye(N)[5])
    h = History((N,))
    costs_before = np.zeros(N)
    costs_before[5] = 0.6
    h.append(HistoryRow(_q(np.eye(N)[5]), 0.6, 1.0, "laplace"))
    req = Request("r", q, eps=400.0, delta=0.2)  # loose: Thm 5.3 asks for very little
    need = fresh_alpha(q.sensitivity, 400.0, 0.2, "laplace")
    a = assess(h, req, Settings(1.0, policy=SpendPolicy(floor=0.1)), family="laplace")
    room = (1.0 - 0.6) * q.sensitivity / 1.0  # cell 5 limits: coefficient 1 of S = 2
    assert a.decision == "spend" and a.headroom == pytest.approx(room)
    assert a.spend_alpha == pytest.approx(0.1 * room) and a.needed_alpha == pytest.approx(need)
    assert a.needed_alpha < a.spend_alpha
    assert "spend policy" in a.reason and "at least 10%" in a.reason
    assert a.budget.cell_costs_after == pytest.approx(
        costs_before + LAPLACE.charge_for(q, a.spend_alpha).dense(N)
    )
    fresh = release_fresh(a, CUBE, SeededSampler(3), allow_insecure=True)
    assert fresh.alpha == a.spend_alpha and fresh.history_row().alpha == a.spend_alpha
    # the floor never takes α past the headroom
    b = assess(h, req, Settings(1.0, policy=SpendPolicy(floor=1.0)), family="laplace")
    assert b.budget.fits and b.spend_alpha <= room and b.spend_alpha == pytest.approx(room)


def test_inferred_answers_ignore_the_policy():
    q = _q(np.eye(N)[2])
    h = History((N,))
    h.append(HistoryRow(q, 0.5, 10.0, "laplace"))
    a = assess(
        h,
        Request("r", q, eps=50.0, delta=0.2),
        Settings(1.0, policy=SpendPolicy(floor=0.5, cap=0.5)),
        family="laplace",
    )
    assert a.decision == "infer" and a.cost == 0.0 and a.headroom is None


@pytest.mark.calibration
def test_paced_fused_releases_are_calibrated():
    """A fresh answer raised by the floor and fused with history covers θ with the mass it claims."""
    delta = 0.2
    rng = np.random.default_rng(77)
    hits, claimed = [], []
    cases = 0
    while cases < 25:
        rows = [_random_query(rng) for _ in range(int(rng.integers(3, 8)))]
        alphas = rng.uniform(0.02, 0.1, len(rows))
        target = _random_query(rng)
        sampler = SeededSampler(int(rng.integers(2**31)))
        truths = np.array([true_answer(q, CUBE) for q in rows])
        h = History((N,))
        for q, al, t in zip(rows, alphas, truths):
            h.append(HistoryRow(q, al, sampler.release("laplace", t, q.sensitivity / al), "laplace"))
        est = h.estimate(target)
        if not est.estimable:
            continue
        eps = float(rng.uniform(0.3, 0.9)) * est.std
        a = assess(
            h,
            Request("r", target, eps, delta),
            Settings(1.0, policy=SpendPolicy(floor=0.05)),
            family="laplace",
        )
        if a.decision != "spend" or not a.fused or not a.spend_alpha > a.needed_alpha:
            continue
        cases += 1
        assert a.fused_confidence == pytest.approx(
            fused_confidence(est, a.spend_alpha, target.sensitivity, "laplace", eps)
        )
        A, theta = np.asarray(est.coefficients), true_answer(target, CUBE)
        for _ in range(60):
            y = np.array(
                [sampler.release("laplace", t, q.sensitivity / al) for t, q, al in zip(truths, rows, alphas)]
            )
            y_new = sampler.release("laplace", theta, target.sensitivity / a.spend_alpha)
            hits.append(abs(fuse(float(A @ y), y_new, a.fusion_weight) - theta) <= eps)
            claimed.append(a.fused_confidence)
    rate, sd = within_binomial(hits, claimed)
    assert rate >= 1 - delta - 4 * sd


def test_a_paced_stream_never_overspends_and_never_undercharges():
    rng = np.random.default_rng(9)
    h = History((N,))
    sampler = SeededSampler(9)
    policy = SpendPolicy(floor=0.1, cap=0.5)
    declined = raised = 0
    for i in range(150):
        req = Request(str(i), _random_query(rng), eps=float(rng.uniform(0.5, 100)), delta=0.2)
        a = assess(h, req, Settings(1.0, policy=policy), family="laplace")
        if a.decision == "spend":
            assert a.spend_alpha >= a.needed_alpha
            raised += a.spend_alpha > a.needed_alpha
            fresh = release_fresh(a, CUBE, sampler, allow_insecure=True)
            h.append(fresh.history_row())
            assert h.cell_costs.max() <= 1.0 + 1e-12
        elif a.decision == "reject" and a.reason.startswith("declined"):
            declined += 1
            assert a.needed_alpha > 0.5 * a.headroom
    assert declined > 0 and raised > 0


@pytest.mark.parametrize("delta", [0.05, 0.2, 0.5, 0.7])
def test_every_paced_fresh_answer_still_meets_the_requirement(delta):
    """Raised or not, fused or not: what spend releases holds 1 − δ on ±ε (the fused posterior's mass,
    or Thm 5.3's α for a plain answer)."""
    rng = np.random.default_rng(int(delta * 100))
    checked = 0
    for _ in range(40):
        h = History((N,))
        sampler = SeededSampler(int(rng.integers(2**31)))
        for _ in range(int(rng.integers(1, 8))):
            q = _random_query(rng)
            a = float(rng.uniform(0.01, 0.1))
            h.append(
                HistoryRow(
                    q, a, sampler.release("laplace", true_answer(q, CUBE), q.sensitivity / a), "laplace"
                )
            )
        target = _random_query(rng)
        est = h.estimate(target)
        eps = float(rng.uniform(0.2, 1.0)) * (est.std if est.estimable else 30.0)
        policy = SpendPolicy(floor=float(rng.choice([0.0, 0.05, 0.2, 0.6])), cap=1.0)
        a = assess(h, Request("r", target, eps, delta), Settings(1.0, policy=policy), family="laplace")
        if a.decision != "spend":
            continue
        checked += 1
        if a.fused:
            assert (
                fused_confidence(est, a.spend_alpha, target.sensitivity, "laplace", eps) >= 1 - delta - 1e-9
            )
        else:
            assert a.spend_alpha >= a.fresh_alpha * (1 - 1e-12)
    assert checked >= 20
