"""``dpdesk cube`` through the command line (in this process): output formats and exit code 2 on bad input."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from cli_helpers import run_dpdesk

from dpdesk.engine.cube import build_cube
from dpdesk.engine.schema import Schema

from .conftest import SCHEMA_DICT

dpdesk = run_dpdesk


@pytest.fixture(scope="module")
def schema_file(tmp_path_factory) -> str:  # type: ignore[no-untyped-def]
    p = tmp_path_factory.mktemp("cli") / "people.schema.json"
    p.write_text(json.dumps(SCHEMA_DICT), encoding="utf-8")
    return str(p)


def test_text_output(files, schema_file: str, table: pd.DataFrame, schema: Schema) -> None:
    r = dpdesk("cube", files.parquet, "--schema", schema_file)
    assert r.returncode == 0, r.stderr
    ref = build_cube(table, schema)
    assert "shape: 4 x 6 x 3 x 2" in r.stdout
    assert f"total: {ref.total}" in r.stdout and f"out of domain: {ref.out_of_domain}" in r.stdout


def test_json_output(files, schema_file: str, table: pd.DataFrame, schema: Schema) -> None:
    r = dpdesk("cube", files.parquet_glob, "--schema", schema_file, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    ref = build_cube(table, schema)
    assert out["shape"] == [4, 6, 3, 2] and out["counts"] == ref.flat.tolist()
    assert out["total"] == ref.total and out["out_of_domain"] == ref.out_of_domain
    assert out["source"]["kind"] == "duckdb" and out["fingerprint"]["method"] == "sha256-files"
    assert out["fingerprint"]["row_count"] == len(table)


def test_postgresql_json(postgres, schema_file: str, table: pd.DataFrame, schema: Schema) -> None:
    r = dpdesk("cube", postgres.url, "--table", "people", "--schema", schema_file, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["counts"] == build_cube(table, schema).flat.tolist()
    assert out["fingerprint"]["caveat"] and out["source"]["table"] == "people"


def test_show_sql(files, schema_file: str) -> None:
    r = dpdesk("cube", files.csv, "--schema", schema_file, "--show-sql")
    assert r.returncode == 0, r.stderr
    assert "GROUP BY cell" in r.stdout and '"in""come"' in r.stdout and "-- parameters" in r.stdout


def bad(*args: str) -> str:
    r = dpdesk(*args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dpdesk: error: "), r.stderr
    assert "Traceback" not in r.stderr
    return lines[0]


def test_bad_input_exits_2_with_one_line(files, schema_file: str, tmp_path, postgres) -> None:
    assert "no such file" in bad("cube", str(tmp_path / "none.csv"), "--schema", schema_file)
    corrupt = tmp_path / "corrupt.parquet"
    corrupt.write_bytes(b"\x00" * 100)
    assert "cannot read Parquet file" in bad("cube", str(corrupt), "--schema", schema_file)
    wrong = tmp_path / "wrong.schema.json"
    wrong.write_text(
        json.dumps({"attributes": [{"name": "x", "column": "nope", "kind": "numeric", "edges": [0, 1]}]})
    )
    assert "'nope' is not in" in bad("cube", files.parquet, "--schema", str(wrong))
    text_as_number = tmp_path / "text.schema.json"
    text_as_number.write_text(
        json.dumps({"attributes": [{"name": "w", "column": "select", "kind": "numeric", "edges": [0, 1]}]})
    )
    assert "holds text" in bad("cube", files.csv, "--schema", str(text_as_number))
    assert "no such schema file" in bad("cube", files.csv, "--schema", str(tmp_path / "none.json"))
    assert "cannot connect to PostgreSQL" in bad(
        "cube", "postgresql://u@127.0.0.1:9/db", "--table", "t", "--schema", schema_file
    )
    msg = bad("cube", postgres.bad_password_url, "--table", "people", "--schema", schema_file)
    assert "password authentication failed" in msg and "wrong-password" not in msg
    assert "--table" in bad("cube", files.sqlite, "--schema", schema_file)
