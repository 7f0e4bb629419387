"""Fixtures for the sources tests: a generated edge-case table in every format, and a real PostgreSQL.

``postgres`` runs Debian's PostgreSQL server binaries (``initdb``, ``pg_ctl``; package ``postgresql``,
installed by ``tools/sysdeps.sh``) on a free loopback port with its data directory and unix socket in a
fresh temporary folder. As root, the server runs as the unprivileged ``postgres`` user (PostgreSQL
refuses to run as root). The server is stopped and the folder removed at the end of the session, also
when tests fail or the run is interrupted (an ``atexit`` hook backs up the fixture's finaliser).
"""

from __future__ import annotations

import atexit
import glob
import math
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpdesk.engine.schema import Schema

# --- the edge-case table ---------------------------------------------------------------------------

AGE = "age"
WORD = "select"  # a keyword as a column name
CODE = 'in"come'  # a double quote in a column name
SCORE = "Score ✓"  # unicode and a space
TEXT_VALUES = ["née", "O'Brien", 'say "hi"', "ünïcödé ✓", "plain", "'); DROP TABLE t; --"]

SCHEMA_DICT = {
    "attributes": [
        {"name": "age", "column": AGE, "kind": "numeric", "edges": [0, 18, 30.5, 65, 120]},
        {"name": "word", "column": WORD, "kind": "categorical", "values": TEXT_VALUES},
        {"name": "code", "column": CODE, "kind": "categorical", "values": [1, 2, "3"]},
        {"name": "score", "column": SCORE, "kind": "numeric", "edges": [0, 10, 20]},
    ]
}


def edge_case_frame(n_random: int = 2000, seed: int = 5) -> pd.DataFrame:
    """Values on every bin edge, on the closed last edge, just outside, NULLs, unknown categories."""
    rng = np.random.default_rng(seed)
    ages = [0, 18, 30.5, 65, 120, 120.0000001, -0.0000001, 17.999999, 30.49999, None, -5, 200, 64.9, 1e300]
    words = TEXT_VALUES + ["other", None, "NEE", "née "]
    codes = [1, 2, 3, 4, None, 0]
    scores = [0, 10, 20, 21, -1, None, 19]
    k = max(len(ages), len(words), len(codes), len(scores))
    fixed = pd.DataFrame(
        {
            AGE: [ages[i % len(ages)] for i in range(k)],
            WORD: [words[i % len(words)] for i in range(k)],
            CODE: [codes[i % len(codes)] for i in range(k)],
            SCORE: [scores[i % len(scores)] for i in range(k)],
        }
    )
    random = pd.DataFrame(
        {
            AGE: rng.choice(
                np.array(
                    [a if a is not None else np.nan for a in ages] + list(rng.uniform(-10, 130, 40)),
                    dtype=float,
                ),
                n_random,
            ),
            WORD: rng.choice(np.array(words, dtype=object), n_random),
            CODE: rng.choice(np.array(codes, dtype=object), n_random),
            SCORE: rng.choice(np.array(scores, dtype=object), n_random),
        }
    )
    df = pd.concat([fixed, random], ignore_index=True)
    df[AGE] = pd.to_numeric(df[AGE], errors="raise").astype("float64")
    df[WORD] = df[WORD].astype("string")
    df[CODE] = pd.array(
        [None if v is None or (isinstance(v, float) and math.isnan(v)) else int(v) for v in df[CODE]],
        dtype="Int64",
    )
    df[SCORE] = pd.array(
        [None if v is None or (isinstance(v, float) and math.isnan(v)) else int(v) for v in df[SCORE]],
        dtype="Int64",
    )
    df["note"] = pd.array([f"row {i}" for i in range(len(df))], dtype="string")  # a column no attribute uses
    return df


@pytest.fixture(scope="session")
def schema() -> Schema:
    return Schema.from_dict(SCHEMA_DICT)


@pytest.fixture(scope="session")
def table() -> pd.DataFrame:
    return edge_case_frame()


def _sql_rows(df: pd.DataFrame) -> list[tuple]:
    out = []
    for row in df.itertuples(index=False):
        out.append(
            tuple(
                None
                if (v is pd.NA or (isinstance(v, float) and math.isnan(v)))
                else (int(v) if isinstance(v, np.integer) else float(v) if isinstance(v, np.floating) else v)
                for v in row
            )
        )
    return out


SQL_TYPES = {AGE: "DOUBLE PRECISION", WORD: "TEXT", CODE: "BIGINT", SCORE: "INTEGER", "note": "TEXT"}


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@dataclass(frozen=True)
class Files:
    csv: str
    tsv: str
    parquet: str
    parquet_glob: str
    csv_glob: str
    sqlite: str
    xlsx: str


@pytest.fixture(scope="session")
def files(table: pd.DataFrame, tmp_path_factory: pytest.TempPathFactory) -> Files:
    import sqlite3

    d = tmp_path_factory.mktemp("sources")
    csv = d / "people.csv"
    table.to_csv(csv, index=False)
    tsv = d / "people.tsv"
    table.to_csv(tsv, index=False, sep="\t")
    parquet = d / "people.parquet"
    table.to_parquet(parquet, index=False)
    parts = d / "parts"
    parts.mkdir()
    for i, chunk in enumerate(np.array_split(np.arange(len(table)), 3)):
        table.iloc[chunk].to_parquet(parts / f"part-{i}.parquet", index=False)
        table.iloc[chunk].to_csv(parts / f"part-{i}.csv", index=False)
    db = d / "people.sqlite"
    con = sqlite3.connect(db)
    cols = ", ".join(f"{_quote(c)} {SQL_TYPES[c].replace('DOUBLE PRECISION', 'REAL')}" for c in table.columns)
    con.execute(f"CREATE TABLE people ({cols})")
    con.executemany(f"INSERT INTO people VALUES ({', '.join('?' for _ in table.columns)})", _sql_rows(table))
    con.execute(f"CREATE TABLE untyped ({', '.join(_quote(c) for c in table.columns)})")
    con.executemany(f"INSERT INTO untyped VALUES ({', '.join('?' for _ in table.columns)})", _sql_rows(table))
    con.commit()
    con.close()
    xlsx = d / "people.xlsx"
    table.to_excel(xlsx, index=False)
    return Files(
        str(csv),
        str(tsv),
        str(parquet),
        str(parts / "*.parquet"),
        str(parts / "part-*.csv"),
        str(db),
        str(xlsx),
    )


# --- a throwaway PostgreSQL server -----------------------------------------------------------------


def postgres_bindir() -> str | None:
    env = os.environ.get("DPDESK_PG_BINDIR")
    if env:
        return env
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0,
    )
    if found:
        return os.path.dirname(found[-1])
    initdb = shutil.which("initdb")
    return os.path.dirname(initdb) if initdb else None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class PostgresServer:
    port: int
    admin_url: str  # trusted superuser, loopback only
    url: str  # the test database, as the superuser
    password_user: str
    password: str
    bad_password_url: str  # the password-authenticated role with a wrong password


ADMIN = "dpdesk_admin"
DBNAME = "dpdesk_test"
PW_USER = "curator_pw"
PW = "right-password"


@pytest.fixture(scope="session")
def postgres(table: pd.DataFrame) -> PostgresServer:
    bindir = postgres_bindir()
    if not bindir or not os.path.exists(os.path.join(bindir, "pg_ctl")):
        pytest.skip("PostgreSQL server binaries not found (install Debian's 'postgresql': make sysdeps)")
    import psycopg

    run_as: list[str] = []
    base = tempfile.mkdtemp(prefix="dpdesk-pg-")
    if os.geteuid() == 0:  # PostgreSQL will not run as root: hand the folder to the postgres user
        try:
            pw = pwd.getpwnam("postgres")
        except KeyError:
            shutil.rmtree(base, ignore_errors=True)
            pytest.skip("running as root and there is no 'postgres' user to run the server as")
        os.chown(base, pw.pw_uid, pw.pw_gid)
        run_as = ["runuser", "-u", "postgres", "--"]
    data = os.path.join(base, "data")
    log = os.path.join(base, "server.log")
    pg_ctl = os.path.join(bindir, "pg_ctl")
    stopped = False

    def stop() -> None:
        nonlocal stopped
        if stopped:
            return
        stopped = True
        if os.path.exists(os.path.join(data, "postmaster.pid")):
            subprocess.run(
                [*run_as, pg_ctl, "stop", "-D", data, "-m", "immediate", "-w"],
                capture_output=True,
                timeout=60,
            )
        shutil.rmtree(base, ignore_errors=True)

    atexit.register(stop)
    try:
        subprocess.run(
            [
                *run_as,
                os.path.join(bindir, "initdb"),
                "-D",
                data,
                "-U",
                ADMIN,
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
                "--no-sync",
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
        # Loopback only: the admin is trusted (setup), everyone else must give a password (scram).
        Path(data, "pg_hba.conf").write_text(
            f"local all all trust\n"
            f"host all {ADMIN} 127.0.0.1/32 trust\n"
            f"host all all 127.0.0.1/32 scram-sha-256\n"
        )
        for attempt in range(5):
            port = free_port()
            opts = (
                f"-c listen_addresses=127.0.0.1 -p {port} -k {base} -c fsync=off "
                "-c synchronous_commit=off -c full_page_writes=off -c max_connections=20"
            )
            started = subprocess.run(
                [*run_as, pg_ctl, "start", "-D", data, "-l", log, "-w", "-t", "60", "-o", opts],
                capture_output=True,
                timeout=90,
            )
            if started.returncode == 0:
                break
        else:
            raise RuntimeError(f"PostgreSQL did not start: {Path(log).read_text(errors='replace')[-2000:]}")
        admin_url = f"postgresql://{ADMIN}@127.0.0.1:{port}/postgres"
        with psycopg.connect(admin_url, autocommit=True) as con:
            con.execute(f"CREATE DATABASE {DBNAME}")
            con.execute(f"CREATE ROLE {PW_USER} LOGIN PASSWORD '{PW}'")
        url = f"postgresql://{ADMIN}@127.0.0.1:{port}/{DBNAME}"
        with psycopg.connect(url, autocommit=True) as con:
            cols = ", ".join(f"{_quote(c)} {SQL_TYPES[c]}" for c in table.columns)
            con.execute(f"CREATE TABLE people ({cols})")
            with con.cursor().copy(
                f"COPY people ({', '.join(_quote(c) for c in table.columns)}) FROM STDIN"
            ) as cp:
                for row in _sql_rows(table):
                    cp.write_row(row)
            con.execute(f"CREATE VIEW adults AS SELECT * FROM people WHERE {_quote(AGE)} >= 18")
            con.execute("CREATE SCHEMA other")
            con.execute("CREATE TABLE other.people AS SELECT * FROM people LIMIT 10")
            con.execute(f"GRANT SELECT ON people TO {PW_USER}")
        yield PostgresServer(
            port=port,
            admin_url=admin_url,
            url=url,
            password_user=PW_USER,
            password=PW,
            bad_password_url=f"postgresql://{PW_USER}:wrong-password@127.0.0.1:{port}/{DBNAME}",
        )
    finally:
        stop()


# --- a real Spark Connect server, one per run ------------------------------------------------------


@pytest.fixture(scope="session")
def spark_connect():
    """A running ``local[2]`` Spark Connect server (``tests/sources/connect_server.py``), started once for
    the run from the pyspark package and stopped at its end; yields it (``.url`` is ``sc://127.0.0.1:P``)."""
    pytest.importorskip(
        "pyspark", reason="the Spark Connect tests need dpdesk[spark] (make test installs it)"
    )
    pytest.importorskip("grpc", reason="the Spark Connect tests need dpdesk[spark] (pyspark[connect])")
    if not shutil.which("java") and not os.environ.get("JAVA_HOME"):
        pytest.skip("the Spark Connect tests need Java 17 or later (make sysdeps installs it)")
    from .connect_server import start

    server = start()
    atexit.register(server.stop)  # also when the run is interrupted
    print(f"\nSpark Connect server on {server.url}: answered after {server.started_in:.1f} s")
    yield server
    from dpdesk.sources.spark_session import release_sessions

    release_sessions()  # this process's sessions on the server, before it goes
    server.stop()
    atexit.unregister(server.stop)
