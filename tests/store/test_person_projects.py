"""Projects that protect people, not rows: the privacy unit on the command line, in the project file,
on every rebuild, and on the release path (refused until release kinds are priced per person).

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
    assert "releases are refused until they are priced per person" in info.stdout
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


def test_releases_are_refused_in_one_line_and_nothing_is_recorded(tmp_path: Path, files) -> None:  # type: ignore[no-untyped-def]
    csv, schema, _ = files
    assert new(tmp_path, csv, schema, "--privacy-unit", "pid", "--max-rows", 2).returncode == 0
    path = tmp_path / "v.dpdesk"
    added = run_dpdesk("requests", "add", path, "--query", 'count(ward="A")', "--eps", 50, "--delta", 0.05)
    assert added.returncode == 0, added.stderr
    r = run_dpdesk("answer", path, "--request", "r1", "--yes")
    assert r.returncode == 2
    line = r.stderr.strip()
    assert "person-level pricing of fresh counts is not available yet" in line and "\n" not in line
    with Project.open(path) as p:
        assert p.ledger() == [] and p.request("r1").status == "pending"
    rows = run_dpdesk(
        "project", "new", tmp_path / "plain.dpdesk", "--schema", schema, "--source", csv, "--budget", 1
    )
    assert rows.returncode == 0  # one row per person: releases as before
    run_dpdesk(
        "requests",
        "add",
        tmp_path / "plain.dpdesk",
        "--query",
        'count(ward="A")',
        "--eps",
        50,
        "--delta",
        0.05,
    )
    assert run_dpdesk("answer", tmp_path / "plain.dpdesk", "--request", "r1", "--yes").returncode == 0


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
