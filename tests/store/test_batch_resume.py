"""A batch stopped midway is resumed as it was planned and never pays twice (issue 31, item 1).

The demo's batch (34 measurements, one plan) is killed at three points — right after a measurement's
commit, inside a measurement's transaction, and after a draw before its commit — and run again each
time; then cancelled through ``release_batch`` (what the batch dialog calls) after 5 measurements and
planned again. Every time the rerun resumes the recorded plan: the finished ledger holds one plan, its 34
measurements once each in order, and the system cost the plan promised before anything was spent.
"""

from __future__ import annotations

import math
import re
import shutil

import pytest

from dpdesk.store import Project

PLAN_COST = re.compile(r"^strategy: .*system cost 0 → ([0-9.]+) \(total", re.M)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    from dpdesk.appdata.demo import create_demo_project

    return create_demo_project(tmp_path_factory.mktemp("demo"))


def _copy(demo, name):
    path = demo.with_name(name)
    shutil.copyfile(demo, path)
    return path


def _batches(path):
    with Project.open(path, "r") as p:
        entries = p.ledger()
        report = p.verify()
    plans = [e for e in entries if e.kind == "batch"]
    bought = [e.payload["batch"]["index"] for e in entries if e.kind == "measurement"]
    return plans, bought, report


def test_killed_batch_resumes_as_planned(demo, forks):
    path = _copy(demo, "killed.dpdesk")
    argv = ("batch", "answer", path, "--pending", "--yes")
    first = forks.run(*argv, env={"DPDESK_TEST_KILL_AT_LABEL": "answer:committed:5"})
    assert first["signal"] == 9, first
    promised = float(PLAN_COST.search(first["output"]).group(1))
    plans, bought, report = _batches(path)
    assert report.ok and bought == [0, 1, 2, 3, 4] and len(plans) == 1
    count = len(plans[0].payload["measurements"])
    for kill in ("tx:committing:3", "answer:drawn:2"):  # inside a commit; drawn but not recorded
        again = forks.run(*argv, env={"DPDESK_TEST_KILL_AT_LABEL": kill})
        assert (
            again["signal"] == 9 and "resumes the batch plan recorded at ledger entry #1" in again["output"]
        )
        assert "system cost 0 →" not in again["output"]  # nothing planned again
    last = forks.run(*argv)
    assert last["code"] == 0, last["output"]
    plans, bought, report = _batches(path)
    assert report.ok, report.problems
    assert len(plans) == 1 and bought == list(range(count))  # each measurement once, in the plan's order
    assert math.isclose(report.system_cost, plans[0].payload["system_cost_after"], rel_tol=1e-12)
    assert math.isclose(report.system_cost, promised, rel_tol=1e-5)  # what the plan said, to its 6 digits
    with Project.open(path, "r") as p:
        waiting = {r.id for r in p.requests("pending")}
    planned = {r["id"] for r in plans[0].payload["requests"] if r["status"] != "uncovered"}
    assert not planned & waiting  # every request the plan covered was answered


def test_cancelled_batch_resumes_as_planned(demo):
    """Cancel through release_batch after 5 of the measurements, plan again: the rest as planned."""
    from dpdesk.engine.errors import Cancelled
    from dpdesk.store.batch import plan_pending, release_batch

    path = _copy(demo, "cancelled.dpdesk")
    with Project.open(path, "w") as p:
        plan = plan_pending(p)
        done = []
        with pytest.raises(Cancelled, match="resumes it as planned"):
            release_batch(p, plan, progress=done.append, cancelled=lambda: len(done) >= 5)
        again = plan_pending(p)
        assert again.resumes is not None and again.resumes.recorded == 5
        assert [m.query for m in again.measurements] == [m.query for m in plan.measurements[5:]]
        assert [m.alpha for m in again.measurements] == [m.alpha for m in plan.measurements[5:]]
        assert math.isclose(again.system_cost_after, plan.system_cost_after, rel_tol=1e-12)
        out = release_batch(p, again)
        assert math.isclose(p.view().system_cost, plan.system_cost_after, rel_tol=1e-12)
        assert set(out.left_pending) == set(plan.ids("uncovered"))
        assert plan_pending(p, replan=False).resumes is None  # finished: nothing left to resume
    plans, bought, report = _batches(path)
    assert report.ok and len(plans) == 1 and bought == list(range(len(plan.measurements)))


def test_verify_catches_a_measurement_bought_twice(store):
    """A measurement of a recorded plan bought again (or out of the plan's order) fails verify by entry."""
    from dpdesk.engine.errors import Cancelled
    from dpdesk.engine.mechanisms.noise import SeededSampler
    from dpdesk.engine.planning.release import MeasurementPlan
    from dpdesk.store.batch import plan_pending, release_batch

    path = store.new_project(test_project=True, budget=5.0)
    with Project.open(path, "w") as p:
        p.add_request('count(income=">50K")', 4, 0.05, "a", "q1")
        p.add_request('count(age="0-30")', 4, 0.05, "b", "q2")
        plan = plan_pending(p)
        assert len(plan.measurements) >= 2
        with pytest.raises(Cancelled):
            release_batch(
                p, plan, SeededSampler(1), progress=lambda f: None, cancelled=lambda: p.head()[0] >= 2
            )
        entry = plan_pending(p).resumes.entry
        m = plan.measurements[0]
        p.release(
            MeasurementPlan(m, p.basis(), plan.strategy, 0, len(plan.measurements), plan_entry=entry),
            SeededSampler(2),
        )
        report = p.verify()
    assert not report.ok and report.first_bad_seq == 3
    assert "measurement #1 of batch plan #1: already bought (paid twice)" in report.problems[0]
