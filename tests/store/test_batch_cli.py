"""``dpdesk batch plan|answer`` on real project files, in process: plans spend nothing; answering records one
ledger entry per measurement before answering the covered requests from history; a stale or unaffordable
plan is refused before anything is spent; verify accepts the result."""

from __future__ import annotations

import json

import pytest

from dpdesk.cli import main
from dpdesk.engine.errors import BudgetError

QUERIES = [
    'count(age="0-30")',
    'count(age="30-150")',
    "count()",
    'count(income=">50K")',
    'count(age="0-30", income="<=50K")',
    'count(income="<=50K")',
]


def _queue(path, eps=(6.0, 8.0, 9.0, 7.0, 5.0, 10.0)):
    from dpdesk.store import Project

    with Project.open(path, "w") as p:
        for i, (q, e) in enumerate(zip(QUERIES, eps)):
            p.add_request(q, e, 0.2, request_id=f"q{i + 1}")


def test_plan_spends_nothing_and_answer_releases_then_answers_from_history(store, capsys):
    from dpdesk.store import Project
    from dpdesk.store.verify import verify

    path = store.new_project(budget=1.0)
    _queue(path)
    before = store.digest(path)
    assert main(["batch", "plan", str(path), "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert store.digest(path) == before  # planning writes nothing
    assert plan["answered"] == 6 and plan["system_cost_after"] <= 1.0
    assert plan["answered"] >= plan["one_by_one"]["answered"]
    assert {r["status"] for r in plan["requests"]} == {"planned"}

    assert main(["batch", "answer", str(path), "--pending", "--yes", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["release"]["left_pending"] == []
    with Project.open(path, "r") as p:
        entries = p.ledger()
        kinds = [e.kind for e in entries]
        n = len(out["plan"]["measurements"])
        # the plan (recorded before anything is spent), the measurements (one entry each, charged), then
        # one inferred answer per request
        assert kinds == ["batch"] + ["measurement"] * n + ["inferred"] * 6
        assert all(e.request_id is None for e in entries[: n + 1])
        assert {e.request_id for e in entries[n + 1 :]} == {f"q{i}" for i in range(1, 7)}
        assert all(r.status == "answered" for r in p.requests())
        assert p.view().system_cost == pytest.approx(out["plan"]["system_cost_after"], rel=1e-9)
        report = verify(p.audit_record())
    assert report.ok, report


def test_uncovered_requests_get_a_counter_offer_and_stay_pending(store, capsys):
    from dpdesk.store import Project

    path = store.new_project(budget=0.05)
    _queue(path, eps=(0.5, 0.5, 0.5, 40.0, 40.0, 40.0))
    assert main(["batch", "plan", str(path), "--requests", "q1,q4,q5"]) == 0
    text = capsys.readouterr().out
    assert "q1" in text and "not covered" in text and "offer ±" in text
    assert "q2" not in text  # only the listed requests
    assert main(["batch", "answer", str(path), "--requests", "q1,q4,q5", "--yes"]) == 0
    text = capsys.readouterr().out
    assert "still pending: q1" in text
    with Project.open(path, "r") as p:
        assert p.request("q1").status == "pending"
        assert p.request("q4").status == "answered" and p.request("q5").status == "answered"
        assert p.view().system_cost <= 0.05 + 1e-12


def test_refused_before_anything_is_spent_when_stale_or_over_the_total(store):
    from dataclasses import replace

    from dpdesk.store import Project
    from dpdesk.store.batch import plan_pending, release_batch
    from dpdesk.store.errors import StaleAssessment

    path = store.new_project(budget=1.0, test_project=True)
    _queue(path)
    with Project.open(path, "w") as p:
        plan = plan_pending(p)
        # a plan that would pass the total (its measurements at ten times the α) is refused whole
        dear = replace(plan, measurements=tuple(replace(m, alpha=m.alpha * 10) for m in plan.measurements))
        with pytest.raises(BudgetError, match="over the total budget"):
            release_batch(p, dear)
        assert p.ledger() == []
        p.answer("q3")  # the ledger moves on: the plan is stale
        head = len(p.ledger())
        with pytest.raises(StaleAssessment, match="plan the batch again"):
            release_batch(p, plan)
        assert len(p.ledger()) == head


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--requests", "q1,nope"], "no request with id 'nope'"),
        (["--requests", ","], "--requests"),
    ],
)
def test_bad_batches_are_one_line_exit_2(store, capsys, argv, message):
    path = store.new_project()
    _queue(path)
    before = store.digest(path)
    assert main(["batch", "answer", str(path), *argv, "--yes"]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert store.digest(path) == before


def test_answer_without_confirmation_spends_nothing(store, capsys, monkeypatch):
    import io

    path = store.new_project()
    _queue(path)
    before = store.digest(path)
    monkeypatch.setattr("sys.stdin", io.StringIO("n\n"))
    assert main(["batch", "answer", str(path)]) == 1
    assert "not released" in capsys.readouterr().err
    assert store.digest(path) == before
