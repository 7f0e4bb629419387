"""CSV, TSV and Parquet files (one file or a glob) counted by an embedded DuckDB.

DuckDB streams the files through the generated ``GROUP BY`` (:mod:`dpdesk.sources.sqlgen`) with a memory
limit and a spill directory, so the table never has to fit in memory; only the (cell, count) rows come
back. CSV columns used by categorical attributes are read as text (so ``"02139"`` stays ``"02139"``)
and numeric ones as DOUBLE (so a late ``3.5`` in a column sniffed as integer cannot fail the read).
"""

from __future__ import annotations

import contextlib
import glob as globmod
import os
import re
import tempfile
from collections.abc import Iterator
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
    run_in_worker,
    unit_kind_checked,
)
from dpdesk.sources.fingerprint import hash_files
from dpdesk.sources.spill import SPILL_PREFIX, sweep_spill_folders

if TYPE_CHECKING:
    import pandas as pd

PARQUET_SUFFIXES = (".parquet", ".pq", ".parq")
# A CSV's header line is read by dpdesk before DuckDB sees the file: a "table" whose first line runs for
# megabytes (one line of 50 MB) or names thousands of columns is no table a schema can describe, and
# DuckDB would spend a minute and hundreds of MB finding that out.
MAX_HEADER_BYTES = 1 << 20
MAX_COLUMNS = 4096
COMPRESSION_SUFFIXES = (".gz", ".zst")
DEFAULT_MEMORY_LIMIT = "512MB"

_NUMERIC_TYPES = (
    "TINYINT",
    "SMALLINT",
    "INTEGER",
    "BIGINT",
    "HUGEINT",
    "UTINYINT",
    "USMALLINT",
    "UINTEGER",
    "UBIGINT",
    "UHUGEINT",
    "FLOAT",
    "DOUBLE",
    "REAL",
    "DECIMAL",
    "NUMERIC",
    "INT",
    "INT1",
    "INT2",
    "INT4",
    "INT8",
    "FLOAT4",
    "FLOAT8",
)
_TEXT_TYPES = ("VARCHAR", "TEXT", "STRING", "CHAR", "BPCHAR")
_FLOAT_TYPES = ("FLOAT", "DOUBLE", "REAL", "DECIMAL", "NUMERIC", "FLOAT4", "FLOAT8")


def file_format(path: str) -> str | None:
    """``"csv"``, ``"tsv"`` or ``"parquet"`` from a file name (compression suffixes ignored)."""
    low = path.lower()
    for comp in COMPRESSION_SUFFIXES:
        if low.endswith(comp):
            low = low[: -len(comp)]
    if low.endswith(PARQUET_SUFFIXES):
        return "parquet"
    if low.endswith((".tsv", ".tab")):
        return "tsv"
    if low.endswith((".csv", ".txt")):
        return "csv"
    return None


def header_fields(path: str, fmt: str) -> list[str] | None:
    """The fields of a CSV/TSV file's first line, read by Python (None for a compressed file, which
    DuckDB alone reads); a header longer than :data:`MAX_HEADER_BYTES` or with more than
    :data:`MAX_COLUMNS` fields is refused in one line before DuckDB is asked."""
    import csv

    if path.lower().endswith(COMPRESSION_SUFFIXES):
        return None
    try:
        with open(path, "rb") as f:
            head = f.read(MAX_HEADER_BYTES + 1)
    except OSError as exc:
        raise SourceError(f"cannot read {path}: {exc.strerror or exc}") from None
    line, newline, _ = head.partition(b"\n")
    if not newline and len(head) > MAX_HEADER_BYTES:
        raise SourceError(
            f"{path}: its first line is longer than {MAX_HEADER_BYTES // 2**20} MiB: not a table with a header "
            "line (one column name per field)"
        )
    text = line.decode("utf-8", errors="replace").removeprefix("\ufeff").rstrip("\r")
    try:
        fields = next(csv.reader([text], delimiter="\t" if fmt == "tsv" else ","), [])
    except csv.Error as exc:
        raise SourceError(f"{path}: cannot read its header line ({exc})") from None
    if len(fields) > MAX_COLUMNS:
        raise SourceError(
            f"{path}: its header names {len(fields):,} columns; dpdesk reads tables of at most {MAX_COLUMNS:,}"
        )
    return [f.strip() for f in fields]


def is_glob(location: str) -> bool:
    return any(ch in location for ch in "*?[")


def type_kind(type_name: str) -> str:
    base = type_name.upper().split("(")[0].strip()
    if base in _NUMERIC_TYPES:
        return "numeric"
    if base in _TEXT_TYPES:
        return "text"
    return "other"


_ARENAS_LIMITED = False


def unit_type_kind(type_name: str) -> str:
    """A privacy unit column's kind from its DuckDB type (see :func:`dpdesk.sources.base.unit_kind_checked`)."""
    base = type_name.upper().split("(")[0].strip()
    if base in _FLOAT_TYPES:
        return "float"
    if base in _NUMERIC_TYPES:
        return "integer"
    if base in ("BOOLEAN", "BOOL"):
        return "boolean"
    return "text" if base in _TEXT_TYPES else "other"


def _limit_malloc_arenas() -> None:
    """Under an address-space cap (``ulimit -v``, ``prlimit --as``) glibc's per-thread malloc arenas
    (64 MB of address space each) make DuckDB's worker threads fail to allocate, and DuckDB then crashes
    with a segmentation fault instead of raising. Two arenas are plenty for its threads."""
    global _ARENAS_LIMITED
    if _ARENAS_LIMITED:
        return
    _ARENAS_LIMITED = True
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        libc.mallopt(-8, 2)  # M_ARENA_MAX (glibc's malloc.h); absent elsewhere, hence the except
    except (OSError, AttributeError):
        pass


def _memory_limit_mb(text: str) -> float | None:
    m = re.fullmatch(r"\s*([0-9.]+)\s*([KMGT]i?B)?\s*", text, re.IGNORECASE)
    if not m:
        return None
    unit = (m.group(2) or "MB").upper().replace("I", "")
    return float(m.group(1)) * {"KB": 1 / 1024, "MB": 1, "GB": 1024, "TB": 1024 * 1024}[unit]


def memory_limit_under_cap(memory_limit: str) -> str:
    """``memory_limit``, lowered to fit an address-space cap if the process runs under one.

    DuckDB counts only its buffer pool against ``memory_limit``; Python, numpy and DuckDB's own mappings
    take about 500 MB of address space besides, so the pool gets at most a third of the cap.
    """
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError):
        return memory_limit
    if soft == resource.RLIM_INFINITY or soft <= 0:
        return memory_limit
    _limit_malloc_arenas()
    wanted = _memory_limit_mb(memory_limit)
    budget = max(64.0, soft / 2**20 / 3)
    return f"{int(min(wanted, budget) if wanted else budget)}MB"


def _glob_root(pattern: str) -> str:
    parts = []
    for part in pattern.split(os.sep):
        if is_glob(part):
            break
        parts.append(part)
    return os.sep.join(parts) or "."


class DuckDBSource(Source):
    """A CSV/TSV/Parquet file or glob of files, counted by DuckDB without loading it."""

    kind = "duckdb"

    def __init__(
        self, location: str, *, memory_limit: str = DEFAULT_MEMORY_LIMIT, threads: int | None = None
    ):
        self.location = location
        self.table = None
        self.memory_limit = memory_limit
        self.threads = threads
        fmt = file_format(location)
        if fmt is None:
            raise SourceError(f"{location}: not a CSV, TSV or Parquet file name")
        require_extra("duckdb", None, "reading CSV and Parquet files")
        self.format = fmt
        if is_glob(location):
            files = sorted(f for f in globmod.glob(location, recursive=True) if os.path.isfile(f))
            if not files:
                raise SourceError(f"no files match {location}")
            self.root: str | None = _glob_root(location)
        else:
            if not os.path.exists(location):
                raise SourceError(f"no such file: {location}")
            if not os.path.isfile(location):
                raise SourceError(f"not a file: {location}")
            files = [location]
            self.root = None
        self.files = [os.path.abspath(f) for f in files]
        self._types: dict[str, str] | None = None
        self._header = header_fields(files[0], self.format) if fmt != "parquet" else None

    # --- DuckDB plumbing ---------------------------------------------------------------------------

    def _connect(self, temp_dir: str) -> Any:
        import duckdb

        config: dict[str, Any] = {
            "memory_limit": memory_limit_under_cap(self.memory_limit),
            "temp_directory": temp_dir,
            "preserve_insertion_order": False,  # lets scans stream without buffering for order
        }
        if self.threads:
            config["threads"] = int(self.threads)
        con = duckdb.connect(":memory:", config=config)
        con.execute("SET enable_progress_bar = true")  # needed for query_progress(); nothing is printed
        con.execute("SET enable_progress_bar_print = false")
        return con

    @contextlib.contextmanager
    def _session(self) -> Iterator[Any]:
        """One DuckDB database for one operation (describe + count share it: opening one costs ~0.1 s)."""
        sweep_spill_folders()
        with tempfile.TemporaryDirectory(prefix=f"{SPILL_PREFIX}{os.getpid()}-") as tmp:
            con = self._connect(tmp)
            try:
                yield con
            finally:
                con.close()

    def _from(self, types: dict[str, str] | None = None) -> tuple[str, tuple[Any, ...]]:
        files: Any = self.files if len(self.files) > 1 else self.files[0]
        if self.format == "parquet":
            return "read_parquet(?)", (files,)
        args, params = ["?"], [files]
        if self.format == "tsv":
            args.append("delim = ?")
            params.append("\t")
        args.append("header = true")
        if types:
            args.append("types = ?")
            params.append(types)
        return f"read_csv({', '.join(args)})", tuple(params)

    def _error(self, exc: Exception) -> SourceError:
        what = "Parquet file" if self.format == "parquet" else "file"
        return SourceError(f"cannot read {what} {self.location}: {one_line(exc)}")

    def _run(
        self, con: Any, sql: str, params: tuple[Any, ...], progress: Progress, cancelled: CancelCheck
    ) -> Any:
        """Run one statement in a worker thread while this thread reports progress and watches cancel."""
        import duckdb

        def poll() -> None:
            pct = con.query_progress()
            if pct >= 0:
                report(progress, pct / 100.0)

        try:
            return run_in_worker(
                lambda: con.execute(sql, list(params)).fetchnumpy(),
                name="dpdesk-duckdb",
                interrupt=con.interrupt,
                cancelled=cancelled,
                poll=poll if progress is not None else None,
            )
        except duckdb.InterruptException:
            raise Cancelled("cube build cancelled") from None
        except duckdb.Error as exc:
            raise self._error(exc) from None

    def _column_types(self, con: Any = None) -> dict[str, str]:
        if self._types is None:
            if con is None:
                with self._session() as own:
                    return self._column_types(own)
            import duckdb

            try:
                from_sql, params = self._from()
                rows = con.execute(f"DESCRIBE SELECT * FROM {from_sql}", list(params)).fetchall()
            except duckdb.Error as exc:
                raise self._error(exc) from None
            types = {str(r[0]): str(r[1]) for r in rows}
            head = self._header
            if head is not None and len(set(head)) == len(head) and all(head) and list(types) != head:
                shown = ", ".join(repr(c) for c in list(types)[:5]) + (", …" if len(types) > 5 else "")
                raise SourceError(
                    f"{self.location}: its header names {len(head)} column(s) ({', '.join(head[:5])}"
                    f"{', …' if len(head) > 5 else ''}) but its rows do not match it (read as {shown}): "
                    f"check the delimiter, the quoting, and that every row has {len(head)} field(s)"
                )
            self._types = types
        return self._types

    def _typed(
        self, schema: Schema, con: Any = None
    ) -> tuple[dict[str, str], str, tuple[Any, ...], str | None]:
        """Column kinds, the FROM clause and its parameters, and the privacy unit column's kind, with the
        columns checked against ``schema``."""
        types = self._column_types(con)
        kinds = {c: type_kind(t) for c, t in types.items()}
        column_kinds_checked(schema, kinds, self.location, types)
        overrides = None
        ucol = schema.unit.column
        unit_kind = None
        if ucol is not None:
            unit_kind = unit_kind_checked(schema, unit_type_kind(types[ucol]), self.location, types[ucol])
        if self.format != "parquet":
            # CSV: read as the schema means them (an identifier as text, so "007" stays "007")
            overrides = {m.column: "DOUBLE" for m in schema.measures}
            overrides.update(
                {a.column: ("VARCHAR" if a.kind == "categorical" else "DOUBLE") for a in schema.attributes}
            )
            kinds = dict(kinds)
            for m in schema.measures:
                kinds[m.column] = "numeric"
            for a in schema.attributes:
                kinds[a.column] = "text" if a.kind == "categorical" else "numeric"
            if ucol is not None:
                overrides.setdefault(ucol, "VARCHAR")
                read_as = "text" if overrides[ucol] == "VARCHAR" else "float"
                unit_kind = unit_kind_checked(schema, read_as, self.location, overrides[ucol])
        from_sql, from_params = self._from(overrides)
        return kinds, from_sql, from_params, unit_kind

    def _query(self, schema: Schema, con: Any = None, order_key: OrderKey | None = None) -> sqlgen.CubeQuery:
        kinds, from_sql, from_params, unit_kind = self._typed(schema, con)
        return sqlbounds.cube_statement(
            schema, kinds, from_sql, from_params, sqlgen.DUCKDB, unit_kind=unit_kind, order_key=order_key
        )

    # --- the Source interface ------------------------------------------------------------------------

    def columns(self) -> list[str]:
        return list(self._column_types())

    def sql(self, schema: Schema) -> str:
        return self._query(schema, order_key=SHOWN_ORDER_KEY).display()

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
        with self._session() as con:
            q = self._query(schema, con, order_key)
            report(progress, 0.0)
            out = self._run(con, q.sql, q.params, progress, cancelled)
        report(progress, 1.0)
        return cube_from_columns(schema, out)

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
        with self._session() as con:
            kinds, from_sql, from_params, _ = self._typed(schema, con)
            q = sqlbounds.contributions_statement(schema, column, kinds, from_sql, from_params, sqlgen.DUCKDB)
            out = self._run(con, q.sql, q.params, progress, cancelled)
        report(progress, 1.0)
        return contributions_from_columns(out)

    def fingerprint(self, *, progress: Progress = None, cancelled: CancelCheck = None) -> Fingerprint:
        def hashing(f: float) -> None:
            report(progress, 0.9 * f)

        method, digest = hash_files(self.files, self.root, progress=hashing, cancelled=cancelled)
        from_sql, params = self._from()
        with self._session() as con:
            out = self._run(con, f"SELECT COUNT(*) AS n FROM {from_sql}", params, None, cancelled)
        report(progress, 1.0)
        return Fingerprint(method=method, digest=digest, row_count=int(out["n"][0]))

    def preview(self, limit: int = 1000) -> pd.DataFrame:
        """The first rows as the cube reads them: a column DuckDB would guess to be BOOLEAN (``true``/
        ``false``, ``Yes``/``No``) shows the text a categorical attribute matches — the file's own words
        in a CSV, DuckDB's ``true``/``false`` in Parquet — never Python's ``True``/``False``, which no
        declared value would match."""
        import duckdb

        with self._session() as con:
            try:
                types = self._column_types(con)
                flags = [c for c, t in types.items() if t.upper() == "BOOLEAN"]
                if self.format != "parquet":
                    from_sql, params = self._from({c: "VARCHAR" for c in flags} or None)
                    select = "*"
                else:
                    from_sql, params = self._from()
                    select = ", ".join(
                        f"CAST({sqlgen.quote_ident(c)} AS VARCHAR) AS {sqlgen.quote_ident(c)}"
                        if c in flags
                        else sqlgen.quote_ident(c)
                        for c in types
                    )
                return con.execute(f"SELECT {select} FROM {from_sql} LIMIT ?", [*params, int(limit)]).df()
            except duckdb.Error as exc:
                raise self._error(exc) from None
