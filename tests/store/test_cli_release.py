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
    assert "per query (exact posterior): every interval of age (other attributes summed) within ±" in out
    assert "simultaneous (seed Thm 4.2): does not apply" in out
    assert main(["release", "plan", str(path), "--cells", "--accuracy", "30", "--delta", "0.1", "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["plan"] == {"kind": "cells"} and obj["accuracy_target"] == 30 and obj["rows"] == 4
    assert obj["guarantees"][0]["halfwidth"] <= 30 and obj["simultaneous"]["applies"] is True
    assert obj["system_cost_after"] == pytest.approx(obj["alpha"]) and obj["fits"] == (obj["alpha"] <= 1.0)
    assert store.digest(path) == before  # planning writes nothing


@pytest.mark.parametrize("argv, message", [
    (["--tree", "height", "--alpha", "1"], "unknown attribute 'height'"),
    (["--tree", "income", "--alpha", "1"], "is not ordered"),
    (["--cells", "--alpha", "0"], "alpha (0.0) must be a positive finite number"),
    (["--cells", "--alpha", "-2"], "alpha (-2.0)"),
    (["--marginals", "3", "--alpha", "1"], "marginal order 3"),
    (["--marginals", "one", "--alpha", "1"], "--marginals ('one')"),
    (["--cells", "--accuracy", "5", "--delta", "2"], "delta (2.0)"),
    (["--cells"], "one of the arguments --alpha --accuracy is required"),
])
def test_bad_plans_are_one_line_exit_2_and_nothing_written(store, capsys, argv, message):
    path = store.new_project()
    before = store.digest(path)
    try:
        code = main(["release", "plan", str(path), *argv])
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and err.startswith("dpdesk: error:")
    assert store.digest(path) == before
