"""Projects that protect people, not rows: the privacy unit on the command line, in the project file,
on every rebuild, and on the release path (every kind priced per person; a batch refused).

The project file must hold the unit's declaration and nothing derived from how many rows people have:
no rows dropped, no people counted, no sums — checked byte for byte on the file and its sidecars.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_helpers import run_dpdesk

from dpdesk.engine.cube import build_cube
from dpdesk.store.binding import curator_order_key
from dpdesk.store.project import Project

SCHEMA = {
    "attributes": [
        {"name": "ward", "column": "ward", "kind": "categorical", "values": ["A", "B", "C"]},
        {"name": "age", "column": "age", "kind": "numeric", "edges": [0, 40, 120]},
    ],
    "measures": [{"name": "cost", "column": "cost", "bounds": [0, 1000], "nulls": "skip"}],
}


def visits(seed: int = 5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    per = np.minimum(rng.geometric(0.2, 613), 40)
    pid = np.repeat(np.arange(613) * 3 + 100001, per)
    n = pid.size
    return pd.DataFrame(
        {
            "pid": pid,
            "ward": rng.choice(["A", "B", "C", "Z"], n, p=[0.4, 0.3, 0.25, 0.05]),
            "age": rng.uniform(0, 119, n).round(1),
            "cost": rng.uniform(-100, 1500, n).round(2),
        }
    )


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path, pd.DataFrame]:
    df = visits()
    csv = tmp_path / "visits.csv"
    df.to_csv(csv, index=False)
    schema = tmp_path / "visits.schema.json"
    schema.write_text(json.dumps(SCHEMA))
    return csv, schema, df


def new(tmp_path: Path, csv: Path, schema: Path, *extra: object):  # type: ignore[no-untyped-def]
    return run_dpdesk(
        "project", "new", tmp_path / "v.dpdesk", "--schema", schema, "--source", csv, "--budget", 1, *extra
    )


def test_a_person_level_project_is_declared_stored_and_shown(tmp_path: Path, files) -> None:  # type: ignore[no-untyped-def]
    csv, schema, df = files
    r = new(tmp_path, csv, schema, "--privacy-unit", "pid", "--max-rows", 3, "--one-row-per-cell")
    assert r.returncode == 0, r.stderr
    info = run_dpdesk("project", "info", tmp_path / "v.dpdesk")
    assert (
        "privacy unit: rows with the same pid are one person (at most 3 rows per person, at most one per cell)"
        in info.stdout
    )
    assert "one person's privacy loss is the sum of the 3 largest cells' (one row per cell)" in info.stdout
    assert "measure cost: values clamped to [0, 1000], missing values skipped" in info.stdout
    as_json = json.loads(run_dpdesk("project", "info", tmp_path / "v.dpdesk", "--json").stdout)
    assert as_json["privacy_unit"] == {"column": "pid", "max_rows": 3, "one_row_per": "cell"}
    assert as_json["neighbour_model"].startswith("add/remove one person: rows with the same pid")
    with Project.open(tmp_path / "v.dpdesk") as p:
        assert p.schema.unit.max_rows == 3 and p.schema.unit.one_row_per_cell
        assert p.binding_problem() is None  # rebuilt in the same keyed order: the same cube
        cube = p.cube()
        want = build_cube(pd.read_csv(csv, dtype={"pid": str}), p.schema, order_key=curator_order_key())
        np.testing.assert_array_equal(cube.counts, want.counts)
        np.testing.assert_array_equal(cube.measure("cost").sums, want.measure("cost").sums)
        per = (
            df[df.ward != "Z"]
            .groupby("pid")
            .apply(lambda g: min(3, g.ward.nunique() * 2), include_groups=False)
        )
        assert cube.total <= int(per.sum()) and cube.truncation.rows_dropped > 0


def test_releases_are_priced_per_person_end_to_end(tmp_path: Path, files) -> None:  # type: ignore[no-untyped-def]
    """A count, an argmax, a posterior and a batch on a project of people with up to 3 rows each: each
    charges its per-row α on its cells, the system cost is 3 × the largest cell's, verify recomputes it;
    with one row per cell a batch is refused in one line."""
    csv, schema, _ = files
    assert (
        new(tmp_path, csv, schema, "--privacy-unit", "pid", "--max-rows", 3, "--test-project").returncode == 0
    )
    path = tmp_path / "v.dpdesk"
    for q, opts in (
        ('count(ward="A")', ("--eps", 50, "--delta", 0.05)),
        ("argmax(ward)", ("--alpha", 0.05)),
        ("posterior(ward; prior=1)", ("--alpha", 0.05)),
        ('count(ward="B")', ("--eps", 50, "--delta", 0.05)),
    ):
        added = run_dpdesk("requests", "add", path, "--query", q, *opts)
        assert added.returncode == 0, added.stderr
    r = run_dpdesk("answer", path, "--request", "r1", "--yes")
    assert r.returncode == 0, r.stderr
    assert "the system cost, one person's privacy loss ε, is 3 × the largest cell's" in r.stdout
    with Project.open(path) as p:
        alpha = float(p.ledger()[0].payload["alpha"])
        view = p.view()
        assert view.system_cost == 3 * float(view.cell_costs.max()) == pytest.approx(3 * alpha, rel=1e-12)
    info = run_dpdesk("project", "info", path)
    assert "one person's privacy loss is 3 × the largest cell's" in info.stdout
    for rid in ("r2", "r3"):
        done = run_dpdesk("answer", path, "--request", rid, "--yes")
        assert done.returncode == 0, done.stderr
    with Project.open(path) as p:
        costs = p.view().cell_costs
        assert p.view().system_cost == 3 * float(costs.max())
        assert p.view().cost_curve()[-1][1] == p.view().system_cost
    verified = run_dpdesk("verify", path)
    assert verified.returncode == 0 and "OK" in verified.stdout, verified.stdout + verified.stderr
    # a batch: planned against a cell's room per row (total / 3), its figures one person's loss
    run_dpdesk(
        "requests", "add", path, "--query", 'count(ward="B", age="0-40")', "--eps", 60, "--delta", 0.05
    )
    planned = run_dpdesk("batch", "plan", path, "--json")
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(planned.stdout)
    with Project.open(path) as p:
        before = p.view().system_cost
    assert plan["total_budget"] == 1 and plan["system_cost"] == pytest.approx(before, rel=1e-12)
    done = run_dpdesk("batch", "answer", path, "--yes")
    assert done.returncode == 0, done.stderr + done.stdout
    with Project.open(path) as p:
        view = p.view()
        assert view.system_cost == 3 * float(view.cell_costs.max()) <= 1 + 1e-12
        assert view.system_cost == pytest.approx(plan["system_cost_after"], rel=1e-9)
        assert p.request("r4").status == "answered"
    assert run_dpdesk("verify", path).returncode == 0
    # one row per cell: a person's loss is the sum of the 3 largest cells', which the batch planner does
    # not price yet: refused in one line, nothing planned
    grouped = tmp_path / "g.dpdesk"
    made = run_dpdesk(
        "project",
        "new",
        grouped,
        "--schema",
        schema,
        "--source",
        csv,
        "--budget",
        1,
        "--privacy-unit",
        "pid",
        "--max-rows",
        3,
        "--one-row-per-cell",
    )
    assert made.returncode == 0, made.stderr
    run_dpdesk("requests", "add", grouped, "--query", 'count(ward="A")', "--eps", 50, "--delta", 0.05)
    batch = run_dpdesk("batch", "plan", grouped)
    assert batch.returncode == 2
    line = batch.stderr.strip()
    assert "batch measurements are not priced per person yet" in line and "\n" not in line


def test_the_hard_stop_is_per_person(tmp_path: Path, files) -> None:  # type: ignore[no-untyped-def]
    """A release that fits per row but not per person is refused (preview and release path alike)."""
    csv, schema, _ = files
    assert new(tmp_path, csv, schema, "--privacy-unit", "pid", "--max-rows", 40).returncode == 0
    path = tmp_path / "v.dpdesk"
    run_dpdesk("requests", "add", path, "--query", 'count(ward="A")', "--eps", 20, "--delta", 0.05)
    r = run_dpdesk("answer", path, "--request", "r1", "--yes")  # α ≈ 0.15 per row: 6 per person > 1
    assert r.returncode != 0
    assert "NOT releasable" in r.stdout or "cannot answer" in r.stdout, r.stdout
    with Project.open(path) as p:
        assert p.ledger() == [] and p.request("r1").status == "pending"


def test_nothing_about_people_reaches_the_project_file(tmp_path: Path, files) -> None:  # type: ignore[no-untyped-def]
    csv, schema, df = files
    assert new(tmp_path, csv, schema, "--privacy-unit", "pid", "--max-rows", 2).returncode == 0
    with Project.open(tmp_path / "v.dpdesk", "w") as p:
        cube = p.cube()
        p.rebind()  # a ledger entry of its own: still nothing derived
    t = cube.truncation
    c = pd.Series(df.groupby("pid").size())
    private = {
        t.rows_dropped,
        t.rows_kept,
        t.people,
        t.people_over_limit,
        cube.total,
        cube.out_of_domain,
        len(df),
        int(c.max()),
        int((c > 2).sum()),
    }
    private = {v for v in private if v > 99}  # short numbers occur anyway (dates, counts of cells)
    assert len(private) >= 5
    sums = cube.measure("cost").flat_sums
    texts = (
        [str(v) for v in sorted(private)] + [repr(float(s)) for s in sums if s] + [f"{float(sums.sum()):.6g}"]
    )
    stored = b"".join(f.read_bytes() for f in tmp_path.iterdir() if f.name.startswith("v.dpdesk"))
    assert b'"max_rows":2' in stored  # the declaration is there ...
    for text in texts:  # ... as a number on its own (not inside a hex digest or a timestamp): none of these
        assert (
            re.search(rb"(?<![0-9A-Za-z.+-])" + re.escape(text.encode()) + rb"(?![0-9])", stored) is None
        ), text


def test_the_cube_needs_the_key_that_bound_it(tmp_path: Path, files) -> None:  # type: ignore[no-untyped-def]
    csv, schema, _ = files
    assert new(tmp_path, csv, schema, "--privacy-unit", "pid", "--max-rows", 2).returncode == 0
    elsewhere = {"DPDESK_DATA_DIR": str(tmp_path / "another-machine")}
    r = run_dpdesk("project", "info", tmp_path / "v.dpdesk", env=elsewhere)
    assert r.returncode == 0 and "which this machine does not have" in r.stdout


def test_project_new_options_are_checked(tmp_path: Path, files) -> None:  # type: ignore[no-untyped-def]
    csv, schema, _ = files
    for extra, message in [
        (("--max-rows", 2), "--max-rows and --one-row-per-cell need --privacy-unit COLUMN"),
        (("--privacy-unit", "pid"), "--privacy-unit needs --max-rows K"),
        (("--privacy-unit", "pid", "--max-rows", 0), "--max-rows: must be between 1"),
        (("--privacy-unit", "patient", "--max-rows", 2), "has no column 'patient'"),
    ]:
        r = new(tmp_path, csv, schema, *extra)
        assert r.returncode == 2 and message in r.stderr and r.stderr.count("\n") == 1, (extra, r.stderr)
        assert not (tmp_path / "v.dpdesk").exists()
    both = tmp_path / "both.schema.json"
    both.write_text(json.dumps({**SCHEMA, "privacy_unit": {"column": "pid", "max_rows": 4}}))
    r = new(tmp_path, csv, both, "--privacy-unit", "pid", "--max-rows", 2)
    assert r.returncode == 2 and "give it there or with --privacy-unit, not both" in r.stderr


def test_cube_command_shows_people_and_the_statement(tmp_path: Path, files) -> None:  # type: ignore[no-untyped-def]
    csv, schema, df = files
    unit = tmp_path / "unit.schema.json"
    unit.write_text(json.dumps({**SCHEMA, "privacy_unit": {"column": "pid", "max_rows": 2}}))
    r = run_dpdesk("cube", csv, "--schema", unit)
    assert r.returncode == 0, r.stderr
    assert "truncation dropped" in r.stdout and "people over the limit of 2" in r.stdout
    assert "measure cost: sum" in r.stdout
    out = json.loads(run_dpdesk("cube", csv, "--schema", unit, "--json").stdout)
    assert out["truncation"]["max_rows"] == 2 and len(out["measures"][0]["sums"]) == 6
    shown = run_dpdesk("cube", csv, "--schema", unit, "--show-sql").stdout
    assert (
        "ROW_NUMBER() OVER (PARTITION BY person" in shown
        and "(a constant of the keyed order, not shown)" in shown
    )
    per = run_dpdesk("cube", csv, "--schema", schema, "--rows-per-person", "pid")
    assert per.returncode == 0 and "--max-rows" in per.stdout and "private" in per.stdout
    inside = df[df.ward != "Z"]
    assert (
        f"{inside.pid.nunique()} people; at most {int(inside.groupby('pid').size().max())} rows each"
        in per.stdout
    )


def test_a_changed_measure_value_is_noticed(tmp_path: Path, files) -> None:  # type: ignore[no-untyped-def]
    csv, schema, df = files
    assert new(tmp_path, csv, schema).returncode == 0
    changed = df.copy()
    changed.loc[changed.cost.between(10, 900).idxmax(), "cost"] += 1.0  # counts unchanged, one sum moves
    changed.to_csv(csv, index=False)
    os.utime(csv)
    with Project.open(tmp_path / "v.dpdesk") as p:
        assert "changed since it was bound" in (p.binding_problem() or "")


def test_a_zcdp_project_of_people_adds_rho_as_group_privacy(tmp_path: Path, files) -> None:  # type: ignore[no-untyped-def]
    """Under zCDP a person's k rows in one cell cost k² × that cell's ρ (docs/person-level.md, Theorem 2′):
    the view's system cost, the hard stop and verify use it."""
    csv, schema, _ = files
    made = new(
        tmp_path,
        csv,
        schema,
        "--accounting",
        "zcdp",
        "--delta",
        1e-6,
        "--privacy-unit",
        "pid",
        "--max-rows",
        3,
        "--test-project",
    )
    assert made.returncode == 0, made.stderr
    path = tmp_path / "v.dpdesk"
    run_dpdesk("requests", "add", path, "--query", 'count(ward="A")', "--eps", 80, "--delta", 0.05)
    r = run_dpdesk("answer", path, "--request", "r1", "--yes")
    assert r.returncode == 0, r.stderr + r.stdout
    with Project.open(path) as p:
        view = p.view()
        rho = view.cell_costs  # per-cell ρ
        assert view.system_cost == pytest.approx(9 * float(rho.max()), rel=1e-12)
        assert view.system_cost <= p.answering_settings().total_budget
    assert run_dpdesk("verify", path).returncode == 0
