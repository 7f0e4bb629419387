"""Random small tables and schemas: DuckDB and SQLite agree with the pandas reference cell for cell."""

from __future__ import annotations

import sqlite3
import tempfile

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpdesk.engine.cube import build_cube
from dpdesk.engine.schema import Schema
from dpdesk.sources import open_source

LABELS = ["a", "b", "é", "x'y", 'q"r', ""]


@st.composite
def tables(draw):  # type: ignore[no-untyped-def]
    edges = sorted(draw(st.sets(st.integers(-5, 5), min_size=2, max_size=4)))
    values = draw(st.lists(st.sampled_from(LABELS[:-1]), min_size=1, max_size=3, unique=True))
    n = draw(st.integers(0, 40))
    nums = draw(
        st.lists(
            st.one_of(st.none(), st.sampled_from(edges), st.floats(-7, 7, allow_nan=False)),
            min_size=n,
            max_size=n,
        )
    )
    cats = draw(st.lists(st.one_of(st.none(), st.sampled_from(LABELS)), min_size=n, max_size=n))
    df = pd.DataFrame(
        {
            "num": pd.array([np.nan if v is None else float(v) for v in nums], dtype="float64"),
            "cat": pd.array(cats, dtype="string"),
        }
    )
    schema = Schema.from_dict(
        {
            "attributes": [
                {"name": "num", "kind": "numeric", "edges": edges},
                {"name": "cat", "kind": "categorical", "values": values},
            ]
        }
    )
    return df, schema


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables())
def test_duckdb_and_sqlite_match_reference(case) -> None:  # type: ignore[no-untyped-def]
    df, schema = case
    ref = build_cube(df, schema)
    with tempfile.TemporaryDirectory() as d:
        df.to_parquet(f"{d}/t.parquet", index=False)
        con = sqlite3.connect(f"{d}/t.sqlite")
        con.execute('CREATE TABLE t ("num" REAL, "cat" TEXT)')
        con.executemany(
            "INSERT INTO t VALUES (?, ?)",
            [
                (None if pd.isna(a) else float(a), None if pd.isna(b) else str(b))
                for a, b in zip(df["num"], df["cat"])
            ],
        )
        con.commit()
        con.close()
        for source in (open_source(f"{d}/t.parquet"), open_source(f"{d}/t.sqlite", table="t")):
            cube = source.build_cube(schema)
            np.testing.assert_array_equal(cube.counts, ref.counts)
            assert cube.out_of_domain == ref.out_of_domain
