"""One stream of count, sum and mean requests, answered by dpdesk and by answering each one fresh (issue 36).

The table is the bundled demo (60,000 adult-like rows, 720 cells) with two measures declared on it:
``hours`` (column hours_per_week, clamped to [1, 99]) and ``years`` (column age, clamped to [17, 90]), both
skipping missing values. Requests ask for counts, sums and means over boxes drawn from a pool of 24
boxes with Zipf weights (requests about the same groups recur, as in a real queue), each with an
accuracy requirement; a mean's requirement states its assumption, at least ``N`` values in the box.

Systems, at the same total budget and per-cell accounting (a release that would pass the total is
refused):

* ``fresh each`` — every request answered on its own, as an OpenDP or Tumult user does: a count with
  discrete Laplace at Thm 5.3's α, a sum with Laplace at ``B·ln(1/δ)/ε``, a mean as a fresh sum and count
  at the price of :func:`dpdesk.engine.sums.accuracy.fresh_mean` (the mean kind's plan without history).
* ``dpdesk`` — counts and sums through the answering workflow over one history of counts and sums
  (inferred free when history meets the requirement, else fresh fused with history); a mean through the
  mean kind's plan (:func:`dpdesk.engine.sums.plan.plan_mean`): free when history's sum and count meet its
  requirement, else fresh as above, its two releases joining the history.

Noise comes from seeded generators (a simulation over public quantities, not releases). Per request:
answered or refused, free or paid, and whether the answer is within its ``±ε`` (``±a`` for a mean).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dpdesk.engine.answering.fresh import release_fresh, true_answer
from dpdesk.engine.answering.request import Request
from dpdesk.engine.answering.workflow import assess
from dpdesk.engine.cube import Cube, build_cube
from dpdesk.engine.inference.history import History, HistoryRow
from dpdesk.engine.kinds.settings import Settings
from dpdesk.engine.mechanisms.laplace import DISCRETE_LAPLACE, LAPLACE
from dpdesk.engine.mechanisms.noise import SeededSampler
from dpdesk.engine.queries.layout import Layout
from dpdesk.engine.queries.text import parse_query
from dpdesk.engine.schema import Schema
from dpdesk.engine.sums.accuracy import MeanAccuracy
from dpdesk.engine.sums.mechanism import FRESH_MEAN
from dpdesk.engine.sums.plan import plan_mean
from dpdesk.engine.sums.query import MeanQuery, parse_mean

ROOT = Path(__file__).resolve().parents[2]
MEASURES = [
    {"name": "hours", "column": "hours_per_week", "bounds": [1, 99], "nulls": "skip"},
    {"name": "years", "column": "age", "bounds": [17, 90], "nulls": "skip"},
]
SYSTEMS = ("fresh each", "dpdesk")
KINDS = ("count", "sum", "mean")


def dataset() -> tuple[Schema, Cube]:
    import pandas as pd

    obj = json.loads((ROOT / "resources" / "demo" / "adult.schema.json").read_text())
    obj["measures"] = MEASURES
    schema = Schema.from_dict(obj)
    df = pd.read_parquet(ROOT / "resources" / "demo" / "adult.parquet")
    return schema, build_cube(df, schema)


@dataclass(frozen=True)
class Ask:
    kind: str  # "count", "sum", "mean"
    text: str
    eps: float  # ±ε (±a for a mean)
    delta: float
    min_count: float = 0.0  # a mean's assumption: at least this many values in the box


def _boxes(schema: Schema, rng: np.random.Generator, k: int) -> list[str]:
    out = []
    for _ in range(k):
        names = rng.choice(len(schema.attributes), size=int(rng.integers(1, 3)), replace=False)
        args = []
        for d in sorted(names):
            a = schema.attributes[int(d)]
            lo = int(rng.integers(0, a.size))
            hi = int(rng.integers(lo, min(a.size, lo + 3)))
            labels = [f'"{lab}"' for lab in a.labels[lo : hi + 1]]
            args.append(f"{a.name}={labels[0]}" if len(labels) == 1 else f"{a.name}=[{', '.join(labels)}]")
        out.append(", ".join(args))
    return out


def stream(schema: Schema, cube: Cube, k: int, seed: int) -> list[Ask]:
    """``k`` requests: 40 % counts, 35 % sums, 25 % means over a Zipf-weighted pool of boxes.

    A mean's ``N`` is half the box's values rounded down to a multiple of 50 (at least 50): a stand-in for
    what a curator declares; it is the only number here read off the table, and only to make the
    assumption true, as the curator's would be.
    """
    rng = np.random.default_rng(seed)
    boxes = _boxes(schema, rng, 24)
    weights = 1.0 / np.arange(1, len(boxes) + 1)
    weights /= weights.sum()
    asks = []
    for _ in range(k):
        box = boxes[int(rng.choice(len(boxes), p=weights))]
        kind = KINDS[int(rng.choice(3, p=[0.4, 0.35, 0.25]))]
        delta = float(rng.choice([0.05, 0.1, 0.2]))
        m = MEASURES[int(rng.integers(0, 2))]["name"]
        bound = schema.measure(m).bound
        if kind == "count":
            asks.append(Ask(kind, f"count({box})", float(rng.uniform(15, 150)), delta))
        elif kind == "sum":
            asks.append(Ask(kind, f"sum({m} | {box})", float(bound * rng.uniform(8, 80)), delta))
        else:
            q = parse_mean(f"mean({m} | {box})", schema)
            values = true_answer(q.size(schema), cube)
            n = max(50.0, 50.0 * math.floor(values / 2 / 50))
            asks.append(Ask(kind, q.text, float(rng.uniform(0.4, 3.0)), delta, n))
    return asks


@dataclass
class Outcome:
    answered: list[bool] = field(default_factory=list)
    free: list[bool] = field(default_factory=list)
    within: list[bool] = field(default_factory=list)
    kind: list[str] = field(default_factory=list)
    system_cost: float = 0.0


class _Ledger:
    """Per-cell costs and the history one system keeps (the fresh system keeps no history)."""

    def __init__(self, schema: Schema, total: float, keep: bool) -> None:
        self.schema, self.total = schema, total
        self.history = History(schema.shape, layout=Layout.of(schema)) if keep else None
        self.costs = np.zeros(schema.n_cells)

    def affordable(self, charge: np.ndarray) -> bool:
        return bool((self.costs + charge).max() <= self.total + 1e-12)

    def pay(self, charge: np.ndarray) -> None:
        self.costs = self.costs + charge


def _mean(
    q: MeanQuery, ask: Ask, ledger: _Ledger, cube: Cube, sampler: SeededSampler
) -> tuple[float | None, bool]:
    """A mean through the mean kind's plan (engine/sums/plan.py): free from history when it meets ±a (a
    system keeping history), else fresh at ``fresh_mean``'s price, its two rows joining the history."""
    schema = ledger.schema
    acc = MeanAccuracy(ask.eps, ask.delta, ask.min_count)
    plan = plan_mean(q, acc, schema, ledger.history, ledger.costs, ledger.total)
    if plan.decision == "infer":
        assert plan.inferred is not None
        iv = plan.inferred
        return (iv.estimate if iv.estimate is not None else 0.5 * (iv.low + iv.high)), True
    if plan.decision != "spend":
        return None, False
    drawn = plan.draw(cube, sampler, allow_insecure=True)
    c = FRESH_MEAN.contribution({**plan.record(), **drawn}, schema.shape)
    ledger.pay(c.charge.dense(schema.n_cells))
    if ledger.history is not None:
        for row in c.rows:
            ledger.history.append(HistoryRow(row.query, row.alpha, row.answer, row.family))
    return float(drawn["values"][0]), False


def run(system: str, schema: Schema, cube: Cube, asks: list[Ask], total: float, seed: int) -> Outcome:
    out = Outcome()
    ledger = _Ledger(schema, total, keep=system == "dpdesk")
    sampler = SeededSampler(seed)
    for i, ask in enumerate(asks):
        answer, free = None, False
        if ask.kind == "mean":
            q = parse_mean(ask.text, schema)
            truth = true_answer(q.total(schema), cube) / true_answer(q.size(schema), cube)
            answer, free = _mean(q, ask, ledger, cube, sampler)
        else:
            query = parse_query(ask.text, schema)
            truth = true_answer(query, cube)
            if system == "dpdesk":
                assert ledger.history is not None
                req = Request(str(i), query, ask.eps, ask.delta)
                a = assess(ledger.history, req, Settings(total), cell_costs=ledger.costs)
                if a.decision == "infer":
                    answer, free = a.inference.release_estimate, True
                elif a.decision == "spend":
                    fresh = release_fresh(a, cube, sampler, allow_insecure=True)
                    ledger.history.append(fresh.history_row())
                    ledger.costs = np.asarray(a.budget.cell_costs_after)
                    answer = fresh.released
            else:
                noise = DISCRETE_LAPLACE if DISCRETE_LAPLACE.applies_to(query) else LAPLACE
                alpha = noise.alpha_for(query.sensitivity, ask.eps, ask.delta)
                charge = noise.charge_for(query, alpha).dense(schema.n_cells)
                if ledger.affordable(charge):
                    ledger.pay(charge)
                    answer = sampler.release(
                        noise, truth, noise.scale(query.sensitivity, alpha), query.sensitivity
                    )
        out.kind.append(ask.kind)
        out.answered.append(answer is not None)
        out.free.append(free)
        out.within.append(answer is not None and abs(float(answer) - truth) <= ask.eps)
    out.system_cost = float(ledger.costs.max())
    return out
