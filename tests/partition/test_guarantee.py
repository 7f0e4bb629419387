"""Previews of partition releases: per-cell cost, budget after, per-query and simultaneous guarantees, α for a target."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpdesk.engine.errors import BudgetError, DpdeskError, PlanError
from dpdesk.engine.partition.grouped import GroupedPosterior
from dpdesk.engine.partition.guarantee import (
    QueryClass,
    alpha_for_accuracy,
    default_classes,
    preview,
    simultaneous_bound,
)
from dpdesk.engine.partition.plan import cells_plan, marginals_by_order, tree_plan


def test_cell_release_guarantee_is_the_whole_range_sum(sized_schema):
    # one ordered attribute of 12 labels: the interval with the largest error is all 12 cells (Anderson:
    # adding an independent symmetric unimodal term never raises the mass of a symmetric window)
    s = sized_schema((12,))
    pv = preview(cells_plan(s), alpha=0.5, delta=0.05, total_budget=1.0)
    g = pv.guarantees[0]
    assert g.query_class == QueryClass("interval", "a0", "all") and g.estimable
    assert g.worst.dense().tolist() == [1.0] * 12
    e, conf = GroupedPosterior([1.0], [12], 2.0).halfwidth(0.05)
    assert (g.halfwidth, g.confidence) == (e, conf) and conf >= 0.95
    assert pv.scale == 2.0 and pv.row_alpha == 0.5 and pv.budget.system_cost_after == 0.5 and pv.fits
    cell = pv.guarantees[1]
    assert (
        cell.query_class.kind == "cell"
        and cell.halfwidth == GroupedPosterior([1.0], [1], 2.0).halfwidth(0.05)[0]
    )


def test_tree_guarantee_is_the_interval_of_largest_variance(schema3):
    plan = tree_plan(schema3, "age", 2)
    pv = preview(plan, alpha=1.0, delta=0.1, total_budget=2.0)
    assert [g.query_class.within for g in pv.guarantees] == ["all", "cell"]
    from dpdesk.engine.partition.solver import PlanSolver
    from dpdesk.engine.queries.query import Query, Term

    solver = PlanSolver(plan)
    best = 0.0
    for lo in range(8):  # every interval, other attributes summed: brute-force the largest variance
        for hi in range(lo, 8):
            f = np.zeros(8)
            f[lo : hi + 1] = 1
            best = max(
                best,
                solver.variance_factor(Query(schema3.shape, terms=(Term(1.0, (f, np.ones(2), np.ones(3))),))),
            )
    worst = pv.guarantees[0].worst
    assert solver.variance_factor(worst) == pytest.approx(best)
    assert pv.simultaneous.applies is False and "no such bound here" in pv.simultaneous.text()


def test_simultaneous_bound_is_the_seed_union_bound_in_counts(sized_schema):
    s = sized_schema((100,))
    b = simultaneous_bound(cells_plan(s), 0.05, 0.05)
    p = math.exp(-0.05)
    assert b.applies and b.halfwidth == pytest.approx(100 * 20 * math.log(2 * 100 / ((1 + p) * 0.05)))
    # the seed's continuous form β·ln(β/δ)/α is within the (1+p)/2 factor inside the log
    assert b.halfwidth == pytest.approx(100 * math.log(100 / 0.05) / 0.05, rel=0.01)


def test_preview_adds_alpha_to_every_cell(schema3):
    costs = np.zeros(schema3.n_cells)
    costs[5] = 0.3
    pv = preview(marginals_by_order(schema3, [1]), alpha=0.2, delta=0.05, total_budget=0.4, cell_costs=costs)
    assert pv.budget.system_cost == 0.3 and pv.budget.system_cost_after == pytest.approx(0.5) and not pv.fits
    assert pv.row_alpha == pytest.approx(0.2 / 3) and pv.budget.limiting_cell == 5
    assert pv.budget.remaining_after == pytest.approx(-0.1) and np.allclose(
        pv.budget.cell_costs_after, costs + 0.2
    )
    j = pv.to_json()
    assert j["cell_charge"] == 0.2 and j["fits"] is False and j["noise"]["family"] == "discrete_laplace"
    assert [g["kind"] for g in j["guarantees"]] == ["per query (exact posterior)"] * 3
    assert j["simultaneous"]["applies"] is False


def test_accuracy_target_gives_the_smallest_alpha_meeting_it(schema3):
    plan = tree_plan(schema3, "age", 2)
    qc = default_classes(plan)[0]
    alpha = alpha_for_accuracy(plan, 40.0, 0.05, qc)
    at = preview(plan, alpha=alpha, delta=0.05, total_budget=10.0, classes=[qc]).guarantees[0]
    below = preview(plan, alpha=alpha / 1.01, delta=0.05, total_budget=10.0, classes=[qc]).guarantees[0]
    assert at.halfwidth <= 40.0 < below.halfwidth
    pv = preview(plan, accuracy=40.0, delta=0.05, total_budget=10.0)
    assert pv.alpha == alpha and pv.target == 40.0


def test_a_marginal_plan_cannot_promise_cells(schema3):
    pv = preview(marginals_by_order(schema3, [1]), alpha=1.0, total_budget=2, classes=[QueryClass("cell")])
    assert pv.guarantees[0].estimable is False and "not estimable" in pv.guarantees[0].text(schema3)
    with pytest.raises(PlanError, match="not estimable"):
        alpha_for_accuracy(marginals_by_order(schema3, [1]), 5.0, 0.05, QueryClass("cell"))


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (dict(alpha=0.0), BudgetError, "alpha (0.0)"),
        (dict(alpha=-1.0), BudgetError, "alpha (-1.0)"),
        (dict(alpha=float("nan")), BudgetError, "alpha"),
        (dict(accuracy=0.0), BudgetError, "accuracy (0.0)"),
        (dict(alpha=1.0, accuracy=3.0), BudgetError, "exactly one"),
        (dict(alpha=1.0, delta=1.0), BudgetError, "delta"),
        (dict(alpha=1.0, classes=[QueryClass("interval", "sex")]), PlanError, "not ordered"),
        (dict(alpha=1.0, classes=[QueryClass("interval", "zz")]), PlanError, "unknown attribute 'zz'"),
    ],
)
def test_bad_preview_inputs_fail_with_one_line(schema3, kwargs, error, message):
    kwargs.setdefault("total_budget", 1.0)
    with pytest.raises(error) as e:
        preview(cells_plan(schema3), **kwargs)
    assert message in str(e.value) and "\n" not in str(e.value) and isinstance(e.value, DpdeskError)
