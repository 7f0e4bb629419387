"""People, not rows, where the data lives: truncated cubes and measure sums on every engine.

One visits-style table (people with 1 to 60 rows, integer and text identifiers, missing identifiers,
values out of domain, measures with NULL, NaN, ±inf and values beyond their bounds) is built into cubes
by DuckDB (Parquet and CSV), SQLite, a real PostgreSQL server and a real local Spark; every cube — counts,
out-of-domain count, measure sums (exactly, to the bit), values summed, and what truncation dropped —
must equal the pandas reference's (itself checked against a pure-Python reference in
tests/test_person_cube.py). So must the rows-per-person distribution the curator reads to choose k.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest

from dpdesk.engine.contributions import contributions
from dpdesk.engine.cube import Cube, build_cube
from dpdesk.engine.schema import Schema
from dpdesk.engine.truncation import OrderKey
from dpdesk.sources import SourceError, open_source, sqlbounds

KEY = OrderKey.from_secret(b"the curator's key, 32 bytes long")
MASTER = "spark://local[2]"

ATTRIBUTES = [
    {"name": "ward", "column": "ward", "kind": "categorical", "values": ["A", "B", "C", "D"]},
    {"name": "age", "column": "age", "kind": "numeric", "edges": [0, 18, 65, 120]},
]
COST = {"name": "cost", "column": "cost", "bounds": [-50, 5000.75], "nulls": "skip"}
HOURS = {"name": "hours", "column": "hours", "bounds": [0, 12], "nulls": "replace", "null_value": 2.5}
SCHEMAS = {
    "k3-pid": {"privacy_unit": {"column": "pid", "max_rows": 3}, "measures": [COST, HOURS]},
    "cell-pcode": {
        "privacy_unit": {"column": "pcode", "max_rows": 2, "one_row_per": "cell"},
        "measures": [COST],
    },
    "age-pcode": {
        "privacy_unit": {"column": "pcode", "max_rows": 2, "one_row_per": ["age"]},
        "measures": [HOURS],
    },
    "rows": {"measures": [COST, HOURS]},
}


def schema_of(name: str) -> Schema:
    return Schema.from_dict({"attributes": ATTRIBUTES, **SCHEMAS[name]})


def visits(people: int = 400, seed: int = 11) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    per = np.minimum(rng.geometric(0.18, people), 60)
    per[0] = 60  # one person far over every bound
    pid = np.repeat(np.arange(people, dtype=np.int64) * 13 - 200, per)
    pid[pid == -200 + 13 * 5] = 2 * 10**18 + 7  # beyond 10^18: numbered by its text on every engine
    n = pid.size
    codes = np.array([f"P{i:04d}" for i in range(people)] + ["17", "007", "-3", "ünï", "x y"], dtype=object)
    pcode = codes[np.repeat(np.arange(people) % codes.size, per)]
    df = pd.DataFrame(
        {
            "pid": pd.array(pid, dtype="Int64"),
            "pcode": pd.array(pcode, dtype="string"),
            "ward": pd.array(
                rng.choice(["A", "B", "C", "D", "E"], n, p=[0.3, 0.3, 0.2, 0.15, 0.05]), dtype="string"
            ),
            "age": rng.choice([5.0, 17.99, 18.0, 40.0, 64.5, 65.0, 90.0, 120.0, 121.0], n),
            "cost": np.round(rng.normal(800, 1500, n), 2),
            "hours": np.round(rng.uniform(-2, 14, n), 3),
        }
    )
    df.loc[rng.random(n) < 0.02, "pid"] = pd.NA
    df.loc[rng.random(n) < 0.02, "pcode"] = pd.NA
    df.loc[rng.random(n) < 0.03, "age"] = np.nan
    for col in ("cost", "hours"):
        df.loc[rng.random(n) < 0.04, col] = np.nan
    df.loc[rng.random(n) < 0.01, "cost"] = np.inf
    df.loc[rng.random(n) < 0.01, "cost"] = -np.inf
    dup = df.iloc[rng.choice(n, 40, replace=False)]  # identical rows of one person
    return pd.concat([df, dup], ignore_index=True)


@dataclass(frozen=True)
class Tables:
    frame: pd.DataFrame
    parquet: str
    csv: str
    sqlite: str


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> Tables:
    df = visits()
    d = tmp_path_factory.mktemp("visits")
    parquet, csv, db = d / "visits.parquet", d / "visits.csv", d / "visits.sqlite"
    df.to_parquet(parquet, index=False)
    df.to_csv(csv, index=False)
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE visits (pid INTEGER, pcode TEXT, ward TEXT, age REAL, cost REAL, hours REAL)")
    con.executemany("INSERT INTO visits VALUES (?, ?, ?, ?, ?, ?)", _rows(df))
    con.commit()
    con.close()
    return Tables(df, str(parquet), str(csv), str(db))


def _rows(df: pd.DataFrame) -> list[tuple]:
    out = []
    for r in df.itertuples(index=False):
        out.append(
            tuple(
                None
                if v is pd.NA or (isinstance(v, float) and np.isnan(v))
                else (int(v) if isinstance(v, np.integer) else v)
                for v in r
            )
        )
    return out


@pytest.fixture(scope="module")
def pg_url(postgres, tables: Tables) -> str:  # type: ignore[no-untyped-def]
    import psycopg

    with psycopg.connect(postgres.url, autocommit=True) as con:
        con.execute("DROP TABLE IF EXISTS visits")
        con.execute(
            "CREATE TABLE visits (pid BIGINT, pcode TEXT, ward TEXT, age DOUBLE PRECISION, "
            "cost DOUBLE PRECISION, hours DOUBLE PRECISION)"
        )
        with con.cursor().copy("COPY visits FROM STDIN") as cp:
            for row in _rows(tables.frame):
                cp.write_row(row)
    return postgres.url


REFERENCES: dict[str, Cube] = {}


def reference(tables: Tables, name: str) -> Cube:
    if name not in REFERENCES:
        REFERENCES[name] = build_cube(tables.frame, schema_of(name), order_key=KEY)
    return REFERENCES[name]


def assert_same(cube: Cube, ref: Cube) -> None:
    np.testing.assert_array_equal(cube.counts, ref.counts)
    assert cube.out_of_domain == ref.out_of_domain
    assert [m.name for m in cube.measures] == [m.name for m in ref.measures]
    for a, b in zip(cube.measures, ref.measures):
        assert a.sums.tobytes() == b.sums.tobytes()  # to the bit
        np.testing.assert_array_equal(a.counts, b.counts)
        assert a.missing == b.missing
    assert cube.truncation == ref.truncation


def test_the_reference_truncates_and_sums(tables: Tables) -> None:
    ref = reference(tables, "k3-pid")
    t = ref.truncation
    assert t is not None and t.people_over_limit > 50 and t.rows_dropped > 500
    assert ref.total == t.rows_kept and ref.measure("cost").missing > 0
    cell = reference(tables, "cell-pcode").truncation
    assert cell is not None and cell.repeats_dropped > 0


@pytest.mark.parametrize("name", list(SCHEMAS))
@pytest.mark.parametrize("kind", ["parquet", "csv", "sqlite"])
def test_duckdb_and_sqlite_match_the_reference(kind: str, name: str, tables: Tables) -> None:
    location = getattr(tables, kind)
    source = open_source(location, table="visits" if kind == "sqlite" else None)
    assert_same(source.build_cube(schema_of(name), order_key=KEY), reference(tables, name))


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_postgresql_matches_the_reference(name: str, pg_url: str, tables: Tables) -> None:
    source = open_source(pg_url, table="visits")
    assert_same(source.build_cube(schema_of(name), order_key=KEY), reference(tables, name))


# One local Spark build (CSV: text identifiers, one row per age group); the integer-identifier Parquet case
# runs through Spark Connect in test_spark_connect_person.py (the run's Connect server is already warm).
@pytest.mark.parametrize(("kind", "name"), [("csv", "age-pcode")])
def test_spark_matches_the_reference(kind: str, name: str, spark, tables: Tables) -> None:  # type: ignore[no-untyped-def]
    source = open_source(MASTER, table=getattr(tables, kind))
    assert_same(source.build_cube(schema_of(name), order_key=KEY), reference(tables, name))
    if name == "age-pcode":  # the distribution of rows per person, computed by Spark
        s = schema_of(name)
        assert source.contributions("pcode", s).to_dict() == contributions(tables.frame, "pcode", s).to_dict()


def test_rebuilds_are_identical(tables: Tables) -> None:
    source = open_source(tables.parquet)
    s = schema_of("k3-pid")
    assert_same(source.build_cube(s, order_key=KEY), source.build_cube(s, order_key=KEY))
    other = source.build_cube(s, order_key=OrderKey.from_secret(b"another curator's key, 32 bytes"))
    assert other.total == reference(tables, "k3-pid").total
    assert other.measure("cost").sums.tobytes() != reference(tables, "k3-pid").measure("cost").sums.tobytes()


def test_contributions_match_the_reference(tables: Tables, pg_url: str) -> None:
    s = schema_of("k3-pid")
    sources = [
        open_source(tables.parquet),
        open_source(tables.csv),
        open_source(tables.sqlite, table="visits"),
        open_source(pg_url, table="visits"),
    ]
    for column, sch in (("pid", s), ("pcode", None)):
        want = contributions(tables.frame, column, sch)
        for source in sources:
            assert source.contributions(column, sch).to_dict() == want.to_dict(), source
    assert contributions(tables.frame, "pid").most_rows >= 60
    c = contributions(tables.frame, "pid", s)  # the rows a cube counts: inside the domain
    assert c.rows_kept(3) == reference(tables, "k3-pid").total


def test_the_shown_statement_hides_the_key(tables: Tables) -> None:
    shown = open_source(tables.parquet).sql(schema_of("age-pcode"))
    assert "ROW_NUMBER() OVER (PARTITION BY person, grp" in shown and shown.count("not shown") == 5
    assert 'isnan(CAST("hours" AS DOUBLE))) THEN NULL' in shown  # NaN is missing, not the upper bound
    s = schema_of("k3-pid")
    statement = sqlbounds.cube_statement(
        s,
        {"ward": "text", "age": "numeric", "cost": "numeric", "hours": "numeric"},
        "t",
        order_key=KEY,
        unit_kind="integer",
    )
    assert set(KEY.constants()) <= {
        p for p in statement.params if isinstance(p, int)
    }  # bound as parameters ...
    for constant in KEY.constants():
        assert str(constant) not in statement.display()  # ... and never displayed


def test_errors_name_the_column(tables: Tables, tmp_path) -> None:  # type: ignore[no-untyped-def]
    floats = tmp_path / "floats.parquet"
    tables.frame.assign(pid=tables.frame.pid.astype("float64")).to_parquet(floats)
    s = schema_of("k3-pid")
    with pytest.raises(SourceError, match="'pid' .* holds floating-point numbers"):
        open_source(str(floats)).build_cube(s, order_key=KEY)
    with pytest.raises(SourceError, match="order key"):
        open_source(tables.parquet).build_cube(s)
    bad = Schema.from_dict({"attributes": ATTRIBUTES, "measures": [{**COST, "column": "ward"}]})
    with pytest.raises(SourceError, match="measure 'cost' sums numbers but column 'ward'"):
        open_source(tables.parquet).build_cube(bad)
    gone = Schema.from_dict({"attributes": ATTRIBUTES, "privacy_unit": {"column": "patient", "max_rows": 2}})
    with pytest.raises(SourceError, match="privacy unit's column 'patient' is not in"):
        open_source(tables.sqlite, table="visits").build_cube(gone, order_key=KEY)
