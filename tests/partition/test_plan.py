"""Release plans: their groups, per-cell coverage, private row counts, and the one-line errors."""

from __future__ import annotations

import numpy as np
import pytest

from dpdesk.engine.errors import DpdeskError, PlanError
from dpdesk.engine.partition.plan import (
    cells_plan,
    marginals_by_order,
    marginals_plan,
    plan_from_json,
    tree_plan,
)
from dpdesk.engine.schema import Schema


def _dense_W(plan) -> np.ndarray:
    rows = []
    for g in plan.groups:
        m = np.ones((1, 1))
        for b in g.blocks:
            m = np.kron(m, b.matrix())
        rows.append(m)
    return np.vstack(rows)


@pytest.mark.parametrize(
    "make",
    [
        lambda s: cells_plan(s),
        lambda s: marginals_by_order(s, [1, 2]),
        lambda s: tree_plan(s, "age", 2),
        lambda s: tree_plan(s, "age", 3, cross=False),
        lambda s: tree_plan(s, "age", 2, depth=2, cross=["edu"]),
    ],
)
def test_every_group_partitions_the_cube_and_true_rows_are_block_sums(schema3, counts3, make):
    plan = make(schema3)
    W = _dense_W(plan)
    assert W.shape == (plan.n_rows, schema3.n_cells)
    # each record (cell) falls in exactly one count per group: coverage is uniform
    assert np.array_equal(W.sum(axis=0), np.full(schema3.n_cells, plan.coverage))
    flat = np.concatenate([r.reshape(-1) for r in plan.true_rows(counts3)])
    assert np.array_equal(flat, W @ counts3.reshape(-1))
    assert plan.row_alpha(0.6) == pytest.approx(0.6 / plan.coverage)
    again = plan_from_json(schema3, plan.to_json())
    assert np.array_equal(_dense_W(again), W)


def test_tree_levels_are_powers_of_the_branching(schema3):
    plan = tree_plan(schema3, "age", 2)  # 8 labels: blocks of 8, 4, 2, 1
    widths = [int(g.blocks[0].stops[0] - g.blocks[0].starts[0]) for g in plan.groups]
    assert widths == [8, 4, 2, 1]
    assert plan.coverage == 4 and plan.n_rows == (1 + 2 + 4 + 8) * 6
    three = tree_plan(schema3, "age", 3)  # 8 labels: blocks of 9 (root), 3, 1
    assert [g.blocks[0].n_blocks for g in three.groups] == [1, 3, 8]
    assert [g.blocks[0].n_blocks for g in tree_plan(schema3, "age", 2, depth=1).groups] == [4, 8]


def test_marginals_by_order_lists_every_combination(schema3):
    plan = marginals_by_order(schema3, [1, 2])
    assert [g.name for g in plan.groups] == ["age", "sex", "edu", "age×sex", "age×edu", "sex×edu"]
    assert plan.n_rows == 8 + 2 + 3 + 16 + 24 + 6


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda s: tree_plan(s, "height"), "unknown attribute 'height'"),
        (lambda s: tree_plan(s, "sex"), "not ordered"),
        (lambda s: tree_plan(s, "age", 1), "branching (1)"),
        (lambda s: tree_plan(s, "age", 2, depth=4), "depth (4) must be an integer from 1 to 3"),
        (lambda s: tree_plan(s, "age", cross=["zzz"]), "unknown attribute 'zzz'"),
        (lambda s: marginals_plan(s, [["age"], ["age"]]), "listed twice"),
        (lambda s: marginals_plan(s, [["nope"]]), "unknown attribute 'nope'"),
        (lambda s: marginals_plan(s, []), "no marginals"),
        (lambda s: marginals_by_order(s, [4]), "order 4"),
    ],
)
def test_bad_plans_fail_with_one_line(schema3, call, message):
    with pytest.raises(PlanError) as e:
        call(schema3)
    assert message in str(e.value) and "\n" not in str(e.value)
    assert isinstance(e.value, DpdeskError)


def test_a_plan_over_an_empty_cube_is_refused():
    with pytest.raises(PlanError, match="no cells"):
        cells_plan(Schema(()))


def test_true_rows_refuse_a_cube_of_another_shape(schema3):
    with pytest.raises(PlanError, match="shape"):
        cells_plan(schema3).true_rows(np.zeros((2, 2)))
