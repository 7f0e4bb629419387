"""Batch plans: answerable after release (engine posterior), within the total, never worse than one by one."""

from __future__ import annotations

import numpy as np
import pytest
from batch_helpers import N
from batch_helpers import range_batch as _batch
from batch_helpers import range_query as _range

from dpdesk.engine.answering.fresh import true_answer
from dpdesk.engine.answering.workflow import Request, Settings, answerable, assess, infer
from dpdesk.engine.budget.policy import SpendPolicy
from dpdesk.engine.cube import Cube
from dpdesk.engine.errors import BudgetError, DpdeskError
from dpdesk.engine.inference.history import History, HistoryRow
from dpdesk.engine.mechanisms.noise import SeededSampler
from dpdesk.engine.planning import plan_batch
from dpdesk.engine.schema import Schema

SCHEMA = Schema.from_dict(
    {"attributes": [{"name": "c", "column": "c", "kind": "numeric", "edges": list(range(N + 1))}]}
)
CUBE = Cube(SCHEMA, np.random.default_rng(3).integers(0, 80, N))


def _released(history: History, plan, seed: int) -> History:
    """The history after the plan's measurements are released (simulation noise on the true counts)."""
    h = History(history.shape, rows=list(history.rows))
    sampler = SeededSampler(seed)
    for m in plan.measurements:
        y = sampler.release(m.family, true_answer(m.query, CUBE), m.query.sensitivity / m.alpha)
        h.append(HistoryRow(m.query, m.alpha, y, m.family))
    return h


@pytest.mark.parametrize(
    "total, policy", [(1.0, None), (0.15, None), (0.3, SpendPolicy(floor=0.05, cap=0.5))]
)
def test_every_planned_request_is_answerable_after_release_and_the_total_holds(total, policy):
    settings = Settings(total, policy=policy)
    reqs = _batch(1, 14)
    plan = plan_batch(History((N,)), reqs, settings)
    planned = plan.ids("planned")
    assert planned, "the batch should cover some requests"
    # the total: the plan's own charges on top of the costs it started from
    after = plan.charge.dense(N)
    assert after.max() <= total * (1 + 1e-9)
    assert np.allclose(after, plan.cell_costs_after)
    hist = _released(History((N,)), plan, seed=7)
    for p in plan.requests:
        a = assess(hist, p.request, settings, cell_costs=after)
        if p.status == "planned":
            assert a.decision == "infer", (p.id, a.reason)
        elif p.status == "uncovered":
            assert p.offer_eps is None or p.offer_eps > 0


def test_never_worse_than_one_by_one_and_better_when_requests_overlap():
    # many overlapping ranges, a budget that one-by-one answering runs out of
    reqs = _batch(5, 24, eps2=(6.0, 40.0))
    plan = plan_batch(History((N,)), reqs, Settings(0.2))
    obo = plan.one_by_one
    assert plan.answered >= obo.answered
    if plan.answered == obo.answered:
        assert plan.system_cost_after <= obo.system_cost_after + 1e-12
    assert plan.answered > obo.answered, [c.to_json() for c in plan.candidates]
    assert plan.strategy != "one by one"


def test_with_history_and_policy_the_plan_is_still_no_worse():
    rng = np.random.default_rng(2)
    hist = History((N,))
    for lo in range(0, N, 4):  # a released row per block of 4 cells
        q = _range(lo, lo + 4)
        hist.append(HistoryRow(q, 0.05, true_answer(q, CUBE) + rng.laplace(0, 20), "laplace"))
    settings = Settings(0.4, policy=SpendPolicy(floor=0.0, cap=0.6))
    reqs = _batch(9, 8)
    plan = plan_batch(hist, reqs, settings)
    assert plan.answered >= plan.one_by_one.answered
    assert plan.cell_costs_after.max() <= 0.4 * (1 + 1e-9)
    released = _released(hist, plan, seed=3)
    for p in plan.requests:
        if p.status != "uncovered":
            assert assess(released, p.request, settings, cell_costs=plan.cell_costs_after).decision == "infer"


def test_request_answerable_now_costs_nothing_and_an_empty_budget_plans_nothing():
    q = _range(0, 4)
    hist = History((N,), rows=[HistoryRow(q, 0.5, 100.0, "laplace")])
    easy = Request("easy", q, 40.0, 0.2)  # history's ±40 at 80 % already holds
    hard = Request("hard", _range(2, 9), 1.0, 0.2)
    plan = plan_batch(hist, [easy, hard], Settings(0.5))  # every touched... cells 0–3 are spent
    status = {p.id: p.status for p in plan.requests}
    assert status["easy"] == "answerable"
    assert status["hard"] == "uncovered"
    assert plan.measurements == ()
    hard_row = next(p for p in plan.requests if p.id == "hard")
    assert hard_row.offer_eps is None and "cannot cover" in hard_row.reason


def test_affordability_is_checked_against_costs_that_moved():
    reqs = _batch(4, 8)
    plan = plan_batch(History((N,)), reqs, Settings(0.3))
    plan.check_affordable(np.zeros(N), 0.3)  # as planned: fits
    moved = np.full(N, 0.25)
    with pytest.raises(BudgetError, match="over the total budget"):
        plan.check_affordable(moved, 0.3)


def test_bad_batches_are_refused_in_one_line():
    r = Request("a", _range(0, 2), 5.0, 0.2)
    with pytest.raises(DpdeskError, match="at least one"):
        plan_batch(History((N,)), [], Settings(1.0))
    with pytest.raises(DpdeskError, match="twice"):
        plan_batch(History((N,)), [r, r], Settings(1.0))


def _one_by_one_oracle(history: History, reqs, settings: Settings) -> tuple[int, float]:
    """Today's rules request after request, then every request not refused at its turn asked of the final
    history (the engine's full assessment, credible interval and all): how many it answers, at what cost."""
    h, costs, kept = History(history.shape, rows=list(history.rows)), history.cell_costs.copy(), []
    for r in reqs:
        a = assess(h, r, settings, cell_costs=costs)
        if a.decision == "spend":
            h.append(HistoryRow(r.query, float(a.spend_alpha), 0.0, a.noise.name))
            costs = costs + a.pricing.charge.dense(costs.size)
        if a.decision != "reject":
            kept.append(r)
    answered = sum(assess(h, r, settings, cell_costs=costs).decision == "infer" for r in kept)
    return answered, float(costs.max())


@pytest.mark.parametrize("total, seed", [(0.2, 5), (3.0, 6), (1.0, None)])
def test_one_by_one_left_unchecked_only_when_the_plan_beats_what_it_could_answer(total, seed):
    # overlapping ranges with a budget that covers some (0.2) or all (3.0): a strategy beats even what one
    # by one could answer, so its final history is not checked; disjoint ranges (seed None): one by one
    # ties the strategies at a lower cost, so it is checked in full and chosen. The oracle checks it in full.
    reqs = (
        _batch(seed, 16, eps2=(6.0, 40.0))
        if seed is not None
        else [Request(f"d{i}", _range(2 * i, 2 * i + 2), 10.0 + i, 0.2) for i in range(8)]
    )
    settings = Settings(total)
    plan = plan_batch(History((N,)), reqs, settings)
    answered, cost = _one_by_one_oracle(History((N,)), reqs, settings)
    obo = plan.one_by_one
    assert obo.answered >= answered  # its count, exact or a bound, never understates it
    assert (plan.answered, -plan.system_cost_after) >= (answered, -cost)
    assert obo.checked == (seed is None)
    if obo.checked:
        assert obo.answered == answered and obo.system_cost_after == pytest.approx(cost, rel=1e-12)
        assert plan.strategy == "one by one"
    else:
        assert plan.strategy != "one by one"
        assert plan.answered > obo.answered or plan.system_cost_after < obo.system_cost_after


def test_decision_only_inference_reads_the_same_probabilities():
    # 40 overlapping discrete rows: the BLUE mixes them with non-integer weights, too many atoms to list,
    # so the posterior is read from Selberg's brackets (the case whose drawing decision_only skips)
    rng = np.random.default_rng(0)
    hist = History((N,))
    for _ in range(40):
        lo = int(rng.integers(0, N - 2))
        q = _range(lo, int(rng.integers(lo + 1, N + 1)))
        hist.append(HistoryRow(q, 0.05, true_answer(q, CUBE), "discrete_laplace"))
    seen, decisions = set(), set()
    for lo, hi, eps in [(0, 2, 30.0), (2, 5, 60.0), (0, 8, 25.0), (4, 9, 90.0)]:
        r = Request("r", _range(lo, hi), eps, 0.2)
        full, quick = infer(hist, r), infer(hist, r, decision_only=True)
        assert quick.credible is None and full.credible is not None
        assert quick.posterior.method == full.posterior.method
        seen.add(full.posterior.method)
        assert quick.confidence_at_eps == full.confidence_at_eps
        assert quick.error_bound == full.error_bound
        assert answerable(quick, r) == answerable(full, r)
        decisions.add(answerable(full, r))
    assert seen == {"bandlimited"} and decisions == {True, False}, (seen, decisions)


def test_the_plan_says_why_it_saves_or_not_and_counts_one_by_one_as_it_counts_itself():
    """Issue 34 item 6: "one by one" is one number, counted like the plan's own (requests already free
    included), and one sentence says why the batch saves or does not."""
    saves = plan_batch(History((N,)), _batch(5, 24, eps2=(6.0, 40.0)), Settings(0.2))  # overlapping ranges
    assert saves.strategy != "one by one"
    why = saves.why()
    assert why.startswith("The batch saves:") and f"{len(saves.measurements)} measurement(s)" in why
    assert f"answers {saves.answered - saves.one_by_one_answered} more" in why
    alone = plan_batch(History((N,)), [_batch(5, 24)[0]], Settings(0.2))  # one request: nothing to share
    assert alone.strategy == "one by one" and alone.why().startswith("No saving:")
    for plan in (saves, alone):
        assert plan.one_by_one_answered == len(plan.ids("answerable")) + plan.one_by_one.answered
    for p in saves.requests:  # the α alone today, not the system cost's rise (0 when the cell is not the max)
        assert p.alone_alpha is None or p.alone_alpha >= (p.alone or 0.0) - 1e-12
