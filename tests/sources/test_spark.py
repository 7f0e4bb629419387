"""Spark as a source, on a real local Spark (``local[2]``, shared by the whole run; see tests/conftest.py).

Every cube is compared with DuckDB's (and the pandas reference) on the edge-case table: values on every
bin edge, NULLs, unknown categories, quotes and unicode in names and values.
"""

from __future__ import annotations

import json
import os
import shutil
import threading

import numpy as np
import pandas as pd
import pytest

from dpdesk import cli
from dpdesk.engine.cube import build_cube
from dpdesk.engine.errors import Cancelled
from dpdesk.engine.schema import Schema
from dpdesk.sources import SourceError, open_source
from dpdesk.sources.spark import FINGERPRINT_CAVEAT, master_of, spark_location

from .conftest import AGE, SCHEMA_DICT, TEXT_VALUES

MASTER = "spark://local[2]"


def assert_same(cube, reference) -> None:  # type: ignore[no-untyped-def]
    np.testing.assert_array_equal(cube.counts, reference.counts)
    assert cube.out_of_domain == reference.out_of_domain


@pytest.fixture(scope="module")
def people(spark, files):  # type: ignore[no-untyped-def]
    """The edge-case table as temporary views in Spark's catalog: ``people`` and a filtered ``adults``."""
    spark.read.parquet(files.parquet).createOrReplaceTempView("people")
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW adults AS SELECT * FROM people WHERE `{AGE}` >= 18")
    yield "people"
    spark.catalog.dropTempView("people")
    spark.catalog.dropTempView("adults")


def test_master_urls() -> None:
    assert spark_location("local[2]") == MASTER and master_of(MASTER) == "local[2]"
    assert master_of("spark://local[*]") == "local[*]" and master_of("spark://local") == "local"
    assert master_of("spark://host:7077") == "spark://host:7077"  # a standalone cluster keeps Spark's URL
    assert (
        master_of("spark://yarn") == "yarn"
        and master_of("spark://k8s://https://h:443") == "k8s://https://h:443"
    )


@pytest.mark.parametrize("kind", ["parquet", "parquet_glob", "csv", "tsv"])
def test_lake_paths_match_duckdb(kind: str, spark, files, table: pd.DataFrame, schema: Schema) -> None:
    path = getattr(files, kind)
    source = open_source(MASTER, table=path)
    assert source.kind == "spark" and source.format == ("parquet" if "parquet" in kind else kind)
    duck = open_source(path).build_cube(schema)
    assert_same(source.build_cube(schema), duck)
    assert_same(duck, build_cube(table, schema))


def test_catalog_table_and_view_match_duckdb(people: str, files, table: pd.DataFrame, schema: Schema) -> None:
    seen: list[float] = []
    cube = open_source(MASTER, table=people).build_cube(schema, progress=seen.append)
    assert_same(cube, open_source(files.parquet).build_cube(schema))
    assert seen[0] == 0.0 and seen[-1] == 1.0 and seen == sorted(seen)  # progress only rises
    adults = open_source(MASTER, table="adults").build_cube(schema)
    assert_same(adults, build_cube(table[table[AGE] >= 18], schema))


@pytest.mark.parametrize("attrs", [[2], [3, 1, 0]])
def test_subsets_and_orders_of_attributes(attrs: list[int], people: str, files) -> None:
    schema = Schema.from_dict({"attributes": [SCHEMA_DICT["attributes"][i] for i in attrs]})
    assert_same(
        open_source(MASTER, table=people).build_cube(schema), open_source(files.parquet).build_cube(schema)
    )


def test_categorical_numbers_and_text_forms(spark, tmp_path) -> None:
    """Declared numbers match numeric columns by value and text columns by text form, as in DuckDB."""
    df = pd.DataFrame(
        {
            "n": pd.array([1, 2, 3, 3, None, 7], dtype="Int64"),
            "f": [1.0, 2.5, 3.0, np.nan, 2.5, 1.0],
            "t": pd.array(["1", "2.5", "3", "x", None, "1.0"], dtype="string"),
            "b": [True, False, True, True, False, True],
        }
    )
    path = tmp_path / "kinds.parquet"
    df.to_parquet(path, index=False)
    s = Schema.from_dict(
        {
            "attributes": [
                {"name": col, "kind": "categorical", "values": ["true", 1] if col == "b" else [1, 2.5, "3"]}
                for col in df
            ]
        }
    )
    cube = open_source(MASTER, table=str(path)).build_cube(s)
    assert_same(cube, open_source(str(path)).build_cube(s))
    assert cube.total > 0


def test_cancel_stops_the_spark_job(spark, schema: Schema) -> None:
    """Cancel cancels the job group: the build raises Cancelled, the job's tasks stop unfinished."""
    spark.range(0, 4_000_000_000, numPartitions=16).selectExpr(
        f"CAST(id % 130 AS DOUBLE) AS `{AGE}`"
    ).createOrReplaceTempView("huge")
    source = open_source(MASTER, table="huge")
    one = Schema.from_dict({"attributes": [SCHEMA_DICT["attributes"][0]]})
    reports: list[float] = []  # the first report is the start; the next ones come from a running job
    with pytest.raises(Cancelled):
        source.build_cube(one, progress=reports.append, cancelled=lambda: len(reports) >= 2)
    tracker = spark.sparkContext.statusTracker()
    jobs = [tracker.getJobInfo(j) for j in tracker.getJobIdsForGroup(source.last_job_group)]
    assert jobs and all(job.status == "FAILED" for job in jobs)  # Spark reports a cancelled job as failed
    stages = [tracker.getStageInfo(s) for job in jobs for s in job.stageIds]
    assert sum(s.numCompletedTasks for s in stages if s) < sum(s.numTasks for s in stages if s)
    for _ in range(300):  # interrupted tasks wind down within moments
        if not tracker.getActiveJobsIds():
            break
        threading.Event().wait(0.1)
    assert tracker.getActiveJobsIds() == []
    spark.catalog.dropTempView("huge")


def test_fingerprint_is_a_best_effort_checksum(spark, files, table: pd.DataFrame, tmp_path) -> None:
    fp = open_source(MASTER, table=files.parquet).fingerprint()
    assert fp.method == "spark-checksum" and fp.row_count == len(table) and fp.caveat == FINGERPRINT_CAVEAT
    assert "not a cryptographic commitment" in fp.caveat and "no table version" in fp.caveat
    copy = tmp_path / "copy.parquet"
    shutil.copy(files.parquet, copy)
    assert open_source(MASTER, table=str(copy)).fingerprint() == fp  # the content counts, not the name
    reordered = table.iloc[::-1]
    reordered.to_parquet(tmp_path / "reordered.parquet", index=False)
    assert open_source(MASTER, table=str(tmp_path / "reordered.parquet")).fingerprint().digest == fp.digest
    changed = table.copy()
    changed.loc[0, "note"] = "changed"
    changed.to_parquet(tmp_path / "changed.parquet", index=False)
    assert open_source(MASTER, table=str(tmp_path / "changed.parquet")).fingerprint().digest != fp.digest


def test_cli_show_sql_binds_every_value(spark, files, tmp_path, capsys) -> None:
    schema_file = tmp_path / "s.json"
    schema_file.write_text(json.dumps(SCHEMA_DICT), encoding="utf-8")
    assert (
        cli.main(["cube", files.parquet, "--spark", "local[2]", "--schema", str(schema_file), "--show-sql"])
        == 0
    )
    out = capsys.readouterr().out
    statement = out.split("-- parameters")[0]
    assert "GROUP BY cell" in statement and "`select`" in statement and '`in"come`' in statement
    assert "`Score ✓`" in statement and statement.count("?") == 17
    for value in TEXT_VALUES:  # declared values are bound, never pasted into the statement
        assert value not in statement.split("\n", 1)[1]
        assert json.dumps(value, ensure_ascii=False) in out
    assert "30.5" not in statement and "is a temporary view of: spark.read" in out


def test_cli_json_and_project(spark, files, table: pd.DataFrame, schema: Schema, tmp_path, capsys) -> None:
    schema_file = tmp_path / "s.json"
    schema_file.write_text(json.dumps(SCHEMA_DICT), encoding="utf-8")
    assert (
        cli.main(["cube", files.parquet, "--spark", "local[2]", "--schema", str(schema_file), "--json"]) == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["counts"] == build_cube(table, schema).flat.tolist()
    assert out["source"] == {"kind": "spark", "location": MASTER, "table": files.parquet, "format": "parquet"}
    assert out["fingerprint"]["method"] == "spark-checksum" and out["fingerprint"]["caveat"]
    project = tmp_path / "lake.dpdesk"
    assert (
        cli.main(
            [
                "project",
                "new",
                str(project),
                "--schema",
                str(schema_file),
                "--source",
                files.parquet,
                "--spark",
                "local[2]",
                "--budget",
                "1",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert f"bound to {MASTER} table {files.parquet}: its cube's fingerprint is keyed" in out
    assert cli.main(["project", "info", str(project), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)  # the binding: the cube's keyed fingerprint, no row count
    assert info["source"]["fingerprint_method"] == "hmac-sha256-cube" and "row_count" not in info["source"]
    assert info["source"]["status"] == "unchanged"


@pytest.mark.parametrize(
    "args, message",
    [
        (["people", "--table", "x"], "with --spark, SOURCE is the table or path Spark reads: drop --table"),
        (["no_such_table"], "no table or view 'no_such_table' in Spark at local[2] (tables: "),
        (["/no/such/file.parquet"], "no such file or folder: /no/such/file.parquet"),
        (["`people`"], "give the name without quotes"),
    ],
)
def test_cli_errors_are_one_line(args, message, people, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    schema_file = tmp_path / "s.json"
    schema_file.write_text(json.dumps(SCHEMA_DICT), encoding="utf-8")
    assert cli.main(["cube", *args, "--spark", "local[2]", "--schema", str(schema_file)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_numeric_attribute_on_text_column_and_bad_csv_number(spark, files, tmp_path) -> None:
    bad = Schema.from_dict(
        {"attributes": [{"name": "w", "column": "select", "kind": "numeric", "edges": [0, 1]}]}
    )
    with pytest.raises(
        SourceError, match=r"attribute 'w' is numeric but column 'select' .* holds text \(string\)"
    ):
        open_source(MASTER, table=files.parquet).build_cube(bad)
    csv = tmp_path / "bad.csv"
    csv.write_text("x\n1\nabc\n", encoding="utf-8")
    num = Schema.from_dict({"attributes": [{"name": "x", "kind": "numeric", "edges": [0, 10]}]})
    with pytest.raises(SourceError, match=r"^Spark at local\[2\] cannot read csv .*bad.csv: .*abc"):
        open_source(MASTER, table=str(csv)).build_cube(num)
    assert os.path.exists(csv)
