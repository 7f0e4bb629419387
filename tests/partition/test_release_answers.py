"""Answering from a partition release's own structure: the recorded release read back, the best release
for a query, and the coverage of what it serves."""

from __future__ import annotations

import json

import numpy as np
import pytest
from stats_helpers import within_binomial

from dpdesk.engine.answering.fresh import release_fresh
from dpdesk.engine.answering.workflow import Request, assess
from dpdesk.engine.cube import Cube
from dpdesk.engine.errors import DpdeskError, PlanError
from dpdesk.engine.inference.history import History, HistoryRow
from dpdesk.engine.inference.structured import FORM, best_answer, prefer
from dpdesk.engine.mechanisms.base import Basis
from dpdesk.engine.mechanisms.noise import SeededSampler
from dpdesk.engine.partition.grouped import GroupedPosterior
from dpdesk.engine.partition.guarantee import preview
from dpdesk.engine.partition.plan import cells_plan, marginals_by_order, tree_plan
from dpdesk.engine.partition.release import PartitionRelease, draw_release
from dpdesk.engine.partition.release_plan import PartitionReleasePlan
from dpdesk.engine.queries.query import Query, Term
from dpdesk.engine.queries.text import parse_query


def _payload(schema, counts, plan, alpha=0.5, seed=4):
    rp = PartitionReleasePlan(preview(plan, alpha=alpha, total_budget=10.0), Basis("head", 1))
    return json.loads(
        json.dumps({**rp.record(), **rp.draw(Cube(schema, counts), SeededSampler(seed), allow_insecure=True)})
    )


def _interval(shape, lo, hi) -> Query:
    f = np.zeros(shape[0])
    f[lo : hi + 1] = 1.0
    return Query(shape, terms=(Term(1.0, (f,) + tuple(np.ones(k) for k in shape[1:])),))


def test_a_recorded_release_is_read_back_with_the_structure_that_was_charged(schema3, counts3):
    plan = tree_plan(schema3, "age", 2, cross=["sex"])
    payload = _payload(schema3, counts3, plan)
    rel = PartitionRelease.from_payload(schema3, payload)
    assert rel.alpha == pytest.approx(0.5) and rel.scale == pytest.approx(payload["scale"])
    assert [v.reshape(-1).tolist() for v in rel.values] == payload["values"]
    q = parse_query('count(age=["10-20","20-30"], sex="M")', schema3)
    again = draw_release(plan, 0.5, counts3, SeededSampler(4), allow_insecure=True)
    assert rel.estimate(q).estimate == pytest.approx(again.estimate(q).estimate)
    swapped = {**payload, "plan": {"kind": "cells"}}  # asked-for plan and charged groups disagree
    with pytest.raises(PlanError, match="does not have the recorded groups"):
        PartitionRelease.from_payload(schema3, swapped)
    with pytest.raises(PlanError, match="malformed payload"):
        PartitionRelease.from_payload(schema3, {k: v for k, v in payload.items() if k != "values"})
    with pytest.raises(DpdeskError, match="not a partition"):
        bad = json.loads(json.dumps(payload))
        bad["groups"][0]["starts"][0][0] = 1
        PartitionRelease.from_payload(schema3, bad)


def test_the_release_with_the_most_mass_on_eps_answers_and_its_confidence_is_exact(schema3, counts3):
    cells = draw_release(cells_plan(schema3), 0.5, counts3, SeededSampler(1), allow_insecure=True)
    tree = draw_release(tree_plan(schema3, "age", 2), 0.5, counts3, SeededSampler(2), allow_insecure=True)
    margins = draw_release(
        marginals_by_order(schema3, [1]), 0.5, counts3, SeededSampler(3), allow_insecure=True
    )
    wide = parse_query('count(age=["0-10","10-20","20-30","30-40","40-50","50-60"])', schema3)
    one = parse_query('count(age="0-10", sex="F", edu="a")', schema3)
    pair = [(1, cells), (2, tree), (3, margins)]
    a = best_answer(pair, wide, 20.0)
    b = best_answer(pair, one, 20.0)
    # a wide interval: the 1-way marginals sum it from 6 counts (and the tree from 2); one cell only from the cell release
    assert a is not None and a.source == 3 and b is not None and b.source == 1
    lattice = GroupedPosterior([1.0], [1], cells.scale)  # one cell: one discrete-Laplace count
    lo, hi = lattice.prob_within(20.0)
    assert lo <= b.confidence <= hi and b.posterior.lattice and b.estimate.form == FORM
    assert b.estimate.estimate == float(cells.values[0][0, 0, 0]) and b.estimate.std == pytest.approx(
        lattice.std
    )
    for name, rel in pair:  # the one chosen is the best of them all
        r = best_answer([(name, rel)], wide, 20.0)
        assert r is None or r.confidence <= a.confidence
    assert best_answer([(3, margins)], one, 20.0) is None  # not estimable from marginals
    assert prefer(None, b) and prefer(b.confidence - 1e-6, b)
    assert not prefer(b.confidence, b) and not prefer(0.5, None)  # ties stay with history


def test_assess_serves_the_better_of_history_and_a_release_and_fuses_only_with_history(schema3, counts3):
    cells = draw_release(cells_plan(schema3), 1.0, counts3, SeededSampler(1), allow_insecure=True)
    total = parse_query("count()", schema3)
    cell = parse_query('count(age="0-10", sex="F", edu="a")', schema3)
    pair = parse_query('count(age="0-10", sex="F")', schema3)
    hist = History(
        schema3.shape,
        [
            HistoryRow(total, 5.0, float(counts3.sum()) + 0.3, "laplace"),
            HistoryRow(pair, 0.5, float(counts3[0, 0].sum()) - 2.0, "laplace"),
        ],
    )
    released = [(7, cells)]
    # the whole table: history's precise answer (scale 0.2) beats 48 summed cells (scale 1 each)
    a = assess(hist, Request("t", total, 2.0, 0.05), 10.0, releases=released)
    assert (
        a.decision == "infer"
        and a.inference.source is None
        and a.estimate.estimate == hist.estimate(total).estimate
    )
    # one cell: history cannot say; the release can, for free, with its exact lattice law
    b = assess(hist, Request("c", cell, 4.0, 0.1), 10.0, releases=released)
    law = GroupedPosterior([1.0], [1], cells.scale)
    assert b.decision == "infer" and b.inference.source == 7 and "partition release #7" in b.reason
    assert b.confidence_at_eps == pytest.approx(law.prob_within(4.0)[0]) and b.estimate.form == FORM
    assert b.release_estimate == float(cells.values[0][0, 0, 0])
    rec = b.record()
    assert rec["from_release"] == 7 and rec["history_prefix"] == 2 and rec["estimate"] == b.release_estimate
    assert b.to_json()["source"] == "partition release #7"
    assert assess(hist, Request("c", cell, 4.0, 0.1), 10.0).decision == "spend"  # without the release
    # a pair of cells: the release (2 cells of scale 1) beats history (Laplace scale 2) but does not meet ±3;
    # the fresh answer is priced and fused with history's own BLUE, whose law the fusion plan knows
    c = assess(hist, Request("p", pair, 3.0, 0.05), 10.0, releases=released)
    assert (
        c.decision == "spend" and c.inference.source == 7 and "partition release #7 reaches only" in c.reason
    )
    assert c.fused and c.spend_alpha < c.fresh_alpha
    theta_h = hist.estimate(pair).estimate
    assert c.inference.history_estimate.estimate == theta_h != c.estimate.estimate
    fresh = release_fresh(c, Cube(schema3, counts3), SeededSampler(3), allow_insecure=True)
    assert fresh.history_estimate == theta_h == c.record()["history_estimate"]
    assert fresh.released == pytest.approx(c.fusion_weight * fresh.answer + (1 - c.fusion_weight) * theta_h)


@pytest.mark.calibration
def test_intervals_served_from_a_tree_release_cover_at_least_as_claimed(sized_schema):
    """Tree BLUEs have non-integer weights: the served law is conservative, so coverage ≥ the claim (and a
    cell release's lattice law is exact, so its coverage equals the claim)."""
    s = sized_schema((32, 2), numeric=(0,))
    counts = np.random.default_rng(7).poisson(30, s.shape)
    rng = np.random.default_rng(8)
    spans = [tuple(sorted(rng.integers(0, 32, 2))) for _ in range(12)]
    queries = [_interval(s.shape, lo, hi) for lo, hi in spans]
    truth = np.array([float(q.dense() @ counts.reshape(-1)) for q in queries])
    delta = 0.2
    for plan, exact in ((tree_plan(s, "a0", 2, cross=[]), False), (cells_plan(s), True)):
        first = draw_release(plan, 1.0, counts, SeededSampler(999), allow_insecure=True)
        served = [best_answer([(1, first)], q, 1.0) for q in queries]
        # the law does not depend on the released values: only the centre moves from draw to draw
        windows = [(a.posterior.interval(delta), a.estimate.estimate) for a in served]
        assert np.allclose(
            [q.dense() @ first.cell_estimates().reshape(-1) for q in queries], [c for _, c in windows]
        )
        claimed = np.array([ci.confidence for ci, _ in windows])
        assert claimed.min() >= 1 - delta
        hits, rates = [], []
        for r in range(400):
            x = (
                draw_release(plan, 1.0, counts, SeededSampler(1000 + r), allow_insecure=True)
                .cell_estimates()
                .reshape(-1)
            )
            for q, t, (ci, c) in zip(queries, truth, windows):
                e = float(q.dense() @ x)
                hits.append(e + (ci.low - c) <= t <= e + (ci.high - c))
            rates.extend(claimed)
        if exact:
            within_binomial(hits, rates)
        else:
            sd = np.sqrt(np.mean(rates) * (1 - np.mean(rates)) / len(hits))
            assert np.mean(hits) >= np.mean(rates) - 4 * sd, (np.mean(hits), np.mean(rates))
