"""Privacy of sums, value counts, means and mixed releases, by exact enumeration (docs/sums.md, Theorem 1).

For a small cube with two measures (one skipping missing values, one replacing them) every table of at
most two records over a grid of raw values — the clamp bounds, values inside, values beyond them and
missing ones — is paired with every neighbour that adds one more record. For each release the output
law on both tables is computed exactly (continuous Laplace: its density; discrete Laplace: its mass
function), and its largest log-ratio over the outputs must not exceed what the engine charges the cell
of the record that differs — per release, and summed over a sequence of releases, count and sum releases
of one cell adding. The true answers come from an independent reference: the records themselves and
coefficients written out by hand per block and cell, never the engine's query vectors; the engine's
cube of the same records must give the same answers.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from dpdesk.engine.answering.fresh import true_answer
from dpdesk.engine.cube import build_cube
from dpdesk.engine.inference.history import History, HistoryRow
from dpdesk.engine.mechanisms.laplace import DISCRETE_LAPLACE, LAPLACE
from dpdesk.engine.queries.layout import Layout
from dpdesk.engine.queries.text import parse_query
from dpdesk.engine.schema import Schema
from dpdesk.engine.sums.query import parse_mean

SCHEMA = Schema.from_dict(
    {
        "attributes": [
            {"name": "ward", "column": "ward", "kind": "categorical", "values": ["a", "b"]},
            {"name": "age", "column": "age", "kind": "categorical", "values": ["young", "old"]},
        ],
        "measures": [
            {"name": "cost", "column": "cost", "bounds": [-2, 5], "nulls": "skip"},
            {"name": "stay", "column": "stay", "bounds": [1, 3], "nulls": "replace", "null_value": 2},
        ],
    }
)
CELLS = [("a", "young"), ("a", "old"), ("b", "young"), ("b", "old")]  # C order
COSTS = [-7.0, -2.0, 0.0, 2.5, 5.0, 9.0, None]  # below L, L, inside, U, above U, missing
STAYS = [0.0, 1.0, 3.0, None]
RECORDS = [(c, cost, stay) for c in range(4) for cost in COSTS for stay in STAYS]
ALPHA = 0.7


def clamp(v, lo, hi):
    return min(max(v, lo), hi)


def contribution(record, coef):
    """What one record adds to a query given per block as 4 coefficients (one per cell), by hand."""
    cell, cost, stay = record
    out = coef.get("count", [0] * 4)[cell]
    if cost is not None:  # skip: a missing cost adds nothing, and is not one of the values
        out += coef.get("cost", [0] * 4)[cell] * clamp(cost, -2, 5)
        out += coef.get("values", [0] * 4)[cell]
    out += coef.get("stay", [0] * 4)[cell] * clamp(2.0 if stay is None else stay, 1, 3)
    return out


# each query with its coefficients written by hand (cells: a-young, a-old, b-young, b-old); the last two
# mix blocks on one cell, where a record's count and value can offset (the charge's bound is then above
# the loss any record reaches: docs/sums.md, Theorem 1's remark)
QUERIES = [
    ('sum(cost | ward="a")', {"cost": [1, 1, 0, 0]}),
    ('sum(stay | age="old")', {"stay": [0, 1, 0, 1]}),
    ('count(cost | ward="b")', {"values": [0, 0, 1, 1]}),
    ('sum(cost | ward="a") - 2*count(ward="a")', {"cost": [1, 1, 0, 0], "count": [-2, -2, 0, 0]}),
    (
        'sum(cost) + 0.5*sum(stay | ward="b") - count(cost | age="young")',
        {"cost": [1, 1, 1, 1], "stay": [0, 0, 0.5, 0.5], "values": [-1, 0, -1, 0]},
    ),
    (
        '3*count(ward="b", age="old") - sum(stay | ward="a", age="young")',
        {"count": [0, 0, 0, 3], "stay": [-1, 0, 0, 0]},
    ),
]


def tables():
    """Every table of at most two records, over a spread of the record types (each record's law only
    shifts the answer, so a few base tables show the neighbour relation at work)."""
    few = RECORDS[:: len(RECORDS) // 9]
    yield ()
    for r in few:
        yield (r,)
    yield from itertools.combinations(few[:5], 2)


def laplace_loss(theta, theta2, b):
    """``max_y |log p(y) − log p'(y)|`` for Laplace(θ, b) against Laplace(θ', b), read off the densities
    on outputs spanning both centres and far beyond (the supremum is reached outside [θ, θ'])."""
    lo, hi = min(theta, theta2) - 40 * b, max(theta, theta2) + 40 * b
    y = np.concatenate([np.linspace(lo, hi, 401), [theta, theta2]])
    logp = -np.abs(y - theta) / b - math.log(2 * b)
    logq = -np.abs(y - theta2) / b - math.log(2 * b)
    return float(np.max(np.abs(logp - logq)))


def discrete_laplace_loss(theta, theta2, b):
    """The same for discrete Laplace on the integers: mass ∝ p^|k − θ|, read over a wide lattice."""
    p = math.exp(-1 / b)
    k = np.arange(min(theta, theta2) - 60 * math.ceil(b), max(theta, theta2) + 60 * math.ceil(b) + 1)
    logz = math.log((1 - p) / (1 + p))
    logp = np.abs(k - theta) * math.log(p) + logz
    logq = np.abs(k - theta2) * math.log(p) + logz
    return float(np.max(np.abs(logp - logq)))


def cube_of(table):
    df = pd.DataFrame(
        {
            "ward": [CELLS[c][0] for c, _, _ in table],
            "age": [CELLS[c][1] for c, _, _ in table],
            "cost": [np.nan if v is None else v for _, v, _ in table],
            "stay": [np.nan if v is None else v for _, _, v in table],
        }
    )
    return build_cube(df, SCHEMA)


@pytest.mark.parametrize(("text", "coef"), QUERIES)
def test_one_release_never_loses_more_than_its_cell_is_charged(text, coef):
    q = parse_query(text, SCHEMA)
    charge = LAPLACE.charge_for(q, ALPHA)
    b = LAPLACE.scale(q.sensitivity, ALPHA)
    worst = np.zeros(4)
    for table in tables():
        theta = sum(contribution(r, coef) for r in table)
        if table:
            assert true_answer(q, cube_of(table)) == pytest.approx(theta, abs=1e-12)
        for r in RECORDS:  # the neighbour with one more record (and, read backwards, one fewer)
            theta2 = theta + contribution(r, coef)
            loss = laplace_loss(theta, theta2, b)
            assert loss <= charge.at(r[0]) + 1e-9, (text, table, r)
            worst[r[0]] = max(worst[r[0]], loss)
    # the largest loss over all neighbours is the release's α: the sensitivity is not overstated, when
    # no cell mixes a count with a sum
    mixed = sum(1 for block in coef.values() if block[np.argmax(charge.dense(4))]) > 1
    if not mixed:
        assert worst.max() == pytest.approx(ALPHA, rel=1e-6)
    np.testing.assert_array_less(worst, charge.dense(4) + 1e-9)


@pytest.mark.parametrize(
    ("text", "coef"),
    [
        ('count(cost | ward="b")', {"values": [0, 0, 1, 1]}),
        (
            'count(ward="a", age="young") - 2*count(cost | age="old")',
            {"count": [1, 0, 0, 0], "values": [0, -2, 0, -2]},
        ),
    ],
)
def test_integer_value_counts_with_discrete_noise(text, coef):
    q = parse_query(text, SCHEMA)
    assert DISCRETE_LAPLACE.applies_to(q)
    charge = DISCRETE_LAPLACE.charge_for(q, ALPHA)
    b = DISCRETE_LAPLACE.scale(q.sensitivity, ALPHA)
    worst = 0.0
    for table in tables():
        theta = round(sum(contribution(r, coef) for r in table))
        for r in RECORDS:
            theta2 = round(theta + contribution(r, coef))
            loss = discrete_laplace_loss(theta, theta2, b)
            assert loss <= charge.at(r[0]) + 1e-9
            worst = max(worst, loss)
    assert worst == pytest.approx(ALPHA, rel=1e-9)
    assert not DISCRETE_LAPLACE.applies_to(parse_query("sum(cost)", SCHEMA))  # a sum is not on the integers


def test_count_and_sum_releases_of_a_cell_add():
    """A sequence of releases on overlapping cells: the joint law's loss is the sum of the rows' losses,
    and stays within the history's per-cell costs (the charges added cell by cell)."""
    lay = Layout.of(SCHEMA)
    releases = [(parse_query(t, SCHEMA), c, a) for (t, c), a in zip(QUERIES, (0.3, 0.2, 0.4, 0.25, 0.5, 0.1))]
    releases.append((parse_query('count(ward="a")', SCHEMA), {"count": [1, 1, 0, 0]}, 0.35))
    h = History(SCHEMA.shape, layout=lay)
    for q, _, a in releases:
        h.append(HistoryRow(q, a, 0.0))
    costs = h.cell_costs
    by_charges = sum(LAPLACE.charge_for(q, a).dense(4) for q, _, a in releases)
    np.testing.assert_allclose(costs, by_charges, rtol=1e-12)
    for table in tables():
        for r in RECORDS:
            loss = sum(
                laplace_loss(
                    sum(contribution(x, c) for x in table),
                    sum(contribution(x, c) for x in table) + contribution(r, c),
                    LAPLACE.scale(q.sensitivity, a),
                )
                for q, c, a in releases
            )
            assert loss <= costs[r[0]] + 1e-9


def test_a_fresh_mean_is_charged_its_two_releases():
    """A fresh mean releases the box's sum (Laplace) and its count of values (discrete Laplace): each cell
    of the box is charged both budgets, and no neighbour's joint loss exceeds that."""
    mean = parse_mean('mean(cost | ward="b")', SCHEMA)
    total, size = mean.total(SCHEMA), mean.size(SCHEMA)
    a_s, a_c = 0.45, 0.3
    charge = LAPLACE.charge_for(total, a_s).dense(4) + DISCRETE_LAPLACE.charge_for(size, a_c).dense(4)
    np.testing.assert_allclose(charge, [0, 0, a_s + a_c, a_s + a_c])
    c_total, c_size = {"cost": [0, 0, 1, 1]}, {"values": [0, 0, 1, 1]}
    b_s = LAPLACE.scale(total.sensitivity, a_s)
    b_c = DISCRETE_LAPLACE.scale(size.sensitivity, a_c)
    worst = np.zeros(4)
    for table in tables():
        s = sum(contribution(r, c_total) for r in table)
        n = round(sum(contribution(r, c_size) for r in table))
        for r in RECORDS:
            loss = laplace_loss(s, s + contribution(r, c_total), b_s) + discrete_laplace_loss(
                n, round(n + contribution(r, c_size)), b_c
            )
            assert loss <= charge[r[0]] + 1e-9
            worst[r[0]] = max(worst[r[0]], loss)
    np.testing.assert_allclose(worst, charge, rtol=1e-6)  # reached: a record at a bound with a value
