"""Partition releases on the release path: the plan's payload, and the registered mechanism reading it back."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpdesk.engine.cube import Cube
from dpdesk.engine.errors import BudgetError, DpdeskError
from dpdesk.engine.inference.history import History, HistoryRow
from dpdesk.engine.mechanisms.base import Basis, ReleasePlan
from dpdesk.engine.mechanisms.noise import SeededSampler
from dpdesk.engine.partition.guarantee import preview
from dpdesk.engine.partition.plan import marginals_by_order, tree_plan
from dpdesk.engine.partition.privacy_map import PARTITION
from dpdesk.engine.partition.release import PartitionRelease
from dpdesk.engine.partition.release_plan import PartitionReleasePlan
from dpdesk.engine.queries.text import parse_query
from dpdesk.engine.registry import MECHANISMS, kinds


def _recorded(schema3, counts3, plan, alpha=0.5, cell_costs=None, total=1.0):
    pv = preview(plan, alpha=alpha, total_budget=total, cell_costs=cell_costs)
    rp = PartitionReleasePlan(pv, Basis("head", 3))
    payload = {**rp.record(), **rp.draw(Cube(schema3, counts3), SeededSampler(4), allow_insecure=True)}
    return rp, json.loads(json.dumps(payload))  # as stored: plain JSON


def test_the_recorded_payload_gives_back_the_charge_rows_and_values(schema3, counts3):
    plan = tree_plan(schema3, "age", 2, cross=["sex"])
    rp, payload = _recorded(schema3, counts3, plan)
    assert isinstance(rp, ReleasePlan) and rp.releasable and rp.needs_data and rp.basis.ledger_seq == 3
    assert MECHANISMS["partition"] is PARTITION and "partition" in kinds()
    c = PARTITION.contribution(payload, schema3.shape)
    assert np.allclose(c.charge.dense(schema3.n_cells), 0.5) and c.charge.same_as(rp.charge)
    assert len(c.rows) == plan.n_rows == len(c.values)
    rel = PartitionRelease(plan, 0.5, tuple(np.asarray(v) for v in payload["values"]), payload["sampler"])
    hist = History(schema3.shape, [HistoryRow(r.query, r.alpha, r.answer, r.family) for r in c.rows])
    assert hist.cell_costs == pytest.approx(np.full(schema3.n_cells, 0.5))
    q = parse_query('count(age=["10-20","20-30"], sex="M")', schema3)
    assert hist.estimate(q).estimate == pytest.approx(rel.estimate(q).estimate, abs=1e-8)
    assert c.rows[-1].query == rel.row_queries(len(plan.groups) - 1)[-1] and c.rows[-1].answer == c.values[-1]
    assert (
        payload["guarantees"][0]["kind"] == "per query (exact posterior)" and payload["rows"] == plan.n_rows
    )


def test_a_plan_over_the_budget_is_not_releasable(schema3, counts3):
    costs = np.full(schema3.n_cells, 0.8)
    rp = PartitionReleasePlan(
        preview(marginals_by_order(schema3, [1]), alpha=0.3, total_budget=1.0, cell_costs=costs)
    )
    assert not rp.releasable and rp.reason.startswith("reject:") and "1.1" in rp.reason


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda p: p.update(scale=0), "scale (0)"),
        (lambda p: p["groups"][0]["starts"][0].__setitem__(0, 1), "not a partition of 8 labels"),
        (lambda p: p["groups"][1]["starts"].pop(), "one list per attribute"),
        (lambda p: p["values"].pop(), "one list of counts per group"),
        (lambda p: p["values"][0].append(3), "must hold"),
    ],
)
def test_a_tampered_payload_is_refused(schema3, counts3, change, message):
    _, payload = _recorded(schema3, counts3, tree_plan(schema3, "age", 2))
    change(payload)
    with pytest.raises(DpdeskError, match=message.replace("(", r"\(").replace(")", r"\)")):
        PARTITION.contribution(payload, schema3.shape)


def test_draw_refuses_an_insecure_sampler(schema3, counts3):
    rp = PartitionReleasePlan(preview(tree_plan(schema3, "age", 2), alpha=0.5, total_budget=1.0))
    with pytest.raises(BudgetError, match="not secure"):
        rp.draw(Cube(schema3, counts3), SeededSampler(0))
