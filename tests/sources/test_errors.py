"""Bad input gives one-line SourceErrors that name the cause (and a closed port, a wrong password)."""

from __future__ import annotations

import socket

import pytest

from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.schema import Schema
from dpdesk.sources import SourceError, is_sqlite_file, open_source
from dpdesk.sources.sqlite_source import table_names

from .conftest import SCHEMA_DICT, WORD


def one_line_error(fn, *match: str) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(SourceError) as info:
        fn()
    msg = str(info.value)
    assert "\n" not in msg and msg.strip() == msg and msg
    assert isinstance(info.value, DpdeskError)
    for m in match:
        assert m in msg, (m, msg)
    return msg


@pytest.mark.parametrize("name", ["missing.csv", "missing.parquet", "missing.xlsx", "missing.sqlite"])
def test_missing_file(tmp_path, name: str) -> None:
    one_line_error(
        lambda: open_source(str(tmp_path / name), table="t" if name.endswith("sqlite") else None),
        "no such file",
        name,
    )


def test_glob_matching_nothing(tmp_path) -> None:
    one_line_error(lambda: open_source(str(tmp_path / "*.parquet")), "no files match")


def test_unknown_file_type(tmp_path) -> None:
    p = tmp_path / "x.json"
    p.write_text("{}")
    one_line_error(lambda: open_source(str(p)), "unknown source type")


def test_corrupt_parquet(tmp_path, schema: Schema) -> None:
    p = tmp_path / "bad.parquet"
    p.write_bytes(b"this is not parquet at all" * 10)
    one_line_error(lambda: open_source(str(p)).build_cube(schema), "cannot read Parquet file", "bad.parquet")


def test_truncated_parquet(tmp_path, files, schema: Schema) -> None:
    data = open(files.parquet, "rb").read()
    p = tmp_path / "cut.parquet"
    p.write_bytes(data[: len(data) // 2])
    one_line_error(lambda: open_source(str(p)).build_cube(schema), "cannot read Parquet file")


def test_corrupt_excel_and_sqlite(tmp_path, schema: Schema) -> None:
    x = tmp_path / "bad.xlsx"
    x.write_bytes(b"PK not really a zip")
    one_line_error(lambda: open_source(str(x)).build_cube(schema), "cannot read Excel file")
    s = tmp_path / "bad.sqlite"
    s.write_bytes(b"not a database" * 100)
    one_line_error(lambda: open_source(str(s), table="t").build_cube(schema), "bad.sqlite")
    one_line_error(
        lambda: table_names(str(s)), "cannot read SQLite file", "bad.sqlite"
    )  # the app's table chooser


def test_late_non_number_in_csv_numeric_column(tmp_path) -> None:
    """A CSV value far past DuckDB's type-sniffing sample that is not a number: named, not a traceback."""
    p = tmp_path / "late.csv"
    p.write_text("x\n" + "1\n" * 30000 + "oops\n")
    s = Schema.from_dict({"attributes": [{"name": "x", "kind": "numeric", "edges": [0, 5]}]})
    one_line_error(lambda: open_source(str(p)).build_cube(s), "cannot read file", "late.csv")


def _sources(files, postgres=None):  # type: ignore[no-untyped-def]
    out = {
        "csv": lambda: open_source(files.csv),
        "parquet": lambda: open_source(files.parquet),
        "parquet_glob": lambda: open_source(files.parquet_glob),
        "sqlite": lambda: open_source(files.sqlite, table="people"),
        "xlsx": lambda: open_source(files.xlsx),
    }
    if postgres is not None:
        out["postgresql"] = lambda: open_source(postgres.url, table="people")
    return out


SOURCE_KINDS = ["csv", "parquet", "parquet_glob", "sqlite", "xlsx", "postgresql"]


@pytest.fixture
def make_source(request, files):  # type: ignore[no-untyped-def]
    def make(kind: str):  # type: ignore[no-untyped-def]
        pg = request.getfixturevalue("postgres") if kind == "postgresql" else None
        return _sources(files, pg)[kind]()

    return make


@pytest.mark.parametrize("kind", SOURCE_KINDS)
def test_schema_column_not_in_table(kind: str, make_source) -> None:
    bad = {"attributes": [dict(SCHEMA_DICT["attributes"][0], column="agee")]}
    msg = one_line_error(
        lambda: make_source(kind).build_cube(Schema.from_dict(bad)), "'agee'", "not in", "'note'"
    )
    assert "'select'" in msg  # the available columns are listed


@pytest.mark.parametrize("kind", SOURCE_KINDS)
def test_numeric_attribute_on_text_column(kind: str, make_source) -> None:
    bad = {"attributes": [{"name": "word", "column": WORD, "kind": "numeric", "edges": [0, 1]}]}
    one_line_error(lambda: make_source(kind).build_cube(Schema.from_dict(bad)), "'word' is numeric", "text")


def test_missing_table(files, postgres, schema: Schema) -> None:
    one_line_error(
        lambda: open_source(files.sqlite, table="nope").build_cube(schema),
        "no table or view 'nope'",
        "'people'",
    )
    one_line_error(
        lambda: open_source(postgres.url, table="nope").build_cube(schema),
        "no table or view 'nope'",
        "'people'",
    )


def test_the_table_chooser_lists_the_tables_of_a_database(files) -> None:
    assert is_sqlite_file(files.sqlite) and "people" in table_names(files.sqlite)


def test_table_required_for_databases(files) -> None:
    one_line_error(lambda: open_source(files.sqlite), "--table")
    one_line_error(lambda: open_source("postgresql://u@127.0.0.1:1/db"), "--table")
    one_line_error(lambda: open_source(files.csv, table="people"), "--table")


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens once the socket is closed


def test_unreachable_server(schema: Schema) -> None:
    port = closed_port()
    url = f"postgresql://someone:secret@127.0.0.1:{port}/db"
    msg = one_line_error(
        lambda: open_source(url, table="t").build_cube(schema),
        "cannot connect to PostgreSQL",
        f"127.0.0.1:{port}",
    )
    assert "secret" not in msg


def test_bad_credentials(postgres, schema: Schema) -> None:
    msg = one_line_error(
        lambda: open_source(postgres.bad_password_url, table="people").build_cube(schema),
        "refused user 'curator_pw'",
        "password authentication failed",
    )
    assert "wrong-password" not in msg


def test_good_credentials_and_read_only(postgres, schema: Schema, table) -> None:  # type: ignore[no-untyped-def]
    url = f"postgresql://{postgres.password_user}:{postgres.password}@127.0.0.1:{postgres.port}/dpdesk_test"
    source = open_source(url, table="people")
    assert postgres.password not in source.location and "curator_pw@" in source.location
    assert source.build_cube(schema).total > 0
    con = source._connect()
    try:
        assert con.read_only
    finally:
        con.close()
