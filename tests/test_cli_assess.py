"""`dpdesk assess` end to end through the command line (in this process: tests/cli_helpers.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import run_dpdesk

ROOT = Path(__file__).resolve().parents[1]
PAPER = ROOT / "resources" / "examples" / "paper.history.json"


dpdesk = run_dpdesk


def test_worked_example_through_the_cli_json():
    r = dpdesk(
        "assess", "--history", str(PAPER), "--query", "[1,0,1,0]", "--eps", "60", "--delta", "0.05", "--json"
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert round(out["estimate"], 1) == 42.0
    assert np.round(out["coefficients"], 2).tolist() == [0.48, 0.36, -0.03, 0.50, -0.50, 0.26, 0.07, 0.24]
    assert np.allclose(out["cell_costs"], [0.1, 0.275, 0.25, 0.375])
    assert out["system_cost"] == pytest.approx(0.375)
    for key in (
        "estimable",
        "std",
        "interval",
        "interval_confidence",
        "confidence_at_eps",
        "decision",
        "fresh_alpha",
        "system_cost_after",
        "remaining",
        "method",
        "elapsed_ms",
    ):
        assert key in out
    assert out["interval_confidence"] >= 0.95
    assert out["remaining"] == pytest.approx(1.0 - 0.375)


def test_json_leaves_out_the_cell_costs_of_a_large_cube_unless_asked(tmp_path):
    # 300 × 300 = 90 000 cells, over the 65 536 up to which --json lists every cell's cost
    schema = {
        "attributes": [
            {"name": n, "column": n, "kind": "categorical", "values": [str(i) for i in range(300)]}
            for n in ("a", "b")
        ]
    }
    hist = tmp_path / "wide.history.json"
    hist.write_text(
        json.dumps(
            {
                "cells": 90_000,
                "total_budget": 1.0,
                "schema": schema,
                "rows": [
                    {"query": {"indices": [0, 1, 300], "values": [1, 1, 1]}, "alpha": 0.1, "answer": 40.0}
                ],
            }
        )
    )
    args = (
        "assess",
        "--history",
        str(hist),
        "--query",
        '{"indices": [0, 1, 300], "values": [1, 1, 1]}',
        "--eps",
        "30",
        "--delta",
        "0.05",
        "--json",
    )
    r = dpdesk(*args)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["cell_costs"] is None and out["cell_costs_omitted"] == 90_000
    assert out["system_cost"] == pytest.approx(0.1)
    r = dpdesk(*args, "--cell-costs")
    full = json.loads(r.stdout)
    assert len(full["cell_costs"]) == 90_000 and "cell_costs_omitted" not in full
    assert sorted(np.flatnonzero(full["cell_costs"]).tolist()) == [0, 1, 300]
    assert {k: v for k, v in full.items() if k not in ("cell_costs", "elapsed_ms")} == {
        k: v for k, v in out.items() if k not in ("cell_costs", "cell_costs_omitted", "elapsed_ms")
    }


def test_text_query_uses_the_schema_in_the_history_file():
    r = dpdesk(
        "assess",
        "--history",
        str(PAPER),
        "--query",
        'count(age="0-30", income="<=50K") + count(age="30-150", income="<=50K")',
        "--eps",
        "60",
        "--delta",
        "0.05",
        "--json",
        "--interval",
        "0",
        "1000",
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert round(out["estimate"], 1) == 42.0
    assert 0.8 < out["interval_probability"] <= 1.0


def test_jsonl_requests_give_one_object_per_line(tmp_path):
    f = tmp_path / "req.jsonl"
    f.write_text(
        '{"query": [1,0,1,0], "eps": 60, "delta": 0.05}\n\n{"id": "b", "query": {"indices": [3], "values": [1]}, "eps": 5, "delta": 0.1}\n'
    )
    r = dpdesk("assess", "--history", str(PAPER), "--queries", str(f), "--json", "--method", "direct")
    assert r.returncode == 0, r.stderr
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert [x["request_id"] for x in lines] == ["1", "b"]
    assert all(x["method"] == "direct" for x in lines)


def test_human_readable_output():
    r = dpdesk("assess", "--history", str(PAPER), "--query", "[1,0,1,0]", "--eps", "60", "--delta", "0.05")
    assert r.returncode == 0, r.stderr
    assert "estimate" in r.stdout and "decision" in r.stdout and "system cost" in r.stdout


def test_pace_raises_alpha_or_declines():
    base = (
        "assess",
        "--history",
        str(PAPER),
        "--query",
        "[0,0,0,1]",
        "--eps",
        "5",
        "--delta",
        "0.2",
        "--json",
    )
    plain = json.loads(dpdesk(*base, "--budget", "10").stdout)
    paced = json.loads(dpdesk(*base, "--budget", "10", "--pace", "0.2", "0.5").stdout)
    # cell 3 has spent 0.375 of the total 10: headroom 9.625, a fifth of it is 1.925
    assert plain["decision"] == paced["decision"] == "spend" and plain["policy"] == "greedy"
    assert plain["spend_alpha"] < 1.0 and paced["spend_alpha"] == pytest.approx(1.925)
    assert paced["headroom"] == pytest.approx(9.625) and paced["needed_alpha"] == pytest.approx(
        plain["spend_alpha"]
    )
    # with the file's total of 1 the headroom is 0.625: a cap of 10% declines what fits without a policy
    fits = json.loads(dpdesk(*base).stdout)
    assert fits["decision"] == "spend" and fits["spend_alpha"] > 0.0625
    tight = json.loads(dpdesk(*base, "--pace", "0", "0.1").stdout)
    assert tight["decision"] == "reject" and "declined by the spend policy" in tight["reason"]
    text = dpdesk(*base[:-1], "--budget", "10", "--pace", "0.2", "0.5").stdout
    assert "spend policy" in text and "can still pay ε = 9.625" in text and "α" not in text


@pytest.mark.parametrize(
    "args,needle",
    [
        (
            ["--history", "/nonexistent/h.json", "--query", "[1]", "--eps", "1", "--delta", "0.1"],
            "no such history file",
        ),
        (["--history", "{BAD}", "--query", "[1,0,1,0]", "--eps", "1", "--delta", "0.1"], "malformed JSON"),
        (["--history", "{PAPER}", "--query", "[1,0,1]", "--eps", "1", "--delta", "0.1"], "3 coefficients"),
        (["--history", "{ALPHA0}", "--query", "[1,0]", "--eps", "1", "--delta", "0.1"], "alpha"),
        (["--history", "{PAPER}", "--query", "[1,0,1,0]", "--eps", "0", "--delta", "0.1"], "eps"),
        (["--history", "{PAPER}", "--query", "[1,0,1,0]", "--eps", "-2", "--delta", "0.1"], "eps"),
        (["--history", "{PAPER}", "--query", "[1,0,1,0]", "--eps", "1", "--delta", "1.5"], "delta"),
        (["--history", "{PAPER}", "--query", "[1,0,1,0]", "--eps", "1", "--delta", "0"], "delta"),
        (["--history", "{PAPER}", "--query", 'count(age="0-31")', "--eps", "1", "--delta", "0.1"], "0-31"),
        (["--history", "{PAPER}", "--query", "[0,0,0,0]", "--eps", "1", "--delta", "0.1"], "zero"),
        (
            [
                "--history",
                "{PAPER}",
                "--query",
                "[1,0,1,0]",
                "--eps",
                "1",
                "--delta",
                "0.1",
                "--budget",
                "-1",
            ],
            "budget",
        ),
        (["--history", "{PAPER}", "--queries", "{BADLINES}"], "line 2"),
        (
            [
                "--history",
                "{PAPER}",
                "--query",
                "[1,0,1,0]",
                "--eps",
                "1",
                "--delta",
                "0.1",
                "--pace",
                "0.6",
                "0.5",
            ],
            "floor",
        ),
        (
            [
                "--history",
                "{PAPER}",
                "--query",
                "[1,0,1,0]",
                "--eps",
                "1",
                "--delta",
                "0.1",
                "--pace",
                "0",
                "2",
            ],
            "cap",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, needle):
    bad = tmp_path / "bad.json"
    bad.write_text('{"cells": 4, "rows": [')
    a0 = tmp_path / "a0.json"
    a0.write_text(
        json.dumps({"cells": 2, "total_budget": 1, "rows": [{"query": [1, 0], "alpha": 0, "answer": 3}]})
    )
    lines = tmp_path / "lines.jsonl"
    lines.write_text('{"query": [1,0,1,0], "eps": 1, "delta": 0.1}\n{"query": [1,0,1,0], "eps": 1\n')
    subst = {"{BAD}": str(bad), "{PAPER}": str(PAPER), "{ALPHA0}": str(a0), "{BADLINES}": str(lines)}
    r = dpdesk("assess", *[subst.get(a, a) for a in args])
    assert r.returncode == 2
    assert r.stdout == ""
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in r.stderr, r.stderr
    assert needle in err[0]
