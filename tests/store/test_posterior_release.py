"""Posterior releases through the one release path on real project files: charged per cell, δ capped per
project, verified, shown in the CSV; the CLI's answer --query with confirmation."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest

from dpdesk.cli import main
from dpdesk.engine.dirichlet.plan import PosteriorRelease, assess_request
from dpdesk.engine.dirichlet.request import parse_posterior
from dpdesk.engine.errors import BudgetError
from dpdesk.engine.mechanisms.noise import SeededSampler
from dpdesk.store import Project
from dpdesk.store.errors import StaleAssessment
from dpdesk.store.report import ledger_csv

SMOOTH = 'posterior(income | age="30-150"; prior=1; mechanism=smooth; budget=0.5; delta=4e-6)'


def _plan(p, text):
    return assess_request(parse_posterior(text, p.schema), **p.plan_inputs())


def test_each_mechanism_releases_on_its_box_and_verify_recomputes_it(store):
    path = store.new_project(budget=5.0, test_project=True, delta_cap=1e-5)
    with Project.open(path, "w") as p:
        texts = [
            'posterior(income | age="0-30"; prior=[1, 2]; mechanism=global; budget=0.5; size=30)',
            "posterior(income; mechanism=laplace; budget=0.25)",
            SMOOTH,
        ]
        for i, text in enumerate(texts):
            plan = _plan(p, text)
            release = p.release(plan, SeededSampler(i))
            assert release.kind == "posterior" and release.entry.payload["mechanism"] == plan.mechanism.name
            r = PosteriorRelease.from_payload(release.entry.payload)
            assert len(r.parameters) == 2 and np.all(r.parameters >= plan.query.prior)
            assert list(release.values) == r.parameters.tolist()
        view = p.view()
        # cells (age, income): 0-30 × {≤50K, >50K} = cells 0, 1; 30-150 = cells 2, 3; Laplace on all four
        assert view.cell_costs.tolist() == pytest.approx([0.75, 0.75, 0.75, 0.75])
        assert view.cell_deltas.tolist() == pytest.approx([0, 0, 4e-6, 4e-6], rel=1e-12)
        # the Laplace baseline's two noisy counts and the smooth release's noisy size join the history
        assert len(p.history()) == 3
        payload = view.entries[1].payload
        assert "sensitivity" not in json.dumps(dict(payload["details"])).replace("global_sensitivity", "")
        report = p.verify()
    assert report.ok and report.delta_spent == pytest.approx(4e-6) and dict(report.kinds) == {"posterior": 3}


def test_the_delta_cap_refuses_a_release_and_nothing_is_written(store):
    path = store.new_project(budget=5.0, test_project=True, delta_cap=1e-5)
    with Project.open(path, "w") as p:
        p.release(_plan(p, SMOOTH), SeededSampler(1))
        p.release(_plan(p, SMOOTH), SeededSampler(2))  # 8e-6 on the box cells
    before = store.digest(path)
    with Project.open(path, "w") as p:
        plan = _plan(p, SMOOTH)
        assert not plan.releasable and plan.delta_after == pytest.approx(1.2e-5)
        assert "above the project's cap 1e-05" in plan.reason
        with pytest.raises(Exception, match="cannot be answered: it would raise a cell's δ to 1.2e-05"):
            p.release(plan, SeededSampler(3))
        # a plan priced without the ledger's δ (as a caller might build one) is still refused by the store
        blind = assess_request(
            parse_posterior(SMOOTH, p.schema),
            cell_costs=p.view().cell_costs,
            total_budget=5.0,
            basis=p.basis(),
        )
        assert blind.releasable
        with pytest.raises(
            BudgetError, match=r"would raise cell #2's δ to 1.2e-05, over the project's δ cap 1e-05"
        ):
            p.release(blind, SeededSampler(3))
        assert len(p.ledger()) == 2
    assert store.digest(path) == before


def test_a_pure_project_allows_no_delta(store):
    path = store.new_project(budget=5.0, test_project=True)
    with Project.open(path, "w") as p:
        assert p.delta_cap == 0.0 and "delta_cap" not in p.settings()
        plan = _plan(p, SMOOTH)
        assert not plan.releasable
        blind = assess_request(
            parse_posterior(SMOOTH, p.schema),
            cell_costs=p.view().cell_costs,
            total_budget=5.0,
            basis=p.basis(),
        )
        with pytest.raises(BudgetError, match=r"the project allows no δ \(its δ cap is 0"):
            p.release(blind, SeededSampler(1))
        assert p.ledger() == []


def test_a_plan_assessed_before_another_release_is_stale(store):
    path = store.new_project(budget=5.0, test_project=True)
    with Project.open(path, "w") as p:
        first = _plan(p, "posterior(income; budget=0.5; size=61)")
        second = _plan(p, "posterior(income; budget=0.5; size=61)")
        p.release(first, SeededSampler(1))
        with pytest.raises(StaleAssessment, match="assess it again"):
            p.release(second, SeededSampler(2))
        assert len(p.ledger()) == 1


def test_the_delta_cap_is_part_of_the_settings_the_genesis_covers(store):
    path = store.new_project(budget=5.0, delta_cap=1e-5)
    with Project.open(path, "w") as p:
        assert p.verify().ok and p.settings()["delta_cap"] == 1e-5
        p.connection.execute("UPDATE project SET delta_cap = 1e-3")
    with Project.open(path, "r") as p:
        report = p.verify()
    assert not report.ok and "δ cap" in report.problems[0]


def test_the_csv_lists_posterior_entries_with_their_mechanism_and_delta(store):
    path = store.new_project(budget=5.0, test_project=True, delta_cap=1e-5)
    with Project.open(path, "w") as p:
        release = p.release(_plan(p, SMOOTH), SeededSampler(1))
        rows = list(csv.DictReader(io.StringIO(ledger_csv(p.ledger()))))
    (row,) = rows
    assert row["kind"] == "posterior" and row["mechanism"] == "posterior-exponential-smooth"
    assert float(row["privacy_delta"]) == 4e-6 and float(row["alpha"]) == 0.5
    assert row["released"] == ";".join(f"{v:.6g}" for v in release.values) and row["query"] == SMOOTH
    assert row["eps"] == "" and row["delta"] == ""  # no count promise: those columns are a count request's


def test_cli_answer_previews_asks_then_releases_and_prints_the_dirichlet(store, capsys, monkeypatch):
    path = store.new_project(budget=2.0, delta_cap=1e-5)
    text = 'posterior(income | age="0-30"; prior=1; mechanism=global; budget=0.5; size=30)'
    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # end of input: not confirmed
    before = store.digest(path)
    assert main(["answer", str(path), "--query", text]) == 1
    captured = capsys.readouterr()
    assert "releasable" in captured.out and "not released (not confirmed)" in captured.err
    assert store.digest(path) == before
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))
    assert main(["answer", str(path), "--query", text, "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    rel = obj["release"]
    assert obj["assessment"]["alpha"] == 0.5 and rel["kind"] == "posterior" and rel["ledger_seq"] == 1
    assert len(rel["parameters"]) == 2 and sum(rel["parameters"]) == pytest.approx(
        32
    )  # prior 2 + public size 30
    with Project.open(path, "r") as p:
        assert p.ledger()[0].hash == rel["ledger_head"] and p.verify().ok
    r = store.cli("answer", str(path), "--query", 'count(age="0-30")', "--yes")
    assert r.returncode == 2 and "--query takes a posterior of proportions" in r.stderr


def test_the_html_report_shows_posterior_entries_and_the_delta_cap(store):
    from dpdesk.store.report import build_html

    path = store.new_project(budget=5.0, test_project=True, delta_cap=1e-5)
    with Project.open(path, "w") as p:
        p.release(_plan(p, SMOOTH), SeededSampler(1))
        view = p.view()
        page = build_html(
            name=p.name,
            path=str(p.path),
            total_budget=5.0,
            remaining=5.0 - view.system_cost,
            system_cost=view.system_cost,
            entries=p.ledger(),
            cell_rows=[],
            verify=p.verify(),
            images={},
            delta_cap=p.delta_cap,
            delta_spent=view.delta_spent,
        )
    assert "δ cap <b>1e-05</b> · largest per-cell δ spent <b>4e-06</b>" in page
    row = next(line for line in page.split("<tr") if "class='posterior'" in line)
    assert "<td>0.5</td>" in row and "(δ = 4e-06)" in row and "mechanism=smooth" in row
