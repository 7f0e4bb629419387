"""The queue holds requests of every release kind (count, max/argmax, posterior) in a real project file:
format 5's requests table, its migration from format 4, and answering them through the one release path
from the store and the CLI."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest

from dpdesk.engine.errors import DpdeskError
from dpdesk.store import Project, db
from dpdesk.store.errors import StaleAssessment


def test_a_queued_max_argmax_and_posterior_are_stored_with_their_parameters_and_released_as_assessed(store):
    path = store.new_project(budget=3.0)
    with Project.open(path, "w") as p:
        count = p.add_request('count(age="0-30")', 10, 0.1, "ann")
        mx = p.add_request("max(age)", alpha=0.5, requester="bo")
        am = p.add_request('argmax(income | age="0-30")', 5, 0.1)
        po = p.add_request('posterior(income | age="0-30"; prior=[1, 2])', alpha=0.4)
    with Project.open(path, "r") as p:  # read back from the file
        got = {r.id: r for r in p.requests()}
    assert [
        (got[r.id].kind, got[r.id].eps, got[r.id].delta, got[r.id].alpha) for r in (count, mx, am, po)
    ] == [
        ("count", 10.0, 0.1, None),
        ("selection", None, None, 0.5),
        ("selection", 5.0, 0.1, None),
        ("posterior", None, None, 0.4),
    ]
    assert got[mx.id].describe() == "max(age)" and got[mx.id].requester == "bo"
    # the cells a request reads: every cell for max(age); the age="0-30" half for the others
    assert got[mx.id].query.support_size() == 4 and got[am.id].query.support_size() == 2
    assert got[po.id].query.support_size() == 2
    with pytest.raises(DpdeskError, match="is a selection request, not a count"):
        got[mx.id].to_request()

    with Project.open(path, "w") as p:
        plan = p.assess(mx.id)
        assert plan.request_id == mx.id and plan.rnm.alpha == 0.5 and plan.delta == 0.05
        p.add_request("[1, 0, 0, 0]", 5, 0.1)  # the queue moving does not move the ledger: still current
        release = p.release(plan)
        entry = release.entry
        assert (entry.kind, entry.request_id, entry.payload["alpha"]) == ("selection", mx.id, 0.5)
        assert entry.payload["label"] in ("0-30", "30-150") and entry.payload["label"] in release.reply()
        stale = p.assess(am.id)
        assert stale.rnm.alpha == pytest.approx(2 * np.log(2 / 0.1) / 5 / 2)  # argmax: ln(k/δ)/T, k = 2
        p.release(p.assess(count.id))  # the ledger moves on: the argmax plan made before is refused
        with pytest.raises(StaleAssessment):
            p.release(stale)
        p.release(p.assess(am.id))
        post = p.assess(po.id)
        assert post.request_id == po.id and post.alpha == 0.4 and post.reference_counts == (33, 67)
        released = p.release(post)
        assert released.entry.kind == "posterior" and len(released.values) == 2
        costs = p.view().cell_costs
        assert {r.id: r.status for r in p.requests()} == {
            count.id: "answered",
            mx.id: "answered",
            am.id: "answered",
            po.id: "answered",
            "r5": "pending",
        }
        assert p.verify().ok
    # max(age) charged every cell 0.5; argmax and posterior the age="0-30" cells; the count its two cells
    alpha_count = Project.open(path, "r").entry_for(count.id).payload["alpha"]
    np.testing.assert_allclose(costs, [0.5 + stale.rnm.alpha + 0.4 + alpha_count] * 2 + [0.5] * 2)


@pytest.mark.parametrize(
    ("query", "eps", "delta", "alpha", "message"),
    [
        ("max(income)", None, None, 0.5, "max needs an ordered (numeric) attribute; 'income' is categorical"),
        ("max(age)", None, None, None, "a max/argmax request needs a budget alpha, or an accuracy eps"),
        ("max(age)", 3, 0.1, 0.5, "gives a budget alpha or an accuracy eps, not both"),
        ("argmax(height)", 3, 0.1, None, "unknown attribute 'height'"),
        ("max(age)", None, None, 0, "alpha (0) must be positive"),
        (
            "posterior(income; prior=1; budget=1)",
            None,
            None,
            0.5,
            "budget: given in the request text and again",
        ),
        ("posterior(income; prior=-1)", None, None, 0.5, "every prior parameter must be a positive number"),
        ("posterior(income | age=[]; prior=1)", None, None, 0.5, "empty label list for attribute 'age'"),
        ("posterior(income; prior=1)", 0.2, None, None, "needs both eps"),
        ("posterior(income; prior=1)", None, None, None, "needs a budget"),
        (
            'count(age="0-30")',
            None,
            None,
            0.5,
            "states its accuracy and confidence (eps, delta), not a privacy loss",
        ),
        ('count(age="0-30")', 5, None, None, "a count request needs delta"),
    ],
)
def test_bad_request_text_or_parameters_are_one_line_and_nothing_is_written(
    store, query, eps, delta, alpha, message
):
    path = store.new_project()
    before = store.digest(path)
    args = ["requests", "add", path, "--query", query] + [
        a
        for k, v in (("--eps", eps), ("--delta", delta), ("--alpha", alpha))
        if v is not None
        for a in (k, str(v))
    ]
    res = store.cli(*args)
    assert res.returncode == 2, res.stdout
    assert res.stderr.count("\n") == 1 and message in res.stderr, res.stderr
    with Project.open(path, "r") as p:
        assert p.requests() == []
    assert store.digest(path) == before


def test_the_cli_queues_lists_assesses_and_answers_max_and_posterior_requests(store):
    path = store.new_project(budget=2.0)
    res = store.cli(
        "requests",
        "add",
        path,
        "--query",
        "max(age)",
        "--accuracy",
        "5",
        "--confidence",
        "90%",
        "--requester",
        "cy",
    )
    assert res.returncode == 0 and "queued r1: max(age) (selection; ±5 at 90 %)" in res.stdout, res.stderr
    res = store.cli("requests", "add", path, "--query", "posterior(income; prior=1; budget=0.3)")
    assert res.returncode == 0 and "(posterior; price in the text)" in res.stdout, res.stderr
    listed = json.loads(store.cli("requests", "list", path, "--json").stdout)
    assert [(r["kind"], r["query"], r["eps"], r["alpha"]) for r in listed] == [
        ("selection", "max(age)", 5.0, None),
        ("posterior", "posterior(income; prior=1; budget=0.3)", None, None),
    ]
    before = store.digest(path)
    res = store.cli("assess", path, "--request", "r1")
    assert res.returncode == 0 and "report-noisy-max" in res.stdout and "nothing was spent" in res.stdout, (
        res.stderr
    )
    shown = json.loads(store.cli("assess", path, "--request", "r2", "--json").stdout)
    # named no mechanism: the more accurate at the reference size (issue 34 item 4), said so
    assert shown["method"] == min(shown["reference"], key=shown["reference"].get)
    assert "100 records" in shown["chosen_by"] and shown["alpha"] == 0.3 and shown["releasable"]
    assert shown["reference_counts"] == [50, 50]  # the default public reference table, split as the prior
    res = store.cli("answer", path, "--request", "r1", input="n\n")
    assert res.returncode == 1 and "not answered (not confirmed)" in res.stderr
    assert store.digest(path) == before  # previews and a refusal to confirm write nothing
    res = store.cli("answer", path, "--request", "r1", "--yes", "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["assessment"]["request_id"] == "r1" and out["release"]["label"] in ("0-30", "30-150")
    assert out["release"]["ledger_head"] == out["release"]["ledger_hash"]
    res = store.cli("answer", path, "--request", "r2", "--yes", "--json")
    assert res.returncode == 0, res.stderr
    released = json.loads(res.stdout)["release"]
    noisy = (
        "noisy_counts" if shown["method"] == "laplace" else "noisy_size"
    )  # what the chosen one releases too
    assert released["kind"] == "posterior" and len(released["parameters"]) == 2 and noisy in released
    assert all(v >= 1 for v in released["parameters"])  # prior 1 plus a non-negative candidate
    res = store.cli("answer", path, "--request", "r2", "--yes")
    assert res.returncode == 2 and "was already answered (posterior" in res.stderr
    with Project.open(path, "r") as p:
        assert [(e.kind, e.request_id) for e in p.ledger()] == [("selection", "r1"), ("posterior", "r2")]
        assert p.verify().ok


def test_a_format_4_queue_migrates_with_every_request_and_hash_kept(store, monkeypatch):
    from dpdesk.engine.mechanisms.noise import SeededSampler

    with monkeypatch.context() as m:  # a project written by a dpdesk that knew only format 4
        m.setattr(db, "FORMAT_VERSION", 4)
        path = store.new_project(test_project=True)
        with Project.open(path, "w") as p:
            p.add_request('count(age="0-30")', 10, 0.1, "ann")
            p.add_request("[1, 1, 1, 1]", 50, 0.2)
            p.answer("r1", sampler=SeededSampler(2))
            with pytest.raises(Exception, match="needs project format 5"):
                p.add_request("max(age)", alpha=0.5)
    with Project.open(path, "r") as p:  # read-only: read as counts, never written
        assert p.connection.execute("PRAGMA user_version").fetchone()[0] == 4
        old = [
            (r.id, r.kind, r.query_text, r.query.to_json(), r.eps, r.delta, r.status, r.received)
            for r in p.requests()
        ]
        ledger = [(e.seq, e.hash) for e in p.ledger()]
    with Project.open(path, "w") as p:
        assert (
            p.connection.execute("PRAGMA user_version").fetchone()[0] == db.FORMAT_VERSION >= 5
        )  # 6: watched claims
        assert [
            (r.id, r.kind, r.query_text, r.query.to_json(), r.eps, r.delta, r.status, r.received)
            for r in p.requests()
        ] == old
        entries = p.ledger()  # every hash kept; format 10 appends the decided requests' digests
        assert [(e.seq, e.hash) for e in entries[: len(ledger)]] == ledger and p.verify().ok
        assert [e.kind for e in entries[len(ledger) :]] == ["requests"]
        p.add_request("max(age)", alpha=0.5)
        with pytest.raises(sqlite3.IntegrityError):  # the table still refuses a count without its accuracy
            p.connection.execute(
                "INSERT INTO requests (id, position, requester, kind, query_json, received, status) "
                "VALUES ('x', 99, '', 'count', '[]', 'now', 'pending')"
            )
