"""A table or view in an SQLite database file, counted by SQLite itself (stdlib ``sqlite3``).

The same generated ``GROUP BY`` as DuckDB's runs inside SQLite on a read-only connection; only
(cell, count) rows come back. SQLite's column types are affinities, not rules: a column declared with
no type may hold anything, so such columns are matched both by number and by text form, and text in a
numeric column is simply out of domain (as the engine's binning treats it).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

from dpdesk.engine.contributions import Contributions
from dpdesk.engine.cube import Cube
from dpdesk.engine.errors import Cancelled, DpdeskError
from dpdesk.engine.schema import Schema
from dpdesk.engine.truncation import PRIME, OrderKey, value_number
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
    rows_to_columns,
    unit_kind_checked,
)
from dpdesk.sources.fingerprint import hash_files

if TYPE_CHECKING:
    import pandas as pd

_PROGRESS_EVERY = 20_000  # SQLite VM instructions between cancel checks


def affinity_kind(declared: str) -> str:
    """The kind of a column from its declared type, by SQLite's affinity rules (§3.1 of its docs)."""
    t = (declared or "").upper()
    if "INT" in t:
        return "numeric"
    if "CHAR" in t or "CLOB" in t or "TEXT" in t:
        return "text"
    if "BLOB" in t or not t:
        return "any"
    return "numeric"  # REAL, FLOA, DOUB and NUMERIC affinity


def _connect_readonly(location: str) -> sqlite3.Connection:
    uri = Path(location).resolve().as_uri() + "?mode=ro"  # file:///C:/... on Windows
    try:
        return sqlite3.connect(uri, uri=True)
    except sqlite3.Error as exc:
        raise SourceError(f"cannot open SQLite file {location}: {one_line(exc)}") from None


def _table_names(con: sqlite3.Connection, location: str) -> list[str]:
    try:
        rows = con.execute(
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') ORDER BY name"
        ).fetchall()
    except sqlite3.DatabaseError as exc:
        raise SourceError(f"cannot read SQLite file {location}: {one_line(exc)}") from None
    return [r[0] for r in rows]


def table_names(location: str) -> list[str]:
    """The tables and views of the SQLite file ``location``, by name (to choose the one to count)."""
    con = _connect_readonly(location)
    try:
        return _table_names(con, location)
    finally:
        con.close()


class SQLiteSource(Source):
    kind = "sqlite"

    def __init__(self, location: str, table: str | None):
        if not os.path.exists(location):
            raise SourceError(f"no such file: {location}")
        if not os.path.isfile(location):
            raise SourceError(f"not a file: {location}")
        if not table:
            raise SourceError(f"{location}: name the table or view to count (--table)")
        self.location = location
        self.table = table

    def _connect(self) -> sqlite3.Connection:
        return _connect_readonly(self.location)

    def _resolve(self, con: sqlite3.Connection) -> str:
        """The table's real name (SQLite names are case-insensitive) or a SourceError listing tables."""
        names = _table_names(con, self.location)
        assert self.table is not None
        for n in names:
            if n == self.table:
                return n
        for n in names:
            if n.lower() == self.table.lower():
                return n
        raise SourceError(
            f"no table or view {self.table!r} in {self.location} (tables: {', '.join(map(repr, names)) or 'none'})"
        )

    def _column_types(self, con: sqlite3.Connection) -> dict[str, str]:
        name = self._resolve(con)
        rows = con.execute("SELECT name, type FROM pragma_table_info(?)", (name,)).fetchall()
        return {str(r[0]): str(r[1] or "") for r in rows}

    def _query(
        self, con: sqlite3.Connection, schema: Schema, order_key: OrderKey | None = None
    ) -> sqlgen.CubeQuery:
        types = self._column_types(con)
        kinds = {c: affinity_kind(t) for c, t in types.items()}
        check = {c: ("numeric" if k == "any" else k) for c, k in kinds.items()}
        where = f"{self.location} table {self.table!r}"
        column_kinds_checked(schema, check, where, {c: t or "no declared type" for c, t in types.items()})
        unit_kind = None
        ucol = schema.unit.column
        if ucol is not None:  # SQLite types values, not columns: each identifier is numbered by itself
            declared = types[ucol].upper()
            floats = any(t in declared for t in ("REAL", "FLOA", "DOUB")) and "INT" not in declared
            unit_kind = unit_kind_checked(schema, "float" if floats else "any", where, types[ucol])
        return sqlbounds.cube_statement(
            schema,
            kinds,
            sqlgen.quote_ident(self._resolve(con)),
            (),
            sqlgen.SQLITE,
            unit_kind=unit_kind,
            order_key=order_key,
        )

    def _register_unit(self, con: sqlite3.Connection, schema: Schema) -> list[str]:
        """Register the identifier-numbering function; the returned list collects a refused value."""
        problems: list[str] = []
        where = f"the privacy unit's column {schema.unit.column!r} in {self.location} table {self.table!r}"

        def number(value: object) -> int | None:
            try:
                n = value_number(value, where)
            except DpdeskError as exc:
                if not problems:
                    problems.append(str(exc))
                return None
            return None if n is None else n % PRIME

        con.create_function(sqlbounds.SQLITE_UNIT_FUNCTION, 1, number, deterministic=True)
        return problems

    def columns(self) -> list[str]:
        con = self._connect()
        try:
            return list(self._column_types(con))
        finally:
            con.close()

    def sql(self, schema: Schema) -> str:
        con = self._connect()
        try:
            return self._query(con, schema, SHOWN_ORDER_KEY).display()
        finally:
            con.close()

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
        con = self._connect()
        try:
            q = self._query(con, schema, order_key)
            problems = self._register_unit(con, schema) if schema.unit.column is not None else []
            report(progress, 0.0)
            if cancelled is not None:
                con.set_progress_handler(lambda: 1 if cancelled() else 0, _PROGRESS_EVERY)
            try:
                rows = con.execute(q.sql, q.params).fetchall()
            except sqlite3.OperationalError as exc:
                if cancelled is not None and cancelled():
                    raise Cancelled("cube build cancelled") from None
                raise SourceError(
                    f"cannot count {self.location} table {self.table!r}: {one_line(exc)}"
                ) from None
            except sqlite3.DatabaseError as exc:
                raise SourceError(f"cannot read SQLite file {self.location}: {one_line(exc)}") from None
        finally:
            con.close()
        if problems:
            raise SourceError(problems[0])
        report(progress, 1.0)
        return cube_from_columns(schema, rows_to_columns(q.columns, rows))

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
        con = self._connect()
        try:
            self._query(con, schema, SHOWN_ORDER_KEY)  # the columns checked as for a cube
            types = self._column_types(con)
            kinds = {c: affinity_kind(t) for c, t in types.items()}
            q = sqlbounds.contributions_statement(
                schema, column, kinds, sqlgen.quote_ident(self._resolve(con)), (), sqlgen.SQLITE
            )
            if cancelled is not None:
                con.set_progress_handler(lambda: 1 if cancelled() else 0, _PROGRESS_EVERY)
            try:
                rows = con.execute(q.sql, q.params).fetchall()
            except sqlite3.OperationalError as exc:
                if cancelled is not None and cancelled():
                    raise Cancelled("count of rows per person cancelled") from None
                raise SourceError(
                    f"cannot count {self.location} table {self.table!r}: {one_line(exc)}"
                ) from None
        finally:
            con.close()
        report(progress, 1.0)
        return contributions_from_columns(rows_to_columns(q.columns, rows))

    def fingerprint(self, *, progress: Progress = None, cancelled: CancelCheck = None) -> Fingerprint:
        method, digest = hash_files(
            [self.location], progress=lambda f: report(progress, 0.9 * f), cancelled=cancelled
        )
        con = self._connect()
        try:
            name = self._resolve(con)
            n = con.execute(f"SELECT COUNT(*) FROM {sqlgen.quote_ident(name)}").fetchone()[0]
        finally:
            con.close()
        caveat = None
        if os.path.exists(self.location + "-wal"):
            caveat = "the database has an uncheckpointed write-ahead log (-wal file) that the file hash does not cover"
        report(progress, 1.0)
        return Fingerprint(method=method, digest=digest, row_count=int(n), caveat=caveat)

    def preview(self, limit: int = 1000) -> pd.DataFrame:
        import pandas as pd

        con = self._connect()
        try:
            name = self._resolve(con)
            cur = con.execute(f"SELECT * FROM {sqlgen.quote_ident(name)} LIMIT ?", (int(limit),))
            return pd.DataFrame(cur.fetchall(), columns=[d[0] for d in cur.description])
        finally:
            con.close()
