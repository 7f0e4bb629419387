"""Every source gives the pandas reference's cube and out-of-domain count on the edge-case table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpdesk.engine.cube import build_cube
from dpdesk.engine.schema import Schema
from dpdesk.sources import DataFrameSource, open_source
from dpdesk.sources.duck import DuckDBSource

from .conftest import AGE, SCHEMA_DICT

FILE_SOURCES = ["csv", "tsv", "parquet", "parquet_glob", "csv_glob", "sqlite", "sqlite_untyped", "xlsx"]


def _open(kind: str, files):  # type: ignore[no-untyped-def]
    if kind == "sqlite":
        return open_source(files.sqlite, table="people")
    if kind == "sqlite_untyped":
        return open_source(files.sqlite, table="untyped")
    return open_source(getattr(files, kind))


def assert_same(cube, reference) -> None:  # type: ignore[no-untyped-def]
    np.testing.assert_array_equal(cube.counts, reference.counts)
    assert cube.out_of_domain == reference.out_of_domain
    assert cube.counts.shape == reference.schema.shape


def test_reference_table_has_the_edge_cases(table: pd.DataFrame, schema: Schema) -> None:
    ref = build_cube(table, schema)
    assert ref.out_of_domain > 0 and ref.total > 0
    assert ref.total + ref.out_of_domain == len(table)
    # every cell of the closed last age bin and of each word is reachable in the test table
    assert ref.counts[-1].sum() > 0 and np.all(ref.counts.sum(axis=(0, 2, 3)) > 0)


@pytest.mark.parametrize("kind", FILE_SOURCES)
def test_file_sources_match_reference(kind: str, files, table: pd.DataFrame, schema: Schema) -> None:
    source = _open(kind, files)
    assert_same(source.build_cube(schema), build_cube(table, schema))


def test_postgresql_matches_reference(postgres, table: pd.DataFrame, schema: Schema) -> None:
    source = open_source(postgres.url, table="people")
    assert source.kind == "postgresql"
    assert_same(source.build_cube(schema), build_cube(table, schema))


def test_postgresql_view_matches_reference(postgres, table: pd.DataFrame, schema: Schema) -> None:
    source = open_source(postgres.url, table="adults")
    assert_same(source.build_cube(schema), build_cube(table[table[AGE] >= 18], schema))


def test_postgresql_schema_qualified_table(postgres, table: pd.DataFrame, schema: Schema) -> None:
    cube = open_source(postgres.url, table="other.people").build_cube(schema)
    assert cube.total + cube.out_of_domain == 10


def test_dataframe_source_is_the_reference(table: pd.DataFrame, schema: Schema) -> None:
    assert_same(DataFrameSource(table, "people").build_cube(schema), build_cube(table, schema))


@pytest.mark.parametrize("attrs", [[0], [1], [2], [3], [3, 0], [2, 1, 0]])
def test_subsets_and_orders_of_attributes(attrs: list[int], files, table: pd.DataFrame) -> None:
    """Strides and C order: any subset of the attributes, in any order, flattens like the reference."""
    schema = Schema.from_dict({"attributes": [SCHEMA_DICT["attributes"][i] for i in attrs]})
    ref = build_cube(table, schema)
    for source in (
        open_source(files.parquet),
        open_source(files.csv),
        open_source(files.sqlite, table="people"),
    ):
        assert_same(source.build_cube(schema), ref)


def test_categorical_numbers_and_text_forms(tmp_path, schema: Schema) -> None:
    """Declared numbers match numeric columns by value and text columns by text form (engine rule)."""
    df = pd.DataFrame(
        {
            "n": pd.array([1, 2, 3, 3, None, 7], dtype="Int64"),
            "f": [1.0, 2.5, 3.0, np.nan, 2.5, 1.0],
            "t": pd.array(["1", "2.5", "3", "x", None, "1.0"], dtype="string"),
        }
    )
    path = tmp_path / "kinds.parquet"
    df.to_parquet(path, index=False)
    for col in ("n", "f", "t"):
        s = Schema.from_dict({"attributes": [{"name": col, "kind": "categorical", "values": [1, 2.5, "3"]}]})
        assert_same(open_source(str(path)).build_cube(s), build_cube(df, s))


def test_index_arithmetic_is_bigint(tmp_path) -> None:
    """Codes are cast to BIGINT before multiplying by strides (small int types overflow; cubes can be huge)."""
    # 4 attributes of 300 bins: 8.1e9 cells would not fit in memory, so check the SQL only.
    attrs = [{"name": f"a{i}", "kind": "numeric", "edges": list(range(301))} for i in range(4)]
    schema = Schema.from_dict({"attributes": attrs})
    path = tmp_path / "w.csv"
    pd.DataFrame({f"a{i}": [1, 2] for i in range(4)}).to_csv(path, index=False)
    sql = DuckDBSource(str(path)).sql(schema)
    assert "AS BIGINT) * 27000000" in sql


def test_empty_table(tmp_path, schema: Schema, table: pd.DataFrame) -> None:
    empty = table.iloc[:0]
    path = tmp_path / "empty.parquet"
    empty.to_parquet(path, index=False)
    cube = open_source(str(path)).build_cube(schema)
    assert cube.total == 0 and cube.out_of_domain == 0 and cube.counts.shape == schema.shape
