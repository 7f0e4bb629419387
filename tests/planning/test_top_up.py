"""One by one's top-up re-asks only the requests not yet known to be met; its full check confirms the rest.

The reference is the top-up that checks the whole would-be history after every raise. Four count requests
over four cells get one row each, short of what meets them by 3 %, 0.5 % and 0.05 % (the fourth is met
with room to spare), and a fifth request (cells 0 + 1) is answered from the others' rows. The first check
found only the first request short (it stops early), so the first raise's check must name the other
two; the second and third raises then re-ask only the requests still short. The rows raised, their α's
and every confidence must be those of the reference, with fewer requests asked; also when the total
stops the raises before the last step. When a checked strategy beats even what one by one's topped-up rows
could answer, those rows are not checked in full: the plan must be the one the full check gives.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from dpdesk.engine.answering.request import Request, Settings
from dpdesk.engine.inference.history import History
from dpdesk.engine.planning import checks, planner, topup
from dpdesk.engine.planning.checks import Checker
from dpdesk.engine.planning.plan import Measurement
from dpdesk.engine.queries.query import query_from_vector
from dpdesk.engine.schema import Schema

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from evaluation.batch_eval import boxes_stream  # noqa: E402

SHAPE = (4,)
EPS, DELTA = 10.0, 0.2
SHORT_BY = (0.97, 0.995, 0.9995, 1.2)  # each row's α against what meets its request: short, short, short, met
WIDER = (1, 1, 1, 2)  # the fourth request asks twice the ±ε (its row stays cheap next to the total below)


def _case():
    cells = [query_from_vector(np.eye(4)[j], SHAPE) for j in range(4)]
    pending = [Request(f"c{j}", q, EPS * w, DELTA) for j, (q, w) in enumerate(zip(cells, WIDER))]
    pending.append(Request("c0+c1", query_from_vector([1, 1, 0, 0], SHAPE), 3 * EPS, DELTA))
    need = math.log(1 / DELTA) / EPS  # Laplace, sensitivity 1: Pr(|N| ≤ ε) = 1 − e^{−εα}
    rows = [Measurement(q, need * f / w, "laplace") for q, f, w in zip(cells, SHORT_BY, WIDER)]
    row_of = {j: j for j in range(4)}
    return pending, rows, row_of


def _reference(rows, row_of, ok, short, conf, pending, checker, costs0, total):
    """The top-up as first written: the whole would-be history checked after every raise."""
    rows = list(rows)
    for step in topup.TOP_UP:
        raised = list(rows)
        for k in short:
            m = rows[row_of[k]]
            raised[row_of[k]] = Measurement(m.query, m.alpha * step, m.family)
        after = costs0 + sum((m.charge.dense(costs0.size) for m in raised), np.zeros_like(costs0))
        if after.max() > total * (1 - 1e-9):
            break
        rows = raised
        conf = checker.confidences(checker.history_with(rows), pending, ok)
        short = [k for k, c in enumerate(conf) if ok[k] and c is None and k in row_of]
        if not short:
            break
    return rows, conf


@pytest.mark.parametrize("total", [1e9, "before the third raise"])
def test_the_top_up_raises_and_confirms_what_checking_everything_after_each_raise_does(total, monkeypatch):
    pending, rows, row_of = _case()
    need = math.log(1 / DELTA) / EPS
    if total == "before the third raise":  # the others' ×1.01 fit, the first row's ×1.05 would pass it
        total = need * 1.02
    checker = Checker(History(SHAPE), "fft", (), None)
    ok = [True] * len(pending)
    first = [None] * len(pending)  # the first check asked the first request only, found it short and stopped
    costs0 = np.zeros(4)
    asked = []
    infer = checks.infer
    monkeypatch.setattr(checks, "infer", lambda h, r, **kw: (asked.append(r.id), infer(h, r, **kw))[1])

    ref_rows, ref_conf = _reference(rows, row_of, ok, [0], first, pending, checker, costs0, total)
    n_ref = len(asked)
    asked.clear()
    new_rows, new_conf, last, hist = planner._top_up(
        rows, row_of, ok, [0], first, pending, checker, costs0, total
    )
    assert last is not None and hist is not None
    # the last step's misses are misses of the rows returned, whatever the requests it did not ask give
    assert {k for k in range(len(pending)) if last[k] and new_conf[k] is None} <= {
        k for k, c in enumerate(ref_conf) if c is None
    }
    new_conf = planner._confirm(new_conf, last, hist, ok, pending, checker)
    assert [m.alpha for m in new_rows] == [m.alpha for m in ref_rows]
    assert new_conf == ref_conf  # every request asked on the rows returned, the same numbers
    assert [m.alpha / r.alpha for m, r in zip(new_rows, rows)] == pytest.approx(
        [1.001 * 1.01 * (1.05 if total > 1 else 1.0), 1.01, 1.01, 1.0]
    )
    assert (new_conf[0] is not None) == (total > 1)  # the first row needs the third raise
    assert all(c is not None for c in new_conf[1:])
    # fewer posteriors; with the third raise refused, the last step's re-ask and the final check together
    # ask what one full check does
    assert len(asked) < n_ref if total > 1 else len(asked) == n_ref, (asked, n_ref)


def test_one_by_one_left_as_a_bound_after_the_top_up_changes_no_plan(monkeypatch):
    # 30 of bench_batch.py's box requests over the demo cube (total 10, empty history): one by one's
    # top-up leaves one request short, and the jointly weighted requests answer all 30. The reference
    # checks one by one's topped-up rows in full (as before): the plan must be the same to the bit, and
    # one by one's count a bound ("at most") that is the exact count here, asked with fewer posteriors.
    schema = Schema.from_dict(json.loads((ROOT / "resources" / "demo" / "adult.schema.json").read_text()))
    specs = boxes_stream(
        SimpleNamespace(cube=SimpleNamespace(schema=schema)), 140, np.random.default_rng(190)
    )
    reqs = [Request(f"q{i}", s.query, s.eps, s.delta) for i, s in enumerate(specs)][110:]
    ordered = [a.kind == "numeric" for a in schema.attributes]
    asked = []
    infer = checks.infer
    monkeypatch.setattr(checks, "infer", lambda h, r, **kw: (asked.append(r.id), infer(h, r, **kw))[1])

    def plan():
        asked.clear()
        return planner.plan_batch(History(schema.shape), reqs, Settings(10.0), ordered=ordered), len(asked)

    new, n_new = plan()
    monkeypatch.setattr(planner, "_settled", lambda *a: False)
    ref, n_ref = plan()
    assert ref.one_by_one.checked and not new.one_by_one.checked
    assert new.strategy == ref.strategy != "one by one" and new.answered == ref.answered == len(reqs)
    assert new.measurements == ref.measurements and new.requests == ref.requests
    assert new.system_cost_after == ref.system_cost_after
    assert new.one_by_one.answered == ref.one_by_one.answered < len(reqs)
    assert new.one_by_one.system_cost_after == ref.one_by_one.system_cost_after
    assert new.candidates[1:] == ref.candidates[1:]
    assert n_new < n_ref


def test_a_short_row_its_own_raises_do_not_meet_settles_one_by_one_without_asking_the_rest(monkeypatch):
    # 40 of bench_batch.py's box requests (total 10, empty history): one by one's first check stops at a
    # fused answer that stays short through every raise of its own row, and one by one cannot afford a
    # miss. The probe bounds one by one after asking that request alone; the reference (no probe) asks the
    # rest of one by one's history after each raise. The plan must be the same to the bit.
    schema = Schema.from_dict(json.loads((ROOT / "resources" / "demo" / "adult.schema.json").read_text()))
    specs = boxes_stream(
        SimpleNamespace(cube=SimpleNamespace(schema=schema)), 150, np.random.default_rng(190)
    )
    reqs = [Request(f"q{i}", s.query, s.eps, s.delta) for i, s in enumerate(specs)][110:]
    ordered = [a.kind == "numeric" for a in schema.attributes]
    asked, probed = [], []
    infer, probe = checks.infer, planner._probe
    monkeypatch.setattr(checks, "infer", lambda h, r, **kw: (asked.append(r.id), infer(h, r, **kw))[1])
    monkeypatch.setattr(planner, "_probe", lambda *a: (probed.append(probe(*a)), probed[-1])[1])

    def plan():
        asked.clear()
        return planner.plan_batch(History(schema.shape), reqs, Settings(10.0), ordered=ordered), len(asked)

    new, n_new = plan()
    assert [p[1] for p in probed] == [1]  # one short request stayed short: one by one was settled there
    monkeypatch.setattr(planner, "_probe", lambda *a: None)
    ref, n_ref = plan()
    assert not new.one_by_one.checked and not ref.one_by_one.checked
    assert new.strategy == ref.strategy != "one by one" and new.answered == ref.answered == len(reqs)
    assert new.measurements == ref.measurements and new.requests == ref.requests
    assert new.system_cost_after == ref.system_cost_after
    assert new.one_by_one.answered == ref.one_by_one.answered == len(reqs) - 1
    assert new.candidates[1:] == ref.candidates[1:]
    assert n_new < n_ref
