"""The privacy unit's truncation and the measures' sums through Spark Connect (the run's one server,
``spark_connect`` in tests/sources/conftest.py): the same cube, to the bit, as the pandas reference."""

from __future__ import annotations

import pytest

from dpdesk.engine.contributions import contributions
from dpdesk.engine.cube import build_cube
from dpdesk.sources import open_source

from .test_person_level import KEY, assert_same, schema_of, visits


@pytest.mark.parametrize("name", ["k3-pid"])
def test_a_truncated_cube_through_spark_connect(name: str, spark_connect, tmp_path) -> None:  # type: ignore[no-untyped-def]
    frame = visits()
    parquet = tmp_path / "visits.parquet"
    frame.to_parquet(parquet, index=False)
    schema = schema_of(name)
    source = open_source(spark_connect.url, table=str(parquet))
    assert source.remote
    assert_same(source.build_cube(schema, order_key=KEY), build_cube(frame, schema, order_key=KEY))
    assert source.contributions("pid", schema).to_dict() == contributions(frame, "pid", schema).to_dict()
