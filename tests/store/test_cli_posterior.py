"""Posterior of proportions on the command line, in process, on real project files."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from dpdesk.cli import main
from dpdesk.engine.dirichlet.hellinger import global_sensitivity

BOX = 'posterior(income | age="0-30"; prior=1'


def test_preview_prices_the_box_cells_and_spends_nothing(store, capsys):
    path = store.new_project(budget=1.0)
    before = store.digest(path)
    # the global mechanism named: without a name the mechanism is the one expected to be most accurate
    assert (
        main(
            [
                "assess",
                str(path),
                "--query",
                BOX + "; mechanism=global; budget=0.5)",
                "--reference-size",
                "30",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert (
        "posterior of the shares of income (2 categories: <=50K, >50K) among age in {0-30}; prior Beta(1, 1)"
        in out
    )
    assert "exponential mechanism, global sensitivity: ε = 0.5 on each of the box's 2 cells" in out
    assert "size not public: ε = 0.125 of it buys the box's noisy total first" in out
    assert "expected Hellinger distance at a reference table of 30 records split as the prior" in out
    assert "budget: system cost 0 → 0.5 of 1" in out and "\nreleasable\n" in out
    assert "nothing was spent (preview only)" in out
    assert store.digest(path) == before


def test_preview_json_holds_the_charge_the_guarantee_and_the_verdict(store, capsys):
    path = store.new_project(budget=1.0)
    assert (
        main(["assess", str(path), "--query", BOX + "; mechanism=global; budget=0.8; size=30)", "--json"])
        == 0
    )
    obj = json.loads(capsys.readouterr().out)
    assert obj["mechanism"] == "posterior-exponential-global" and obj["alpha"] == 0.8 and obj["delta"] == 0
    assert obj["size"] == 30 and obj["size_alpha"] == 0 and obj["cells"] == 2
    assert obj["candidates"]["count"] == 31  # Beta: the 31 splits of a public total of 30
    # the data-free bound E[H − H_min] ≤ (2Δ/α)(ln N + 1) reads only the prior, α and N
    delta_g = global_sensitivity(np.array([1.0, 1.0]))
    assert obj["guarantee"]["expected_excess"] == pytest.approx(
        min(1.0, 2 * delta_g / 0.8 * (math.log(31) + 1))
    )
    assert set(obj["reference"]) == {"laplace", "exponential-global"} and sum(obj["reference_counts"]) == 30
    assert obj["releasable"] is True and obj["budget"]["system_cost_after"] == pytest.approx(0.8)


def test_a_release_over_the_total_is_previewed_as_not_releasable(store, capsys):
    path = store.new_project(budget=1.0)
    assert main(["assess", str(path), "--query", BOX + "; mechanism=laplace; budget=2)"]) == 0
    out = capsys.readouterr().out
    assert "negative noisy counts are clipped at 0" in out
    assert "NOT releasable: it would raise the most-charged cell to 2, above the total budget 1" in out


@pytest.mark.parametrize(
    "text, message",
    [
        ("posterior(height; budget=1)", "unknown attribute 'height'"),
        ("posterior(income; prior=-1; budget=1)", "every prior parameter must be a positive number"),
        ("posterior(income | ; budget=1)", "empty box after '|'"),
        ("posterior(income | age=[]; budget=1)", "empty label list for attribute 'age'"),
        ('posterior(income | age="0-30")', "needs a budget"),
        (
            "posterior(income; mechanism=global; budget=1; delta=0.1)",
            "delta (0.1) applies to the smooth-sensitivity mechanism only",
        ),
        ("posterior(income; budget=1; candidates=2.5)", "candidates (2.5) must be a whole number"),
    ],
)
def test_bad_posterior_requests_are_one_line_exit_2_and_nothing_written(store, text, message):
    path = store.new_project()
    before = store.digest(path)
    r = store.cli("assess", str(path), "--query", text)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and message in r.stderr, r.stderr
    assert r.stdout == "" and store.digest(path) == before


def test_an_attribute_with_one_label_has_no_posterior(tmp_path):
    from cli_helpers import run_dpdesk

    from dpdesk.store import Project

    table = tmp_path / "t.csv"
    table.write_text("sex,kind\nF,a\nM,a\n", encoding="utf-8")
    schema = {
        "attributes": [
            {"name": "sex", "column": "sex", "kind": "categorical", "values": ["F", "M"]},
            {"name": "kind", "column": "kind", "kind": "categorical", "values": ["a"]},
        ]
    }
    path = tmp_path / "one.dpdesk"
    Project.create(path, name="one", schema=schema, source_location=str(table), total_budget=1.0).close()
    r = run_dpdesk("assess", str(path), "--query", "posterior(kind | sex=F; budget=1)")
    assert (
        r.returncode == 2
        and "has 1 label; a posterior needs at least 2" in r.stderr
        and r.stderr.count("\n") == 1
    )


def test_a_posterior_without_a_project_is_one_line(store, tmp_path):
    history = tmp_path / "h.json"
    history.write_text('{"rows": [], "total_budget": 1, "shape": [2, 2]}', encoding="utf-8")
    r = store.cli("assess", "--history", str(history), "--query", "posterior(income; budget=1)")
    assert (
        r.returncode == 2 and "is priced against a project's ledger" in r.stderr and r.stderr.count("\n") == 1
    )
