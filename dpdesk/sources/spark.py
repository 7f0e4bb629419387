"""A table, a view or a lake path counted by Apache Spark (PySpark, the ``dpdesk[spark]`` extra).

The location is ``sc://HOST:PORT`` — a Spark Connect server, the way to a cluster: pyspark's thin
client, no JVM in this process — or ``spark://MASTER``: ``spark://local[*]`` (or ``local[N]``) runs Spark
inside this process's JVM (a laptop without a cluster), ``spark://HOST:PORT`` is a standalone cluster's
master, ``spark://yarn`` and ``spark://k8s://...`` name those cluster managers. Either may carry session
settings and Spark Connect parameters (:mod:`dpdesk.sources.spark_session`: their form, and the
secrets that are never stored). ``table`` is either a name in the session's catalog (``people``, ``db.people``,
``catalog.db.people``) or a path Spark reads: a Parquet file or folder, a CSV/TSV file, or a Delta table
(a folder holding ``_delta_log``, or any path written ``delta:PATH``; Delta needs the Delta Lake jars in
the session). Paths are read into a temporary view named by dpdesk.

The generated ``GROUP BY`` (:mod:`dpdesk.sources.sqlgen`, Spark dialect: backtick-quoted identifiers,
positional ``?`` parameters bound by ``spark.sql(..., args=...)``) runs on the cluster under its own job
group; only the at most ``n_cells + 1`` (cell, count) rows reach the driver, so the driver's memory does
not grow with the table. Progress is read from Spark's status tracker and Cancel cancels the job group.

The fingerprint is Spark's own row checksum (see :data:`FINGERPRINT_CAVEAT`): a lake table has no single
file to hash and can change between two reads.
"""

from __future__ import annotations

import glob as globmod
import hashlib
import os
import threading
import uuid
from typing import TYPE_CHECKING, Any

from dpdesk.engine.contributions import Contributions
from dpdesk.engine.cube import Cube
from dpdesk.engine.errors import Cancelled
from dpdesk.engine.schema import Schema
from dpdesk.engine.truncation import OrderKey
from dpdesk.sources import sqlbounds, sqlgen
from dpdesk.sources.base import (
    SHOWN_ORDER_KEY,
    CancelCheck,
    Fingerprint,
    Progress,
    Source,
    SourceError,
    check_cancelled,
    column_kinds_checked,
    contributions_from_columns,
    contributions_schema,
    cube_from_columns,
    needs_order_key,
    one_line,
    report,
    require_extra,
    rows_to_columns,
    run_in_worker,
    unit_kind_checked,
)
from dpdesk.sources.spark_session import (
    SCHEMES,
    SESSION_CONF,
    location_session,
    parse_location,
    spark_session,
)

__all__ = [
    "FINGERPRINT_CAVEAT",
    "SESSION_CONF",
    "SparkSource",
    "master_of",
    "spark_location",
    "spark_session",
]

if TYPE_CHECKING:
    import pandas as pd

SCHEME = "spark://"
FORMAT_PREFIXES = ("parquet:", "delta:", "csv:", "tsv:")

FINGERPRINT_CAVEAT = (
    "best effort: a lake table has no single file to hash, so this is Spark's row count plus an "
    "order-independent sum of two hashes of every row (64-bit xxhash64 and 32-bit murmur3) and the column "
    "types; it detects changed, added or removed rows with high probability but is not a cryptographic "
    "commitment, it pins no table version or snapshot, and the data may change between this checksum and "
    "a cube build"
)


def spark_location(master: str) -> str:
    """The source location for a Spark master URL or Spark Connect address (``local[2]`` →
    ``spark://local[2]``; ``sc://HOST:PORT`` as it is)."""
    master = master.strip()
    if not master:
        raise SourceError(
            "--spark needs a master: sc://HOST:15002 (Spark Connect), local[*], local[N], "
            "spark://HOST:PORT, yarn or k8s://..."
        )
    return master if master.startswith(SCHEMES) else SCHEME + master


def master_of(location: str) -> str:
    """The Spark master URL a ``spark://`` location names."""
    return parse_location(location if location.startswith(SCHEMES) else SCHEME + location).master


def is_path(table: str) -> bool:
    """True if ``table`` names files for Spark to read rather than a table in its catalog."""
    low = table.lower()
    return (
        "/" in table
        or "\\" in table
        or low.startswith(FORMAT_PREFIXES)
        or low.endswith((".parquet", ".pq", ".csv", ".tsv", ".csv.gz", ".tsv.gz"))
    )


def path_format(path: str) -> tuple[str, str]:
    """``(format, path)``: ``parquet``, ``delta``, ``csv`` or ``tsv`` from a prefix, a suffix or a folder."""
    low = path.lower()
    for prefix in FORMAT_PREFIXES:
        if low.startswith(prefix):
            return prefix[:-1], path[len(prefix) :]
    stem = low[:-3] if low.endswith(".gz") else low
    if stem.endswith(".csv"):
        return "csv", path
    if stem.endswith(".tsv"):
        return "tsv", path
    if os.path.isdir(os.path.join(path, "_delta_log")):
        return "delta", path
    return "parquet", path  # a .parquet file or a folder of them (partitioned or not)


def _type_kind(data_type: Any) -> str:
    from pyspark.sql import types as T

    if isinstance(data_type, T.NumericType):
        return "numeric"
    if isinstance(data_type, (T.StringType, T.VarcharType, T.CharType)):
        return "text"
    return "other"


def _unit_kind(data_type: Any) -> str:
    from pyspark.sql import types as T

    if isinstance(data_type, T.IntegralType):
        return "integer"
    if isinstance(data_type, T.NumericType):
        return "float"
    if isinstance(data_type, T.BooleanType):
        return "boolean"
    return "text" if _type_kind(data_type) == "text" else "other"


class SparkSource(Source):
    """A Spark catalog table or view, or a Parquet/CSV/Delta path, under a ``spark://MASTER`` or
    ``sc://HOST:PORT`` location."""

    kind = "spark"

    def __init__(self, location: str, table: str | None):
        self.location = spark_location(location)
        where = parse_location(self.location)
        self.remote = where.remote
        self.master = where.base if self.remote else where.master  # what messages name
        if not table or not table.strip():
            raise SourceError(f"{self.location}: name the table, view or path Spark should count (--table)")
        require_extra("pyspark", "spark", "a Spark source")
        self.format: str | None = None
        self.path: str | None = None
        if is_path(table):
            fmt, path = path_format(table)
            if self.remote and "://" not in path and not path.startswith("file:"):
                if not os.path.isabs(
                    path
                ):  # the server reads it: a path of the client's folder means nothing
                    raise SourceError(f"{path}: a path Spark Connect reads must be absolute (or a URI)")
            elif "://" not in path and not path.startswith("file:"):
                path = os.path.abspath(os.path.expanduser(path))
                if any(ch in path for ch in "*?[") and not globmod.glob(path):  # Spark reads globs itself
                    raise SourceError(f"no files match {path}")
                if not any(ch in path for ch in "*?[") and not os.path.exists(path):
                    raise SourceError(f"no such file or folder: {path}")
            self.format, self.path = fmt, path
            table = path if fmt == path_format(path)[0] else f"{fmt}:{path}"
        elif "`" in table:
            raise SourceError(f"table {table!r}: give the name without quotes (catalog.db.table)")
        self.table = table
        self._view = f"dpdesk_input_{uuid.uuid4().hex[:12]}"
        self._spark: Any = None
        self.last_job_group: str | None = None  # Spark's job group of the latest statement (its UI shows it)

    # --- session and the table -----------------------------------------------------------------

    def _session(self) -> Any:
        if (
            self.remote or self._spark is None or self._spark.sparkContext._jsc is None
        ):  # the process's session for that server, kept (and its settings set)
            self._spark = location_session(self.location)
        return self._spark

    def _reader_text(self) -> str:
        assert self.path is not None and self.format is not None
        fmt = "csv" if self.format == "tsv" else self.format
        csv = '.option("header", True).option("escape", \'"\')'
        opts = {"csv": csv, "tsv": csv + '.option("sep", "\\t")'}
        return f'spark.read.format("{fmt}"){opts.get(self.format, "")}.load({self.path!r})'

    def _frame(self) -> Any:
        """The table as a DataFrame; a path is also registered as this source's temporary view."""
        spark = self._session()
        try:
            if self.path is None:
                if not spark.catalog.tableExists(self.table):
                    names = [t.name for t in spark.catalog.listTables()][:41]
                    shown = ", ".join(map(repr, names[:40])) + (", ..." if len(names) > 40 else "")
                    raise SourceError(
                        f"no table or view {self.table!r} in Spark at {self.master} "
                        f"(tables: {shown or 'none'})"
                    )
                return spark.table(self.table)
            reader = spark.read.format("csv" if self.format == "tsv" else self.format)
            if self.format in ("csv", "tsv"):  # every column as text; the cube query casts numbers
                # RFC 4180 quoting ("" inside quotes), as written by pandas, DuckDB and spreadsheets.
                reader = reader.option("header", True).option("inferSchema", False).option("escape", '"')
                if self.format == "tsv":
                    reader = reader.option("sep", "\t")
            df = reader.load(self.path)
            df.createOrReplaceTempView(self._view)
            return df
        except SourceError:
            raise
        except Exception as exc:
            raise self._error(exc) from None

    def _error(self, exc: BaseException) -> SourceError:
        what = f"{self.format} {self.path}" if self.path else f"table {self.table!r}"
        return SourceError(f"Spark at {self.master} cannot read {what}: {one_line(exc)}")

    def _from(self) -> str:
        if self.path is not None:
            return sqlgen.SPARK.ident(self._view)
        return ".".join(sqlgen.SPARK.ident(part) for part in self.table.split("."))

    def _query(self, schema: Schema, order_key: OrderKey | None = None) -> sqlgen.CubeQuery:
        kinds, from_clause, unit_kind = self._typed(schema)
        return sqlbounds.cube_statement(
            schema, kinds, from_clause, (), sqlgen.SPARK, unit_kind=unit_kind, order_key=order_key
        )

    def _typed(self, schema: Schema) -> tuple[dict[str, str], str, str | None]:
        """Column kinds, the FROM clause and the privacy unit column's kind, checked against ``schema``."""
        df = self._frame()
        kinds = {f.name: _type_kind(f.dataType) for f in df.schema.fields}
        types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
        where = f"{self.path or self.table} (Spark)"
        from_clause = self._from()
        ucol = schema.unit.column
        unit_kind = None
        if self.format in ("csv", "tsv"):
            # CSV columns are read as text: categorical attributes match by text, numeric ones and
            # measures are cast, the privacy unit's identifiers stay text.
            column_kinds_checked(schema, {c: "numeric" for c in kinds}, where)  # names only
            casts, kinds = [], {}
            numeric = {a.column for a in schema.attributes if a.kind == "numeric"}
            numeric |= {m.column for m in schema.measures}
            for column in schema.columns():
                col = sqlgen.SPARK.ident(column)
                kinds[column] = "numeric" if column in numeric else "text"
                casts.append(f"CAST({col} AS DOUBLE) AS {col}" if column in numeric else col)
            from_clause = f"(SELECT {', '.join(casts)} FROM {from_clause}) AS typed"
            if ucol is not None:
                read_as = "float" if ucol in numeric else "text"
                unit_kind = unit_kind_checked(
                    schema, read_as, where, "double" if ucol in numeric else "string"
                )
        else:
            column_kinds_checked(schema, kinds, where, types)
            if ucol is not None:
                field = df.schema[ucol]
                unit_kind = unit_kind_checked(schema, _unit_kind(field.dataType), where, types[ucol])
        return kinds, from_clause, unit_kind

    def _run(
        self, sql: str, params: tuple[Any, ...], what: str, progress: Progress, cancelled: CancelCheck
    ) -> list[Any]:
        """Collect one statement's rows under a fresh job group: progress from its stages, Cancel
        cancels the group (running tasks are interrupted)."""
        spark = self._session()
        if self.remote:
            return self._run_remote(spark, sql, params, progress, cancelled)
        sc = spark.sparkContext
        group = self.last_job_group = f"dpdesk-{uuid.uuid4().hex}"
        seen = [0.0]

        def work() -> list[Any]:
            sc.setJobGroup(group, f"dpdesk {what} of {self.path or self.table}", interruptOnCancel=True)
            try:
                return spark.sql(sql, args=list(params)).collect()
            finally:
                sc.setLocalProperty("spark.jobGroup.id", None)

        def poll() -> None:
            tracker = sc.statusTracker()
            done = total = 0
            for job in tracker.getJobIdsForGroup(group):
                info = tracker.getJobInfo(job)
                for stage in info.stageIds if info is not None else ():
                    s = tracker.getStageInfo(stage)
                    if s is not None:
                        done, total = done + s.numCompletedTasks, total + s.numTasks
            if total:  # later stages appear as earlier ones finish: never report going back
                seen[0] = max(seen[0], min(0.99, done / total))
                report(progress, seen[0])

        try:
            return run_in_worker(
                work,
                name="dpdesk-spark",
                interrupt=lambda: sc.cancelJobGroup(group),
                cancelled=cancelled,
                poll=poll if progress is not None else None,
            )
        except (SourceError, Cancelled):
            raise
        except Exception as exc:
            raise self._error(exc) from None

    def _run_remote(
        self, spark: Any, sql: str, params: tuple[Any, ...], progress: Progress, cancelled: CancelCheck
    ) -> list[Any]:
        """:meth:`_run` through Spark Connect: the statement carries a fresh tag (Cancel interrupts the
        tag's operations on the server) and the server streams its stages' progress back."""
        tag = self.last_job_group = f"dpdesk-{uuid.uuid4().hex}"
        seen = [0.0]

        def on_progress(stages: Any, inflight_tasks: int, operation_id: Any, done: bool) -> None:
            total = finished = 0
            for stage in stages or ():
                total, finished = total + stage.num_tasks, finished + stage.num_completed_tasks
            if total:  # later stages appear as earlier ones finish: never report going back
                seen[0] = max(seen[0], min(0.99, finished / total))
                report(progress, seen[0])

        result: dict[str, Any] = {}
        finished = threading.Event()

        stop = threading.Event()

        def work() -> None:
            spark.addTag(tag)  # tags belong to the thread that adds them
            try:
                frame = spark.sql(sql, args=list(params))  # the statement is analysed here ...
                if stop.is_set():  # ... and run here: not once Cancel was asked
                    raise Cancelled("cube build cancelled")
                result["rows"] = frame.collect()
            except BaseException as exc:  # handed to the calling thread
                result["error"] = exc
            finally:
                spark.removeTag(tag)
                finished.set()

        if progress is not None:
            spark.registerProgressHandler(on_progress)
        try:
            worker = threading.Thread(target=work, name="dpdesk-spark-connect", daemon=True)
            worker.start()
            while not finished.wait(0.1):
                if cancelled is not None and cancelled():
                    stop.set()
                    # interrupt the tag until the statement ends (an interrupt sent before the server
                    # registered the operation finds nothing, and the client may resubmit a cancelled
                    # stream under a new operation): then every operation of this process's session,
                    # which is dpdesk's own; for at most 10 s, then the worker is left to end on its own
                    for k in range(20):
                        spark.interruptTag(tag) if k < 4 else spark.interruptAll()
                        if finished.wait(0.5):
                            break
                    raise Cancelled("cube build cancelled")
            if "error" in result:
                raise result["error"]
            return list(result["rows"])
        except (SourceError, Cancelled):
            raise
        except Exception as exc:
            raise self._error(exc) from None
        finally:
            if progress is not None:
                spark.removeProgressHandler(on_progress)

    # --- the Source interface --------------------------------------------------------------------

    def describe(self) -> dict[str, object]:
        return {"kind": self.kind, "location": self.location, "table": self.table, "format": self.format}

    def columns(self) -> list[str]:
        return list(self._frame().columns)

    def sql(self, schema: Schema) -> str:
        shown = self._query(schema, SHOWN_ORDER_KEY).display()
        if self.path is not None:
            shown = f"-- {self._from()} is a temporary view of: {self._reader_text()}\n{shown}"
        return shown

    def build_cube(
        self,
        schema: Schema,
        *,
        progress: Progress = None,
        cancelled: CancelCheck = None,
        order_key: OrderKey | None = None,
    ) -> Cube:
        check_cancelled(cancelled)
        order_key = needs_order_key(schema, order_key)
        q = self._query(schema, order_key)
        report(progress, 0.0)
        rows = self._run(q.sql, q.params, "cube build", progress, cancelled)
        report(progress, 1.0)
        return cube_from_columns(schema, rows_to_columns(q.columns, [tuple(r) for r in rows]))

    def contributions(
        self,
        column: str,
        schema: Schema | None = None,
        *,
        progress: Progress = None,
        cancelled: CancelCheck = None,
    ) -> Contributions:
        check_cancelled(cancelled, "count of rows per person")
        schema = contributions_schema(schema, column)
        kinds, from_clause, _ = self._typed(schema)
        q = sqlbounds.contributions_statement(schema, column, kinds, from_clause, (), sqlgen.SPARK)
        rows = self._run(q.sql, q.params, "count of rows per person", progress, cancelled)
        report(progress, 1.0)
        return contributions_from_columns(rows_to_columns(q.columns, [tuple(r) for r in rows]))

    def fingerprint(self, *, progress: Progress = None, cancelled: CancelCheck = None) -> Fingerprint:
        check_cancelled(cancelled, "fingerprint")
        df = self._frame()
        # Exact DECIMAL sums of per-row hashes: order-independent (no sort, no shuffle of rows).
        rows = self._run(
            "SELECT COUNT(*), CAST(COALESCE(SUM(CAST(xxhash64(*) AS DECIMAL(38, 0))), 0) AS STRING), "
            "CAST(COALESCE(SUM(CAST(hash(*) AS DECIMAL(38, 0))), 0) AS STRING) "
            f"FROM {self._from()}",
            (),
            "fingerprint",
            progress,
            cancelled,
        )
        count, s1, s2 = rows[0]
        h = hashlib.sha256()
        h.update(df.schema.simpleString().encode("utf-8", "surrogateescape"))
        h.update(f"\x1e{count}\x1e{s1}\x1e{s2}".encode())
        report(progress, 1.0)
        return Fingerprint(
            method="spark-checksum", digest=h.hexdigest(), row_count=int(count), caveat=FINGERPRINT_CAVEAT
        )

    def preview(self, limit: int = 1000) -> pd.DataFrame:
        import pandas as pd

        df = self._frame()
        try:
            rows = df.limit(int(limit)).collect()
        except Exception as exc:
            raise self._error(exc) from None
        return pd.DataFrame.from_records([tuple(r) for r in rows], columns=list(df.columns))
