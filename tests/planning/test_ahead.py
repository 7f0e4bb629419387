"""Look-ahead batch plans (engine/planning/ahead.py): a strategy for the queue's workload so far."""

from __future__ import annotations

import numpy as np
from batch_helpers import N
from batch_helpers import range_batch as _batch
from batch_helpers import range_query as _range

from dpdesk.engine.answering.workflow import Settings, assess
from dpdesk.engine.inference.history import History, HistoryRow
from dpdesk.engine.planning import plan_batch
from dpdesk.engine.planning.ahead import ahead_strategies, plan_ahead


def _released(history: History, plan, seed: int) -> History:
    """The history after the plan's measurements are released (values do not enter any decision)."""
    h = History(history.shape, rows=list(history.rows))
    for m in plan.measurements:
        h.append(HistoryRow(m.query, m.alpha, 50.0 * m.query.sensitivity, m.family))
    return h


def _answered_next(history: History, plan, nxt, settings) -> int:
    """How many of the next batch's requests history answers for free after ``plan`` is released."""
    costs = plan.cell_costs_after
    released = _released(history, plan, seed=5)
    return sum(assess(released, r, settings, cell_costs=costs).decision == "infer" for r in nxt)


def test_look_ahead_plans_are_answerable_within_the_total_and_serve_the_next_batch():
    settings = Settings(1.0)
    seen, batch, nxt = _batch(11, 14), _batch(12, 10), _batch(13, 12)
    plain = plan_batch(History((N,)), batch, settings)
    plan = plan_ahead(History((N,)), batch, settings, seen=seen, share=1.0)
    assert plan.strategy.startswith("ahead: "), plan.strategy
    assert plan.answered >= plain.answered
    after = plan.charge.dense(N)
    assert np.allclose(after, plan.cell_costs_after)
    assert after.max() <= 1.0 * (1 + 1e-9)
    released = _released(History((N,)), plan, seed=7)
    for p in plan.requests:
        if p.status != "uncovered":
            assert assess(released, p.request, settings, cell_costs=after).decision == "infer", p.id
    # the point of looking ahead: the next batch finds more of its answers already in history
    assert _answered_next(History((N,)), plan, nxt, settings) > _answered_next(
        History((N,)), plain, nxt, settings
    )


def test_look_ahead_spends_only_cells_nobody_has_paid_for():
    hist = History((N,))
    q = _range(0, 4)
    hist.append(HistoryRow(q, 0.3, 100.0, "laplace"))  # cells 0–3 already carry a row
    costs = hist.cell_costs
    seen = _batch(21, 16)
    for s in ahead_strategies([r.query for r in seen], costs):
        assert not s.profile[:4].any(), s.name
    plan = plan_ahead(hist, _batch(22, 8), Settings(1.0), seen=seen, share=0.5, cell_costs=costs)
    assert plan.answered >= plan_batch(hist, _batch(22, 8), Settings(1.0), cell_costs=costs).answered
    assert plan.cell_costs_after.max() <= 1.0 * (1 + 1e-9)
    assert plan.strategy.startswith("ahead: "), plan.strategy
    assert not plan.measurements[0].charge.dense(N)[:4].any()  # the look-ahead rows come first


def test_without_a_share_or_unspent_cells_it_is_the_plain_plan():
    batch = _batch(31, 8)
    plain = plan_batch(History((N,)), batch, Settings(1.0))
    plan = plan_ahead(History((N,)), batch, Settings(1.0), seen=_batch(32, 8), share=0.0)
    assert plan.strategy == plain.strategy
    assert [m.alpha for m in plan.measurements] == [m.alpha for m in plain.measurements]
    full = np.full(N, 0.5)
    assert ahead_strategies([r.query for r in batch], full) == []


def _box(shape, rng):
    """A random range over one or both of the ordered axes 0 and 2, the others summed."""
    from dpdesk.engine.queries.query import Query, Term

    factors = [np.ones(n) for n in shape]
    for d in rng.choice([0, 2], size=int(rng.integers(1, 3)), replace=False):
        lo = int(rng.integers(0, shape[d]))
        hi = int(rng.integers(lo, shape[d])) + 1
        factors[d] = np.zeros(shape[d])
        factors[d][lo:hi] = 1.0
    return Query(shape, terms=(Term(1.0, tuple(factors)),))


def test_marginals_look_ahead_serves_a_range_workload_and_every_answer_passes_the_exact_check():
    from dpdesk.engine.answering.workflow import Request

    shape = (8, 4, 6)
    rng = np.random.default_rng(4)
    reqs = [Request(f"q{i}", _box(shape, rng), float(rng.uniform(20, 100)) / 2, 0.2) for i in range(30)]
    seen, batch = reqs[:20], reqs[20:]
    strategies = {s.name: s for s in ahead_strategies([r.query for r in seen + batch], np.zeros(192))}
    marg = strategies["ahead: marginals"]
    # one row per position of each varying set of axes: {0}, {2} and {0, 2} (axis 1 is always summed)
    assert len(marg) == 8 + 6 + 48
    assert np.allclose(marg.profile, 1.0)  # evenly weighted: every cell in one row of each marginal
    plan = plan_ahead(History(shape), batch, Settings(1.0), seen=seen, share=1.0)
    assert plan.strategy.startswith("ahead: marginals"), plan.strategy
    assert plan.cell_costs_after.max() <= 1.0 * (1 + 1e-9)
    released = History(shape)
    for m in plan.measurements:
        released.append(HistoryRow(m.query, m.alpha, 10.0 * m.query.sensitivity, m.family))
    answered = 0
    for p in plan.requests:
        if p.status != "uncovered":
            assert (
                assess(released, p.request, Settings(1.0), cell_costs=plan.cell_costs_after).decision
                == "infer"
            )
            answered += 1
    assert answered >= plan_batch(History(shape), batch, Settings(1.0)).answered
    # the queue's next requests of the same kind are met from history for free
    later = [Request(f"n{i}", _box(shape, rng), float(rng.uniform(20, 100)) / 2, 0.2) for i in range(20)]
    free = sum(
        assess(released, r, Settings(1.0), cell_costs=plan.cell_costs_after).decision == "infer"
        for r in later
    )
    assert free >= 10


def test_the_look_ahead_is_judged_for_the_queue_not_only_for_its_batch():
    from dpdesk.engine.answering.workflow import Request
    from dpdesk.engine.planning.ahead import queue_score

    settings = Settings(1.0)
    seen = _batch(41, 24, eps2=(20, 60))
    # two strict requests over wide ranges: only a fresh answer at most of their cells' budget meets them
    strict = [Request("s0", _range(0, 16), 2.0, 0.2), Request("s1", _range(0, 12), 2.2, 0.2)]
    batch = _batch(42, 6, eps2=(20, 60)) + strict
    plain = plan_batch(History((N,)), batch, settings)
    first_only = plan_ahead(History((N,)), batch, settings, seen=seen, share=1.0, future=0.0)
    queued = plan_ahead(History((N,)), batch, settings, seen=seen, share=1.0, future=1.0)
    # judged by the batch alone the plain plan wins (it answers one strict request more)
    assert first_only.look_ahead is None and first_only.answered == plain.answered
    assert queued.look_ahead is not None and queued.answered < plain.answered
    # the plain plan's rows are the batch's own queries: they count for the batch only
    workload = seen + batch
    assert queue_score(plain, batch, workload) == plain.answered
    assert queue_score(queued, batch, workload) > queue_score(plain, batch, workload)
    names = [c.name for c in queued.candidates]
    assert len(names) == len(set(names)), names
    # the curator is told what the batch alone would have answered (CLI line; the dialog says the same)
    from dpdesk.commands.batch import look_ahead_text

    assert queued.look_ahead.alone_answered == plain.answered
    line = look_ahead_text(queued, 1.0)
    assert f"answers {queued.answered} of this batch where the batch alone answers {plain.answered}" in line
    assert "where the batch alone" not in look_ahead_text(
        plan_ahead(History((N,)), batch, settings, seen=seen, share=1.0, future=0.0), 1.0
    )
    # what it is for: the queue's next requests of the same kind are answered from history for free
    after = queued.cell_costs_after
    assert after.max() <= 1.0 * (1 + 1e-9)
    released = _released(History((N,)), queued, seed=3)
    for p in queued.requests:
        if p.status != "uncovered":
            assert assess(released, p.request, settings, cell_costs=after).decision == "infer", p.id
    nxt = _batch(43, 20, eps2=(20, 60))
    free_queued = _answered_next(History((N,)), queued, nxt, settings)
    free_plain = _answered_next(History((N,)), plain, nxt, settings)
    assert free_queued >= free_plain + 10, (free_queued, free_plain)
