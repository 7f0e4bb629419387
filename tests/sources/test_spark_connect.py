"""Spark Connect (``sc://HOST:PORT``) as the way to a cluster, against a real Spark Connect server.

One ``local[2]`` server is started from the pyspark package for the whole run (``spark_connect`` in
``tests/sources/conftest.py``). Its catalog gets ``lake.cps``, a CPS-style table; every cube built
through Connect is compared with DuckDB's on the same rows. Also: docs/scaling.md's three steps run as
written (only the address replaced), settings reach the session, secrets stay out of every file of the
project, and one session serves the process. (Cancel through Connect is not tested: see docs/scaling.md.)
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from cli_helpers import run_dpdesk

from dpdesk.engine.cube import build_cube
from dpdesk.engine.schema import Schema
from dpdesk.sources import SourceError, open_source
from dpdesk.sources.spark_session import connect_session, parse_location, public_location, secret_variable

from .connect_server import CPS_SCHEMA, cps_like

ROOT = Path(__file__).resolve().parents[2]
DOC_ADDRESS = "sc://spark.example.org:15002"
SECRET = "s3cr3t-Value;with=odd%chars"


@pytest.fixture(scope="module")
def cps(spark_connect, tmp_path_factory):
    folder = tmp_path_factory.mktemp("cps")
    frame = cps_like()
    parquet = folder / "cps.parquet"
    frame.to_parquet(parquet, index=False)
    spark = connect_session(spark_connect.url)
    spark.sql("CREATE DATABASE IF NOT EXISTS lake")
    spark.read.parquet(str(parquet)).write.mode("overwrite").saveAsTable("lake.cps")
    return SimpleNamespace(
        url=spark_connect.url,
        parquet=parquet,
        frame=frame,
        schema=Schema.from_dict(CPS_SCHEMA),
        folder=folder,
    )


def _same(a, b) -> None:
    np.testing.assert_array_equal(a.counts, b.counts)
    assert a.out_of_domain == b.out_of_domain


def test_a_catalog_table_by_name_gives_duckdbs_cube(cps):
    seen: list[float] = []
    source = open_source(cps.url, table="lake.cps")
    cube = source.build_cube(cps.schema, progress=seen.append)
    duck = open_source(str(cps.parquet)).build_cube(cps.schema)
    _same(cube, duck)
    _same(duck, build_cube(cps.frame, cps.schema))
    assert cube.total + cube.out_of_domain == len(cps.frame) and cube.out_of_domain > 0
    assert seen[0] == 0.0 and seen[-1] == 1.0 and seen == sorted(seen)
    assert source.remote and source.describe()["location"] == cps.url


def test_a_path_read_by_the_server_gives_the_same_cube(cps):
    _same(
        open_source(cps.url, table=str(cps.parquet)).build_cube(cps.schema), build_cube(cps.frame, cps.schema)
    )
    with pytest.raises(SourceError, match="must be absolute"):
        open_source(cps.url, table="relative/cps.parquet")


def test_one_session_serves_the_process_and_no_jvm_starts_here(cps):
    first = connect_session(cps.url)
    open_source(cps.url, table="lake.cps").build_cube(cps.schema)
    open_source(cps.url, table="lake.cps").columns()
    assert connect_session(cps.url) is first and not first.is_stopped
    from pyspark import SparkContext

    if SparkContext._active_spark_context is None:  # (another module's local session may still run)
        assert "SPARK_CONNECT_MODE_ENABLED" not in os.environ  # a local session can still start here


def test_the_three_steps_of_docs_scaling_run_against_the_server(cps, tmp_path):
    text = (ROOT / "docs" / "scaling.md").read_text(encoding="utf-8")
    section = text.split("## A cluster table through Spark Connect, in three steps", 1)[1].split("\n## ", 1)[
        0
    ]
    block = re.search(r"```sh\n(.*?)```", section, flags=re.S).group(1)
    lines = [shlex.split(line, comments=True) for line in block.splitlines()]
    steps = [words for words in lines if words]
    assert [w[0] for w in steps] == ["pip", "dpdesk", "dpdesk"]
    assert steps[0] == ["pip", "install", "dpdesk[spark]"]  # what make test installs (pyspark[connect])
    (tmp_path / "resources").symlink_to(ROOT / "resources", target_is_directory=True)
    outputs = []
    for words in steps[1:]:
        args = [cps.url if w == DOC_ADDRESS else w for w in words[1:]]
        assert cps.url in args
        ran = run_dpdesk(*args, cwd=tmp_path)
        assert ran.returncode == 0, ran.stderr
        outputs.append(ran.stdout)
    assert "GROUP BY" in outputs[0] and "`wage`" in outputs[0]
    assert "created cps.dpdesk" in outputs[1]
    from dpdesk.store import Project

    with Project.open(tmp_path / "cps.dpdesk", "r") as p:
        assert p.source.location == cps.url + "/;spark.sql.shuffle.partitions=8"
        assert p.source.table == "lake.cps"
        assert p.verify().ok
    # the project is used like any other: a fresh answer reads the cube through the same server
    assert run_dpdesk("requests", "add", tmp_path / "cps.dpdesk", "--query", 'count(parttime="yes")',
                      "--eps", "50", "--delta", "0.05").returncode == 0  # fmt: skip
    answered = run_dpdesk("answer", tmp_path / "cps.dpdesk", "--request", "r1", "--yes", "--json")
    assert answered.returncode == 0, answered.stderr
    assert json.loads(answered.stdout)["release"]["kind"] == "fresh"
    assert (
        connect_session(cps.url + "/;spark.sql.shuffle.partitions=8").conf.get("spark.sql.shuffle.partitions")
        == "8"
    )


def test_settings_are_stored_and_secrets_are_not(cps, tmp_path):
    schema_file = ROOT / "resources" / "examples" / "cps.schema.json"
    project = tmp_path / "p.dpdesk"
    made = run_dpdesk(
        "project", "new", project, "--schema", schema_file, "--spark", cps.url, "--source", "lake.cps",
        "--spark-conf", "spark.sql.shuffle.partitions=3", "--spark-conf", f"spark.hadoop.fs.s3a.secret.key={SECRET}",
        "--budget", "1",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    stored = f"{cps.url}/;spark.sql.shuffle.partitions=3;spark.hadoop.fs.s3a.secret.key="
    from dpdesk.store import Project

    with Project.open(project, "r") as p:
        assert p.source.location == stored
    for f in tmp_path.iterdir():  # the project file, its WAL, its lock, any cache
        data = f.read_bytes()
        assert b"s3cr3t" not in data and SECRET.encode() not in data, f.name
    assert connect_session(stored).conf.get("spark.sql.shuffle.partitions") == "3"  # given to the session
    assert run_dpdesk("requests", "add", project, "--query", 'count(region="west")', "--eps", "50",
                      "--delta", "0.05").returncode == 0  # fmt: skip

    # a later process has only the environment: without the variable, one line naming it
    variable = secret_variable("spark.hadoop.fs.s3a.secret.key")
    assert variable == "DPDESK_SPARK_SECRET_SPARK_HADOOP_FS_S3A_SECRET_KEY"
    env = {k: v for k, v in os.environ.items() if k != variable}
    cmd = [sys.executable, "-m", "dpdesk", "answer", str(project), "--request", "r1", "--yes"]
    without = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert without.returncode == 2 and without.stderr.count("\n") == 1, without.stderr
    assert variable in without.stderr and "s3cr3t" not in without.stderr
    with_it = subprocess.run(cmd, env={**env, variable: SECRET}, capture_output=True, text=True, timeout=300)
    assert with_it.returncode == 0, with_it.stderr
    assert "answer r1:" in with_it.stdout


def test_a_token_in_the_address_is_never_stored(monkeypatch):
    stored = public_location("sc://h.example.org:15002/;token=abc123;user_id=curator")
    assert stored == "sc://h.example.org:15002/;token=;user_id=curator"
    loc = parse_location(stored)
    assert loc.params == {"token": "", "user_id": "curator"} and loc.secrets == ("token",)
    from dpdesk.sources import spark_session as s

    assert s._resolved(stored).params["token"] == "abc123"  # this process was given it
    s._SECRETS.clear()
    monkeypatch.delenv("SPARK_CONNECT_AUTHENTICATE_TOKEN", raising=False)
    with pytest.raises(SourceError, match="set SPARK_CONNECT_AUTHENTICATE_TOKEN in the environment"):
        s._resolved(stored)
    monkeypatch.setenv("SPARK_CONNECT_AUTHENTICATE_TOKEN", "from-env")
    assert "token" not in s._resolved(stored).params  # pyspark reads its own variable


def test_malformed_locations_and_settings_are_one_line_errors():
    for bad, message in [
        ("sc://", "sc://HOST:PORT"),
        ("sc://h:15002/;nonsense", "is not KEY=VALUE"),
    ]:
        with pytest.raises(SourceError, match=re.escape(message)):
            parse_location(bad)
    with pytest.raises(SourceError, match="expected KEY=VALUE"):
        public_location("sc://h:15002", ["partitions"])
    schema_file = ROOT / "resources" / "examples" / "cps.schema.json"
    ran = run_dpdesk("cube", "x.csv", "--schema", schema_file, "--spark-conf", "spark.a=b")
    assert ran.returncode == 2 and "--spark-conf applies to a Spark source" in ran.stderr
