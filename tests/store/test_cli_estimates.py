"""Zero-cost estimates and synthetic tables through the one release path, on real project files, in process."""

from __future__ import annotations

import csv
import hashlib
import json
import shutil

import numpy as np
import pytest

from dpdesk.engine.mechanisms.noise import SeededSampler
from dpdesk.engine.queries.text import parse_query
from dpdesk.store import Project

# the store fixture's table: age 0-30 / 30-150 by income <=50K / >50K
ESTIMABLE = 'estimate(count(age="0-30"))'


def _with_marginals(store, name="p.dpdesk"):
    """A project whose ledger holds one partition release of the two 1-way marginals (α = 1)."""
    from dpdesk.engine.partition.guarantee import preview
    from dpdesk.engine.partition.plan import marginals_plan
    from dpdesk.engine.partition.release_plan import PartitionReleasePlan

    path = store.new_project(name, budget=2.0, test_project=True)
    with Project.open(path, "w") as p:
        pv = preview(
            marginals_plan(p.schema, [("age",), ("income",)]),
            alpha=1.0,
            total_budget=2.0,
            cell_costs=p.view().cell_costs,
        )
        p.release(PartitionReleasePlan(pv, p.basis()), SeededSampler(5))
    return path


def test_estimate_preview_at_infinite_tau_is_histories_unbiased_answer_and_records_nothing(store):
    path = _with_marginals(store)
    before = store.digest(path)
    r = store.cli("assess", path, "--query", ESTIMABLE, "--tau", "inf", "--json")
    assert r.returncode == 0, r.stderr
    obj = json.loads(r.stdout)
    with Project.open(path) as p:
        blue = p.history().estimate(parse_query('count(age="0-30")', p.schema))
    assert blue.estimable and obj["unbiased_estimable"]
    assert obj["estimate"] == pytest.approx(blue.estimate, rel=1e-9) and obj["biased"] is False
    assert obj["alpha"] == 0.0 and obj["kind"] == "estimate" and obj["history_prefix"] == 4
    assert obj["prior_attributes"] == ["age", "income"]  # both marginals are released
    assert store.digest(path) == before  # a preview writes nothing


def test_answering_an_estimate_records_a_free_entry_that_verify_accepts(store):
    path = _with_marginals(store)
    with Project.open(path) as p:
        costs = p.view().cell_costs.tolist()
    shown = store.cli("assess", path, "--query", 'estimate(count(age="0-30", income=">50K"))', "--tau", "3")
    assert shown.returncode == 0 and "BIASED — it meets no accuracy requirement" in shown.stdout
    assert "nothing was recorded" in shown.stdout
    r = store.cli(
        "answer",
        path,
        "--query",
        'estimate(count(age="0-30", income=">50K"))',
        "--tau",
        "3",
        "--yes",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    value = out["assessment"]["estimate"]
    assert (
        f"estimate {value:.6g} at shrinkage τ = 3 (given)" in shown.stdout
    )  # recorded exactly what was shown
    assert out["release"]["kind"] == "estimate" and out["release"]["values"] == [value]
    with Project.open(path) as p:
        e = p.ledger()[-1]
        assert e.kind == "estimate" and e.payload["mechanism"] == "shrinkage-estimate"
        assert len(e.payload["charge"]["terms"]) == 0 and e.payload["tau"] == 3.0
        assert p.view().cell_costs.tolist() == costs  # free
        report = p.verify(extends=[out["release"]["ledger_head"]])
    assert report.ok, report.problems
    assert dict(report.kinds) == {"partition": 1, "estimate": 1}


def test_estimate_refuses_bad_input_in_one_line_and_records_nothing(store):
    empty = store.new_project("empty.dpdesk")
    r = store.cli("answer", empty, "--query", ESTIMABLE, "--tau", "1", "--yes")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "no released answers yet" in r.stderr
    path = _with_marginals(store)
    before = store.digest(path)
    for args, message in (
        (("--query", 'estimate(count(age="9"))'), "attribute 'age' has no label '9'"),
        (("--query", "estimate()"), "estimate(...) takes one count query"),
        (("--query", ESTIMABLE, "--tau", "-1"), "tau (-1.0) must be a positive number"),
        (("--query", ESTIMABLE), "needs at least 10 released answers"),
    ):
        r = store.cli("answer", path, *args, "--yes")
        assert r.returncode == 2 and message in r.stderr and r.stderr.count("\n") == 1, (args, r.stderr)
    r = store.cli("answer", path, "--query", ESTIMABLE, "--tau", "1", input="")  # end of input: not confirmed
    assert r.returncode == 1 and "not recorded (not confirmed)" in r.stderr
    assert store.digest(path) == before


def _codes(csv_path, schema):
    with open(csv_path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == list(schema.names)
    return np.array(
        [[schema.attributes[d].labels.index(v) for d, v in enumerate(r)] for r in rows[1:]], dtype=np.int64
    )


def test_synthetic_export_reads_nothing_but_released_answers(store):
    """Built again after the table is deleted, the export is the same rows: nothing in it comes from the data."""
    path = _with_marginals(store)
    twin = store.dir / "twin.dpdesk"
    shutil.copy(path, twin)  # the same ledger; its table is still there
    args = ("--rows", "300", "--seed", "7", "--tau", "0.1", "--yes", "--json")
    # the twin is another curator's copy: its receipts are kept on another machine (store/receipts.py)
    first = store.cli(
        "synth",
        twin,
        "--out",
        store.dir / "a.csv",
        *args,
        env={"DPDESK_RECEIPTS_DIR": str(store.dir / "twin")},
    )
    assert first.returncode == 0, first.stderr
    store.table.unlink()
    with Project.open(path) as p:
        assert p.binding_problem() is not None  # the data is gone
    r = store.cli("synth", path, "--out", store.dir / "b.csv", "--report", store.dir / "fit.csv", *args)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert (store.dir / "a.csv").read_bytes() == (store.dir / "b.csv").read_bytes()
    with Project.open(path) as p:
        schema, e = p.schema, p.ledger()[-1]
        codes = _codes(store.dir / "b.csv", schema)
        assert codes.shape == (300, 2)
        # the recorded digest is the exported rows' (an auditor re-checks a file against the ledger)
        assert (
            e.kind == "synthetic" and e.payload["rows_sha256"] == hashlib.sha256(codes.tobytes()).hexdigest()
        )
        assert len(e.payload["charge"]["terms"]) == 0 and e.payload["seed"] == 7 and e.payload["rows"] == 300
        assert p.view().cell_costs.tolist() == [1.0] * 4  # the marginals' charge only
        report = p.verify()
        released = [r.answer for r in p.history().rows]
    assert report.ok, report.problems
    with open(store.dir / "fit.csv", newline="", encoding="utf-8") as fh:
        fit = list(csv.DictReader(fh))
    assert [float(row["released"]) for row in fit] == pytest.approx(released, rel=1e-5)
    # the table's answer to each released marginal cell, scaled to the table size, is in the report
    n = out["plan"]["table_size"]
    first_age = float(np.sum(codes[:, 0] == 0)) * n / 300
    assert float(fit[0]["synthetic"]) == pytest.approx(first_age, rel=1e-5)


def test_synth_refuses_bad_input_and_writes_nothing_unconfirmed(store):
    path = _with_marginals(store)
    before = store.digest(path)
    for args, message in (
        (("--rows", "0", "--out", store.dir / "s.csv"), "rows (0) must be a positive whole number"),
        (("--rows", "5", "--out", store.dir / "s.txt"), "written as .csv or .parquet"),
        (("--rows", "5", "--out", store.dir / "nope" / "s.csv"), "does not exist"),
    ):
        r = store.cli("synth", path, *args, "--tau", "0.1", "--yes")
        assert r.returncode == 2 and message in r.stderr and r.stderr.count("\n") == 1, r.stderr
    r = store.cli("synth", path, "--rows", "5", "--out", store.dir / "s.csv", "--tau", "0.1", input="")
    assert r.returncode == 1 and "not exported (not confirmed)" in r.stderr
    assert not (store.dir / "s.csv").exists() and store.digest(path) == before


def test_verify_recomputes_a_recorded_estimate_from_the_answers_before_it(store):
    from dataclasses import replace

    from dpdesk.engine.kinds.base import AdHoc

    asked = AdHoc("estimate", 'estimate(count(age="30-150", income="<=50K"))')
    path = _with_marginals(store)
    with Project.open(path, "w") as p:
        honest = p.plan(asked, tau=2.0)
        p.release(honest)
        assert p.verify().ok
        wrong = p.plan(asked, tau=2.0)
        p.release(replace(wrong, estimate=replace(wrong.estimate, value=wrong.value + 1.0)))
        report = p.verify()
    assert not report.ok and len(report.problems) == 1
    assert report.problems[0].startswith(
        f"entry 3: recorded estimate {honest.value + 1:.6g} but the released answers "
        f"before it give {honest.value:.6g} at τ = 2"
    )


def test_without_released_marginals_the_prior_is_uniform_and_their_priced_release_is_offered(store):
    path = store.new_project(budget=2.0, test_project=True)
    with Project.open(path, "w") as p:
        r = p.add_request('count(age="0-30", income=">50K")', 20.0, 0.1)
        assert p.release(p.assess(r.id), SeededSampler(1)).kind == "fresh"
    out = store.cli("assess", path, "--query", 'estimate(count(income=">50K"))', "--tau", "10")
    assert out.returncode == 0, out.stderr
    assert "prior p0: uniform — history determines no 1-way marginal" in out.stdout
    assert "dpdesk release publish PROJECT --marginals 1 --alpha A" in out.stdout


def test_assessing_a_request_history_cannot_estimate_offers_the_zero_cost_estimate(store):
    path = store.new_project(budget=2.0, test_project=True)
    with Project.open(path, "w") as p:
        r = p.add_request('count(age="0-30", income=">50K")', 20.0, 0.1)
        p.release(p.assess(r.id), SeededSampler(1))
        other = p.add_request('count(income=">50K")', 20.0, 0.1)
    out = store.cli("assess", path, "--request", other.id)
    assert out.returncode == 0, out.stderr
    assert "not estimable from the 1 released answers" in out.stdout
    hint = "dpdesk assess PROJECT --query 'estimate(count(income=\">50K\"))'"
    assert hint in out.stdout
    follow = store.cli("assess", path, "--query", 'estimate(count(income=">50K"))', "--tau", "10")
    assert follow.returncode == 0 and "BIASED" in follow.stdout  # the offered command works as printed


def test_the_synthetic_table_as_parquet_holds_the_same_rows_as_the_csv(store):
    import duckdb

    path = _with_marginals(store)
    args = ("--rows", "50", "--seed", "2", "--tau", "0.1", "--yes")
    assert store.cli("synth", path, "--out", store.dir / "t.csv", *args).returncode == 0
    assert store.cli("synth", path, "--out", store.dir / "t.parquet", *args).returncode == 0
    with open(store.dir / "t.csv", newline="", encoding="utf-8") as fh:
        rows = [tuple(r) for r in csv.reader(fh)]
    con = duckdb.connect()
    try:
        got = con.execute("SELECT * FROM read_parquet(?)", [str(store.dir / "t.parquet")]).fetchall()
        names = [d[0] for d in con.description]
    finally:
        con.close()
    assert tuple(names) == rows[0] and got == rows[1:]
    assert not list(store.dir.glob("*.part"))  # written atomically: no staging file left


def test_at_infinite_tau_a_query_history_does_not_determine_is_still_labelled_biased(store):
    path = store.new_project(budget=2.0, test_project=True)
    with Project.open(path, "w") as p:
        r = p.add_request('count(age="0-30", income=">50K")', 20.0, 0.1)
        p.release(p.assess(r.id), SeededSampler(1))
    out = store.cli(
        "assess",
        path,
        "--query",
        'estimate(count(income=">50K"))',
        "--tau",
        "inf",
        "--table-size",
        "61",
        "--json",
    )
    obj = json.loads(out.stdout)
    assert obj["biased"] is True and obj["unbiased_estimable"] is False and obj["distance"] > 0.1
    text = store.cli(
        "assess", path, "--query", 'estimate(count(income=">50K"))', "--tau", "inf", "--table-size", "61"
    ).stdout
    assert "at shrinkage τ = ∞ (given); BIASED" in text
