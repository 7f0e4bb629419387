"""``dpdesk release plan`` on a real project file, in process: the preview, and bad input → one line, exit 2."""

from __future__ import annotations

import json

import pytest

from dpdesk.cli import main


def test_plan_prints_cost_and_labelled_guarantees_and_spends_nothing(store, capsys):
    path = store.new_project(budget=1.0)
    before = store.digest(path)
    assert main(["release", "plan", str(path), "--tree", "age", "--alpha", "0.4"]) == 0
    out = capsys.readouterr().out
    assert "interval tree over age (branching 2, 2 levels), crossed with income" in out
    assert "every cell pays α = 0.4 (2 count(s) per record at α = 0.2 each" in out
    assert "system cost: 0 now → 0.4 after" in out
    assert "each query, every interval of age (other attributes summed): within ±" in out
    assert "all count queries at once: no such bound here" in out and "Thm" not in out
    assert (
        main(["release", "plan", str(path), "--cells", "--accuracy", "30", "--delta", "0.1", "--json"]) == 0
    )
    obj = json.loads(capsys.readouterr().out)
    assert obj["plan"] == {"kind": "cells"} and obj["accuracy_target"] == 30 and obj["rows"] == 4
    assert obj["guarantees"][0]["halfwidth"] <= 30 and obj["simultaneous"]["applies"] is True
    assert obj["system_cost_after"] == pytest.approx(obj["alpha"]) and obj["fits"] == (obj["alpha"] <= 1.0)
    assert store.digest(path) == before  # planning writes nothing


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--tree", "height", "--alpha", "1"], "unknown attribute 'height'"),
        (["--tree", "income", "--alpha", "1"], "is not ordered"),
        (["--cells", "--alpha", "0"], "alpha (0.0) must be a positive finite number"),
        (["--cells", "--alpha", "-2"], "alpha (-2.0)"),
        (["--marginals", "3", "--alpha", "1"], "marginal order 3"),
        (["--marginals", "one", "--alpha", "1"], "--marginals ('one')"),
        (["--cells", "--accuracy", "5", "--delta", "2"], "delta (2.0)"),
        (["--cells"], "one of the arguments --alpha --accuracy is required"),
    ],
)
@pytest.mark.parametrize("action", ["plan", "publish"])
def test_bad_plans_are_one_line_exit_2_and_nothing_written(store, capsys, argv, message, action):
    path = store.new_project()
    before = store.digest(path)
    try:
        code = main(["release", action, str(path), *argv, *(["--yes"] if action == "publish" else [])])
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and err.startswith("dpdesk: error:")
    assert store.digest(path) == before


def test_publish_asks_then_records_before_it_shows_and_export_writes_both_labelled_tables(
    store, capsys, monkeypatch
):
    import io

    import pandas as pd

    from dpdesk.store import Project

    path = store.new_project(budget=1.0)
    before = store.digest(path)
    monkeypatch.setattr("sys.stdin", io.StringIO("n\n"))
    assert main(["release", "publish", str(path), "--cells", "--alpha", "0.4"]) == 1
    assert "not released (not confirmed)" in capsys.readouterr().err and store.digest(path) == before
    assert main(["release", "publish", str(path), "--cells", "--alpha", "2"]) == 1  # over the total budget
    assert "not released: reject: every cell would pay α = 2" in capsys.readouterr().out
    assert store.digest(path) == before
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))
    assert main(["release", "publish", str(path), "--cells", "--alpha", "0.4"]) == 0
    out = capsys.readouterr().out
    assert "released as ledger entry 1: 4 noisy counts; system cost now 0.4 of 1" in out
    assert (
        main(["release", "publish", str(path), "--marginals", "1", "--alpha", "0.3", "--yes", "--json"]) == 0
    )
    res = capsys.readouterr()
    obj = json.loads(res.out)
    assert (
        obj["release"]["kind"] == "partition"
        and obj["release"]["ledger_seq"] == 2
        and "values" not in obj["release"]
    )
    assert obj["preview"]["alpha"] == 0.3 and "marginals" in res.err
    with Project.open(path, "r") as p:
        entries = p.ledger()
        assert [e.kind for e in entries] == [
            "partition",
            "partition",
        ] and p.view().system_cost == pytest.approx(0.7)
        recorded = [v for g in entries[0].payload["values"] for v in g]
        assert p.verify(extends=[obj["release"]["ledger_head"]]).ok
    csv = store.dir / "cells.csv"
    assert main(["release", "export", str(path), "--release", "1", "--out", str(csv)]) == 0
    table = pd.read_csv(csv)
    assert (
        list(table.columns) == ["group", "age", "income", "noisy_count"]
        and table["noisy_count"].tolist() == recorded
    )
    pq = store.dir / "cells.parquet"
    assert main(["release", "export", str(path), "--release", "1", "--out", str(pq), "--form", "seed"]) == 0
    seed = pd.read_parquet(pq)
    assert seed["noisy_count_positive"].tolist() == [v for v in recorded if v > 0]
    assert "wrote" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--release", "9", "--out", "t.csv"], "the ledger has no entry #9"),
        (["--release", "1", "--out", "t.txt"], "must end in .csv or .parquet"),
        (["--release", "1", "--out", "missing/t.csv"], "does not exist"),
        (["--release", "2", "--out", "t.csv"], "entry #2 is a rejected entry, not a partition release"),
    ],
)
def test_bad_exports_are_one_line_exit_2(store, capsys, argv, message):
    from dpdesk.store import Project

    path = store.new_project(budget=1.0)
    assert main(["release", "publish", str(path), "--cells", "--alpha", "0.2", "--yes"]) == 0
    with Project.open(path, "w") as p:
        p.reject(p.add_request("[1, 0, 0, 0]", 5.0, 0.1).id)
    capsys.readouterr()
    argv = [a if not a.endswith((".csv", ".txt")) else str(store.dir / a) for a in argv]
    assert main(["release", "export", str(path), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and err.startswith("dpdesk: error:")
    assert not list(store.dir.glob("t.*")) and not list(store.dir.glob(".t.*"))


def test_select_releases_a_private_argmax_and_max_recorded_before_shown(store, capsys, monkeypatch):
    import io

    from dpdesk.store import Project

    path = store.new_project(budget=1.0)
    before = store.digest(path)
    monkeypatch.setattr("sys.stdin", io.StringIO("no\n"))
    assert main(["release", "select", str(path), "--query", "argmax(income)", "--alpha", "0.5"]) == 1
    assert store.digest(path) == before
    assert main(["release", "select", str(path), "--query", "argmax(income)", "--alpha", "2", "--yes"]) == 1
    assert (
        "not released: reject: α = 2 on the box" in capsys.readouterr().out and store.digest(path) == before
    )
    assert main(["release", "select", str(path), "--query", "argmax(income)", "--alpha", "0.5", "--yes"]) == 0
    out = capsys.readouterr().out
    assert "public accuracy: with probability ≥ 0.95, the released label's count is within" in out
    released = out.split("released: ")[1].split(" (")[0]
    assert released in ("<=50K", ">50K")
    assert (
        main(
            [
                "release",
                "select",
                str(path),
                "--query",
                'max(age | income=">50K")',
                "--accuracy",
                "40",
                "--delta",
                "0.1",
                "--yes",
                "--json",
            ]
        )
        == 0
    )
    obj = json.loads(capsys.readouterr().out)
    assert obj["plan"]["kind"] == "max" and obj["release"]["label"] in ("0-30", "30-150")
    with Project.open(path, "r") as p:
        entries = p.ledger()
        assert [e.kind for e in entries] == ["selection", "selection"] and entries[0].payload[
            "label"
        ] == released
        costs = p.view().cell_costs  # cells: (age, income) in C order; the max's box is income=">50K"
        alpha2 = obj["plan"]["alpha"]
        assert costs.tolist() == pytest.approx([0.5, 0.5 + alpha2, 0.5, 0.5 + alpha2])
        assert p.verify().ok


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--query", "max(height)", "--alpha", "1"], "unknown attribute 'height'"),
        (
            ["--query", "max(income)", "--alpha", "1"],
            "max needs an ordered (numeric) attribute; 'income' is categorical",
        ),
        (["--query", "argmax(income)", "--alpha", "0"], "alpha (0.0) must be a positive finite number"),
        (["--query", "argmax(income)", "--accuracy", "5", "--delta", "1.5"], "delta (1.5)"),
    ],
)
def test_bad_selections_are_one_line_exit_2_and_nothing_written(store, capsys, argv, message):
    path = store.new_project()
    before = store.digest(path)
    assert main(["release", "select", str(path), *argv, "--yes"]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and err.startswith("dpdesk: error:")
    assert store.digest(path) == before
