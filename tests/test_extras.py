"""A source whose optional package is missing stops with one line naming the extra, exit code 2.

Each package is hidden from the import system (``sys.modules[name] = None`` makes ``import name`` fail
as if it were not installed) and the real CLI runs in-process.
"""

from __future__ import annotations

import json
import sys

import pandas as pd
import pytest

from dpdesk import cli

SCHEMA = {"attributes": [{"name": "x", "kind": "numeric", "edges": [0, 10, 20]}]}


@pytest.fixture
def paths(tmp_path):  # type: ignore[no-untyped-def]
    schema = tmp_path / "s.schema.json"
    schema.write_text(json.dumps(SCHEMA), encoding="utf-8")
    book = tmp_path / "t.xlsx"
    book.write_bytes(b"")  # never opened: the missing package is noticed first
    csv = tmp_path / "t.csv"
    pd.DataFrame({"x": [1, 12]}).to_csv(csv, index=False)
    return {"schema": str(schema), "xlsx": str(book), "csv": str(csv)}


@pytest.mark.parametrize(
    "hidden, args, expected",
    [
        (
            ["psycopg"],
            ["postgresql://me@127.0.0.1:1/db", "--table", "t"],
            "a PostgreSQL source needs the optional package 'psycopg': install it with pip install 'dpdesk[postgresql]'",
        ),
        (
            ["openpyxl"],
            ["{xlsx}"],
            "an Excel workbook needs the optional package 'openpyxl': install it with pip install 'dpdesk[excel]'",
        ),
        (
            ["pyspark", "pyspark.sql"],
            ["{csv}", "--spark", "local[2]"],
            "a Spark source needs the optional package 'pyspark': install it with pip install 'dpdesk[spark]'",
        ),
        (
            ["duckdb"],
            ["{csv}"],
            "reading CSV and Parquet files needs the Python package 'duckdb', which every install of dpdesk brings; "
            "reinstall dpdesk",
        ),
    ],
)
def test_missing_package_is_one_line_naming_the_extra(
    hidden, args, expected, paths, monkeypatch, capsys
) -> None:  # type: ignore[no-untyped-def]
    for name in hidden:
        monkeypatch.setitem(sys.modules, name, None)
    argv = ["cube", *[a.format(**paths) for a in args], "--schema", paths["schema"]]
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(f"dpdesk: error: {expected}")
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err and captured.out == ""


def test_the_same_sources_work_when_the_packages_are_there(paths, capsys) -> None:
    """The control: with nothing hidden the CSV is counted (so the test above fails for the right reason)."""
    assert cli.main(["cube", paths["csv"], "--schema", paths["schema"], "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["counts"] == [1, 1]


def test_default_install_declares_the_whole_app() -> None:
    """``pip install dpdesk`` brings the GUI, DuckDB and OpenDP; extras only add other sources."""
    import tomllib
    from pathlib import Path

    meta = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    required = {
        d.split(">")[0].split("<")[0].split("[")[0].strip().lower() for d in meta["project"]["dependencies"]
    }
    assert {"pyside6-essentials", "pyqtgraph", "duckdb", "opendp"} <= required
    extras = meta["project"]["optional-dependencies"]
    assert extras["postgresql"][0].startswith("psycopg") and extras["excel"][0].startswith("openpyxl")
    assert extras["spark"][0].startswith("pyspark")
