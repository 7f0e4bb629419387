"""Fingerprints, progress and cancel callbacks, and the safety of the generated SQL."""

from __future__ import annotations

import os
import shutil
import threading

import pandas as pd
import psycopg
import pytest

from dpdesk.engine.errors import Cancelled
from dpdesk.engine.schema import Schema
from dpdesk.sources import DataFrameSource, open_source
from dpdesk.sources.duck import DuckDBSource
from dpdesk.sources.postgres import redact
from dpdesk.sources.sqlgen import DUCKDB, POSTGRESQL, cube_query, quote_ident

from .conftest import TEXT_VALUES

# --- fingerprints ----------------------------------------------------------------------------------


def test_file_fingerprint_is_content_hash_with_row_count(files, table: pd.DataFrame, tmp_path) -> None:
    fp = open_source(files.parquet).fingerprint()
    assert fp.method == "sha256" and len(fp.digest) == 64 and fp.row_count == len(table) and fp.caveat is None
    copy = tmp_path / "copy.parquet"
    shutil.copy(files.parquet, copy)
    assert open_source(str(copy)).fingerprint() == fp  # the name does not matter, the content does
    assert open_source(files.csv).fingerprint().row_count == len(table)
    assert open_source(files.sqlite, table="people").fingerprint().row_count == len(table)
    assert open_source(files.xlsx).fingerprint().row_count == len(table)


def test_glob_fingerprint_follows_names_and_contents(files, tmp_path) -> None:
    src_dir = os.path.dirname(files.parquet_glob)
    a = tmp_path / "a"
    shutil.copytree(src_dir, a)
    fp = open_source(str(a / "*.parquet")).fingerprint()
    assert fp.method == "sha256-files" and fp.row_count == open_source(files.parquet).fingerprint().row_count
    b = tmp_path / "moved"
    shutil.copytree(a, b)
    assert open_source(str(b / "*.parquet")).fingerprint().digest == fp.digest  # moving the folder: same
    os.rename(b / "part-2.parquet", b / "part-9.parquet")
    assert open_source(str(b / "*.parquet")).fingerprint().digest != fp.digest  # renaming a file: different


def test_dataframe_fingerprint(table: pd.DataFrame) -> None:
    fp = DataFrameSource(table).fingerprint()
    assert fp.row_count == len(table) and fp.caveat
    changed = table.copy()
    changed.loc[0, "note"] = "changed"
    assert DataFrameSource(changed).fingerprint().digest != fp.digest


def test_postgresql_fingerprint_is_best_effort_and_detects_changes(postgres, table: pd.DataFrame) -> None:
    source = open_source(postgres.url, table="people")
    fp = source.fingerprint()
    assert fp.method == "postgresql-checksum" and fp.row_count == len(table)
    assert "best effort" in fp.caveat
    assert source.fingerprint() == fp  # deterministic
    with psycopg.connect(postgres.url, autocommit=True) as con:
        con.execute("CREATE TABLE people_copy AS SELECT * FROM people ORDER BY random()")
        assert open_source(postgres.url, table="people_copy").fingerprint().digest == fp.digest  # row order
        con.execute("UPDATE people_copy SET note = 'x' WHERE note = 'row 7'")
        assert open_source(postgres.url, table="people_copy").fingerprint().digest != fp.digest
        con.execute("DROP TABLE people_copy")


# --- progress and cancel ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["parquet", "csv", "sqlite", "xlsx"])
def test_progress_ends_at_one(kind: str, files, schema: Schema) -> None:
    seen: list[float] = []
    source = (
        open_source(files.sqlite, table="people") if kind == "sqlite" else open_source(getattr(files, kind))
    )
    source.build_cube(schema, progress=seen.append, cancelled=lambda: False)
    assert seen and seen[-1] == 1.0 and all(0.0 <= f <= 1.0 for f in seen)


@pytest.mark.parametrize("kind", ["parquet", "sqlite", "xlsx"])
def test_cancelled_before_start(kind: str, files, schema: Schema) -> None:
    source = (
        open_source(files.sqlite, table="people") if kind == "sqlite" else open_source(getattr(files, kind))
    )
    with pytest.raises(Cancelled):
        source.build_cube(schema, cancelled=lambda: True)


def _flips_once_asked(times: int):  # type: ignore[no-untyped-def]
    """A cancel check that turns True on its ``times``-th call: asked while the statement runs."""
    asked = [0]

    def cancelled() -> bool:
        asked[0] += 1
        return asked[0] >= times

    return cancelled


# Each statement below would run for hours (10¹¹ rows, 10⁹ recursion steps, an hour's sleep), so that it
# returns at all shows it was interrupted; were it not, the test would run into pytest-timeout's limit
# (pyproject.toml) and fail there. No clock is read: the check asks when it likes, and the watcher
# repeats the interrupt until the statement stops (sources.base.run_in_worker).


def test_duckdb_interrupts_a_running_query(files) -> None:
    source = DuckDBSource(files.parquet)
    seen: list[float] = []
    with source._session() as con, pytest.raises(Cancelled):
        source._run(
            con,
            "SELECT COUNT(*) AS n FROM range(100000000000) t(i) WHERE i % 7 = 3",
            (),
            seen.append,
            _flips_once_asked(3),
        )
    assert all(0.0 <= f <= 1.0 for f in seen)


def test_sqlite_interrupts_a_running_query(files, schema: Schema, monkeypatch) -> None:
    source = open_source(files.sqlite, table="people")
    slow = (
        "WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i < 1000000000) "
        "SELECT -1 AS cell, COUNT(*) AS n FROM r"
    )
    from dpdesk.sources import sqlgen

    real = sqlgen.cube_query
    monkeypatch.setattr(
        sqlgen, "cube_query", lambda *a, **k: sqlgen.CubeQuery(slow, real(*a, **k).params[:0])
    )
    # the first ask is before the statement (check_cancelled); SQLite's progress handler asks the rest
    with pytest.raises(Cancelled):
        source.build_cube(schema, cancelled=_flips_once_asked(3))


def test_postgresql_cancels_on_the_server(postgres) -> None:
    source = open_source(postgres.url, table="people")
    con = source._connect()
    try:
        with pytest.raises(Cancelled):
            source._run(con, "SELECT pg_sleep(3600)", (), _flips_once_asked(3))
        # cancelled on the server, not abandoned there: no session of the server is still asleep
        con.rollback()
        asleep = con.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' "
            "AND query = 'SELECT pg_sleep(3600)' AND pid <> pg_backend_pid()"
        ).fetchone()
        assert asleep == (0,)
    finally:
        con.close()


def test_interrupts_are_repeated_until_the_statement_stops() -> None:
    """An engine that forgets an interrupt arriving before its statement starts is interrupted again."""
    from dpdesk.sources.base import run_in_worker

    first_interrupt, running, stop = threading.Event(), threading.Event(), threading.Event()
    interrupts: list[bool] = []  # for each interrupt: was the statement running?

    def work() -> str:
        first_interrupt.wait()  # the statement starts only after the first interrupt went unheard
        running.set()
        if not stop.wait(600):
            return "ran to the end"
        raise RuntimeError("interrupted")

    def interrupt() -> None:
        interrupts.append(running.is_set())
        (stop if running.is_set() else first_interrupt).set()

    with pytest.raises(Cancelled):
        run_in_worker(work, name="test", interrupt=interrupt, cancelled=lambda: True)
    assert interrupts[0] is False and interrupts[-1] is True


def test_progress_from_a_background_thread(files, schema: Schema) -> None:
    """The GUI builds off its thread: callbacks come from the thread that called build_cube."""
    callers: set[str] = set()
    result = {}

    def work() -> None:
        result["cube"] = open_source(files.parquet).build_cube(
            schema, progress=lambda f: callers.add(threading.current_thread().name)
        )

    t = threading.Thread(target=work, name="builder")
    t.start()
    t.join()
    assert callers == {"builder"} and result["cube"].total > 0


# --- the generated SQL -----------------------------------------------------------------------------


def test_identifiers_are_quoted_and_values_are_parameters(schema: Schema) -> None:
    kinds = {a.column: ("numeric" if a.kind == "numeric" else "text") for a in schema.attributes}
    q = cube_query(schema, kinds, quote_ident('my"table'), (), POSTGRESQL)
    assert '"in""come"' in q.sql and '"select"' in q.sql and '"my""table"' in q.sql
    for v in TEXT_VALUES:
        assert v not in q.sql  # never pasted, always bound
        assert v in q.params
    assert "DROP TABLE" not in q.sql
    assert "$1" in q.sql and "?" not in q.sql
    q2 = cube_query(schema, kinds, "t", (), DUCKDB)
    assert q2.sql.count("?") == len(q2.params)


def test_show_sql_lists_parameters(files, schema: Schema) -> None:
    text = open_source(files.parquet).sql(schema)
    assert text.startswith("SELECT cell, COUNT(*)") and "GROUP BY cell" in text
    assert "-- parameters" in text and '"née"' in text


def test_password_never_in_location() -> None:
    assert (
        redact("postgresql://u:p%40ss@h:5/db?sslmode=require&password=x")
        == "postgresql://u@h:5/db?sslmode=require"
    )
    assert redact("postgresql://h/db") == "postgresql://h/db"


# --- an address-space cap --------------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("prlimit") is None, reason="needs util-linux prlimit")
def test_duckdb_builds_under_an_address_space_cap(files, table: pd.DataFrame) -> None:
    """Under ``prlimit --as`` DuckDB's threads used to crash the process (glibc arenas); dpdesk adapts."""
    import json
    import subprocess
    import sys

    from .conftest import SCHEMA_DICT

    code = (
        "import json, sys; from dpdesk.sources import open_source; from dpdesk.engine.schema import Schema; "
        "c = open_source(sys.argv[1]).build_cube(Schema.from_dict(json.loads(sys.argv[2]))); "
        "print(c.total + c.out_of_domain)"
    )
    r = subprocess.run(
        [
            "prlimit",
            f"--as={1 << 30}",
            "--",
            sys.executable,
            "-c",
            code,
            files.parquet,
            json.dumps(SCHEMA_DICT),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, (r.returncode, r.stderr[-500:])
    assert int(r.stdout.strip()) == len(table)
