"""Batch plans that look ahead, on real project files: the project's look-ahead setting, the queue's public
workload it is built from, what it would spend shown in the plan before anything is spent, and its
measurements released on the one path (OpenDP noise, one ledger entry each) so that every planned request
— and the rest of the queue on those cells — is then answered from history by the exact posterior."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpdesk.engine.errors import DpdeskError
from dpdesk.store import Project
from dpdesk.store.batch import plan_pending, queue_workload, release_batch

QUERIES = [
    'count(age="0-30")',
    'count(age="30-150")',
    "count()",
    'count(income=">50K")',
    'count(age="0-30", income="<=50K")',
    'count(income="<=50K")',
]
EPS = (6.0, 8.0, 9.0, 7.0, 5.0, 10.0)


def _project(store, budget=1.0, test_project=False):
    path = store.new_project(budget=budget, test_project=test_project)
    with Project.open(path, "w") as p:
        for i, (q, e) in enumerate(zip(QUERIES, EPS)):
            p.add_request(q, e, 0.2, request_id=f"q{i + 1}")
    return path


def test_the_setting_is_off_by_default_kept_in_the_file_and_checked(store):
    path = _project(store)
    with Project.open(path, "r") as p:
        assert p.look_ahead is None
    with Project.open(path, "w") as p:
        p.set_look_ahead(0.4)
    with Project.open(path, "r") as p:  # a fresh connection reads it back from the file
        assert p.look_ahead == 0.4
    before = store.digest(path)
    with Project.open(path, "w") as p:
        for bad in (0, 1.5, -0.2, math.nan, math.inf, True, "half"):
            with pytest.raises(DpdeskError, match=r"must be a fraction in \(0, 1\]") as err:
                p.set_look_ahead(bad)
            assert "\n" not in str(err.value)
        with pytest.raises(DpdeskError, match="must be a fraction"):
            plan_pending(p, look_ahead=2.0)
        assert p.look_ahead == 0.4 and p.ledger() == []
    assert store.digest(path) == before
    with Project.open(path, "w") as p:
        p.set_look_ahead(None)
        assert p.look_ahead is None


def test_a_format_6_project_reads_as_off_and_migrates_keeping_every_hash(store, monkeypatch):
    from dpdesk.engine.mechanisms.noise import SeededSampler
    from dpdesk.store import db

    assert db.FORMAT_VERSION >= 7  # the look-ahead setting came with format 7
    with monkeypatch.context() as m:  # written by a dpdesk that knew format 6
        m.setattr(db, "FORMAT_VERSION", 6)
        path = _project(store, test_project=True)
        with Project.open(path, "w") as p:
            p.answer("q3", SeededSampler(5))
            hashes = [e.hash for e in p.ledger()]
    with Project.open(path, "r") as p:  # read-only: nothing migrates; the setting reads as off
        assert p.connection.execute("PRAGMA user_version").fetchone()[0] == 6 and p.look_ahead is None
        assert plan_pending(p, ["q1", "q2"]).look_ahead is None
    with Project.open(path, "w") as p:
        assert p.connection.execute("PRAGMA user_version").fetchone()[0] == db.FORMAT_VERSION
        p.set_look_ahead(0.25)
        entries = p.ledger()
        # every hash kept; format 10 appends one entry holding the decided requests' digests
        assert p.look_ahead == 0.25 and [e.hash for e in entries[: len(hashes)]] == hashes and p.verify().ok
        assert [e.kind for e in entries[len(hashes) :]] == ["requests"]


def test_look_ahead_is_built_from_the_queue_only_and_shown_before_anything_is_spent(store):
    path = _project(store)
    with Project.open(path, "w") as p:
        p.reject("q6", "out of scope")  # a declined request is not part of the workload served
        seen = queue_workload(p, ["q1", "q2"])
        assert [r.id for r in seen] == ["q3", "q4", "q5"]
        assert [(r.eps, r.delta) for r in seen] == [(9.0, 0.2), (7.0, 0.2), (5.0, 0.2)]
        plain = plan_pending(p, ["q1", "q2"])  # the setting is off: the batch alone
        assert plain.look_ahead is None and not plain.strategy.startswith("ahead")
        p.set_look_ahead(0.5)
        before = store.digest(path)
        plan = plan_pending(p, ["q1", "q2"])  # the project's setting now
        assert plan.to_json() | {"elapsed_ms": 0} == plan_pending(
            p, ["q1", "q2"], look_ahead=0.5
        ).to_json() | {"elapsed_ms": 0}
        assert store.digest(path) == before  # planning spends and writes nothing
    la = plan.look_ahead
    assert plan.strategy.startswith(la.strategy + " + ") and la.strategy.startswith("ahead: ")
    assert la.seen == 3 and la.share == 0.5 and la.cells == 4
    # the preview holds the look-ahead: its rows first, in the costs after the plan and the system cost
    ahead = sum(m.charge.dense(4) for m in plan.measurements[: la.measurements])
    assert ahead.max() == pytest.approx(0.5, rel=1e-6) and la.system_cost_after == pytest.approx(ahead.max())
    assert np.allclose(plan.charge.dense(4), plan.cell_costs_after)
    assert (
        plan.system_cost_after == pytest.approx(plan.cell_costs_after.max()) and plan.system_cost_after <= 1.0
    )
    assert plan.system_cost_after > plain.system_cost_after  # it spends ahead of the requests that need it
    assert [p.alone for p in plan.requests] == [p.alone for p in plain.requests]  # alone: today's rules
    assert plan.to_json()["look_ahead"] == la.to_json()


def test_a_look_ahead_plan_is_released_in_order_and_serves_the_rest_of_the_queue(store):
    path = _project(store)
    with Project.open(path, "w") as p:
        p.set_look_ahead(1.0)
        plan = plan_pending(p, ["q1", "q2"])
        la = plan.look_ahead
        assert la is not None and set(plan.ids("planned")) == {"q1", "q2"}
        done = release_batch(p, plan)  # the vetted sampler (OpenDP)
        entries = p.ledger()[1:]  # after the plan's own entry (format 9)
        n = len(plan.measurements)
        assert [e.kind for e in entries] == ["measurement"] * n + ["inferred"] * 2
        assert all(e.payload["sampler"].startswith("opendp") for e in entries[:n])
        assert all(e.payload["batch"]["strategy"] == plan.strategy for e in entries[:n])
        # the audit sees which measurements were the look-ahead, and at what share
        assert [e.payload["batch"].get("look_ahead") for e in entries[:n]] == [
            {"share": 1.0}
        ] * la.measurements + [None] * (n - la.measurements)
        assert [e.request_id for e in entries[n:]] == ["q1", "q2"] and done.left_pending == ()
        view = p.view()
        assert view.system_cost <= 1.0 * (1 + 1e-9)
        assert np.allclose(view.cell_costs, plan.cell_costs_after)
        # the rest of the queue on those cells: history meets each at its (ε, δ) (exact posterior), free
        for rid in ("q3", "q4", "q5", "q6"):
            assert p.assess(rid).decision == "infer", rid
        report = p.verify()
        assert report.ok and dict(report.kinds)["measurement"] == n, report
        # nothing unspent is left: the next look-ahead plan is the plain one, and within the total
        nxt = plan_pending(p, ["q3", "q4"])
        assert nxt.look_ahead is None and nxt.system_cost_after <= 1.0 * (1 + 1e-9)


def test_a_look_ahead_measurement_a_watched_claim_declines_is_left_out(store):
    path = _project(store, budget=5.0)
    with Project.open(path, "w") as p:
        p.watch(
            'count(age="0-30", income=">50K")', 0, 25, 0.8, 0.05
        )  # cell #1: a sharp identity row there is declined
        p.set_look_ahead(1.0)
        plan = plan_pending(p, ["q1", "q2"])
        la = plan.look_ahead
        (why,) = plan.left_out  # the identity row on cell #1, and nothing else
        assert why.startswith("measurement #2: declined by watched claim c1")
        assert la.strategy == "ahead: identity" and la.measurements == 3 and la.cells == 3
        cells = sum(m.charge.dense(4) for m in plan.measurements[: la.measurements])
        assert cells[1] == 0.0 and np.count_nonzero(cells) == 3
        assert la.system_cost_after == pytest.approx(cells.max())
        status = {r.id: r for r in plan.requests}  # q1 (age 0-30) needed cell #1; q2 does not
        assert status["q1"].status == "uncovered" and "watched claim c1 would decline" in status["q1"].reason
        assert status["q2"].status == "planned"
        done = release_batch(p, plan)
        assert done.left_pending == ("q1",) and p.request("q2").status == "answered"
        (w,) = p.claims()
        assert w.spent <= w.claim.risk and p.verify().ok


def test_cli_look_ahead_flags_setting_json_and_one_line_errors(store, capsys):
    import json

    from dpdesk.cli import main

    path = _project(store)
    before = store.digest(path)
    for bad in (
        ["--look-ahead", "2"],
        ["--look-ahead", "abc"],
        ["--look-ahead", "0"],
        ["--look-ahead", "--no-look-ahead"],
    ):
        with pytest.raises(SystemExit) as exit_:
            main(["batch", "answer", str(path), "--yes", *bad])
        err = capsys.readouterr().err
        assert (
            exit_.value.code == 2 and err.count("\n") == 1 and err.startswith("dpdesk: error: argument --")
        ), err
    with pytest.raises(SystemExit) as exit_:
        main(["project", "look-ahead", str(path), "--share", "1.5"])
    assert exit_.value.code == 2 and "must be a fraction in (0, 1]" in capsys.readouterr().err
    assert store.digest(path) == before  # nothing written

    assert main(["batch", "plan", str(path), "--requests", "q1,q2", "--look-ahead", "0.5", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["look_ahead_share"] == 0.5 and plan["strategy"].startswith(
        plan["look_ahead"]["strategy"] + " + "
    )
    assert plan["look_ahead"]["system_cost_after"] == pytest.approx(0.5) and plan["look_ahead"]["seen"] == 4
    assert main(["batch", "plan", str(path), "--requests", "q1,q2"]) == 0  # the project's setting: off
    assert "look-ahead" not in capsys.readouterr().out
    assert store.digest(path) == before

    assert main(["project", "look-ahead", str(path), "--share", "0.5"]) == 0
    assert "on at share 0.5" in capsys.readouterr().out
    assert main(["batch", "plan", str(path), "--requests", "q1,q2", "--no-look-ahead", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["look_ahead"] is None
    assert main(["batch", "answer", str(path), "--requests", "q1,q2", "--yes", "--json"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert "look-ahead: ahead: " in captured.err and "spending 50% of their room" in captured.err
    assert out["plan"]["look_ahead_share"] == 0.5 and out["release"]["left_pending"] == []
    from dpdesk.store.verify import verify

    with Project.open(path, "r") as p:
        kinds = [e.kind for e in p.ledger()]
        assert kinds == ["batch"] + ["measurement"] * len(out["plan"]["measurements"]) + ["inferred"] * 2
        assert verify(p.audit_record()).ok
