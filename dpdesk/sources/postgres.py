"""A table or view on a PostgreSQL server, counted by the server (psycopg 3).

The generated ``GROUP BY`` (:mod:`dpdesk.sources.sqlgen`) runs in a read-only transaction on the server;
only (cell, count) rows cross the network. The source's ``location`` is the connection URL with any
password removed, so it can be shown and recorded; the full URL stays private to this object.

PostgreSQL has no file to hash, so the fingerprint is best effort (see :data:`FINGERPRINT_CAVEAT`).
"""

from __future__ import annotations

import hashlib
import urllib.parse
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

if TYPE_CHECKING:
    import pandas as pd

URL_SCHEMES = ("postgresql://", "postgres://")
CONNECT_TIMEOUT_S = 10
_RELKINDS = ("r", "v", "m", "p", "f")  # tables, views, materialized views, partitioned and foreign tables

FINGERPRINT_CAVEAT = (
    "best effort: a server table has no file to hash, so this is the row count plus an order-independent "
    "sum of the md5 of every row's text form (under fixed DateStyle/TimeZone/float settings); it detects "
    "changed, added or removed rows but is not a cryptographic commitment, and the data may change between "
    "this checksum and a cube build"
)

# The text form of a row depends on session settings; pin them so the checksum is reproducible.
_STABLE_TEXT_SETTINGS = (
    "SET LOCAL DateStyle = 'ISO, YMD'",
    "SET LOCAL TimeZone = 'UTC'",
    "SET LOCAL IntervalStyle = 'iso_8601'",
    "SET LOCAL extra_float_digits = 1",
    "SET LOCAL bytea_output = 'hex'",
)


def redact(url: str) -> str:
    """``url`` without its password (in the user part or a ``password=`` query parameter)."""
    parts = urllib.parse.urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}@{host}" if user else host
    query = urllib.parse.urlencode(
        [
            (k, v)
            for k, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
            if k.lower() != "password"
        ]
    )
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _category_kind(typcategory: str) -> str:
    return {"N": "numeric", "S": "text"}.get(typcategory, "other")


def _unit_kind(type_name: str, typcategory: str) -> str:
    if typcategory == "N":
        return "integer" if type_name in ("smallint", "integer", "bigint") else "float"
    return {"S": "text", "B": "boolean"}.get(typcategory, "other")


class PostgresSource(Source):
    """A table or view (``table``, optionally ``schema.table``) behind a ``postgresql://`` URL."""

    kind = "postgresql"

    def __init__(self, url: str, table: str | None):
        if not url.startswith(URL_SCHEMES):
            raise SourceError(f"{redact(url)}: not a postgresql:// URL")
        if not table:
            raise SourceError(f"{redact(url)}: name the table or view to count (--table)")
        require_extra("psycopg", "postgresql", "a PostgreSQL source")
        self._url = url
        self.location = redact(url)
        self.table = table
        parts = urllib.parse.urlsplit(url)
        self._user = urllib.parse.unquote(parts.username or "") or None
        self._where = f"{parts.hostname or 'localhost'}:{parts.port or 5432}"

    # --- connection and metadata ---------------------------------------------------------------------

    def _connect(self) -> Any:
        import psycopg

        try:
            con = psycopg.connect(
                self._url, connect_timeout=CONNECT_TIMEOUT_S, cursor_factory=psycopg.RawCursor
            )
        except psycopg.OperationalError as exc:
            msg = one_line(exc)
            low = str(exc).lower()
            if (
                "password authentication failed" in low
                or "authentication failed" in low
                or "no password supplied" in low
            ):
                who = f"user {self._user!r}" if self._user else "the login"
                raise SourceError(f"PostgreSQL at {self._where} refused {who}: {msg}") from None
            raise SourceError(f"cannot connect to PostgreSQL at {self._where}: {msg}") from None
        except psycopg.Error as exc:
            raise SourceError(f"cannot connect to PostgreSQL at {self._where}: {one_line(exc)}") from None
        con.read_only = True  # the curator's database is never written to
        return con

    def _fail(self, exc: Exception) -> SourceError:
        return SourceError(f"PostgreSQL {self.location} table {self.table!r}: {one_line(exc)}")

    def _resolve(self, con: Any) -> tuple[int, str]:
        """(oid, quoted qualified name) of the table; a SourceError listing visible tables otherwise."""
        assert self.table is not None
        kinds = list(_RELKINDS)
        cur = con.execute(
            "SELECT c.oid, n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE c.relkind = ANY($1) AND c.relname = $2 AND pg_table_is_visible(c.oid)",
            (kinds, self.table),
        )
        row = cur.fetchone()
        if row is None and "." in self.table:
            schema_name, rel = self.table.split(".", 1)
            row = con.execute(
                "SELECT c.oid, n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE c.relkind = ANY($1) AND n.nspname = $2 AND c.relname = $3",
                (kinds, schema_name, rel),
            ).fetchone()
        if row is None:
            names = [
                r[0]
                for r in con.execute(
                    "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE c.relkind = ANY($1) AND pg_table_is_visible(c.oid) "
                    "AND n.nspname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1 LIMIT 41",
                    (kinds,),
                ).fetchall()
            ]
            shown = ", ".join(map(repr, names[:40])) + (", ..." if len(names) > 40 else "")
            raise SourceError(
                f"no table or view {self.table!r} in PostgreSQL {self.location} (tables: {shown or 'none'})"
            )
        oid, nsp, rel = row
        return int(oid), f"{sqlgen.quote_ident(nsp)}.{sqlgen.quote_ident(rel)}"

    def _columns(self, con: Any, oid: int) -> list[tuple[str, str, str]]:
        return [
            (str(r[0]), str(r[1]), str(r[2]))
            for r in con.execute(
                "SELECT a.attname, format_type(a.atttypid, a.atttypmod), t.typcategory "
                "FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
                "WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
                (oid,),
            ).fetchall()
        ]

    def _query(self, con: Any, schema: Schema, order_key: OrderKey | None = None) -> sqlgen.CubeQuery:
        oid, qualified = self._resolve(con)
        cols = self._columns(con, oid)
        kinds = {name: _category_kind(cat) for name, _, cat in cols}
        where = f"PostgreSQL table {self.table!r}"
        column_kinds_checked(schema, kinds, where, {n: t for n, t, _ in cols})
        unit_kind = None
        if schema.unit.column is not None:
            name, tname, cat = next(c for c in cols if c[0] == schema.unit.column)
            unit_kind = unit_kind_checked(schema, _unit_kind(tname, cat), where, tname)
        return sqlbounds.cube_statement(
            schema, kinds, qualified, (), sqlgen.POSTGRESQL, unit_kind=unit_kind, order_key=order_key
        )

    def _with(self, fn: Any) -> Any:
        import psycopg

        con = self._connect()
        try:
            return fn(con)
        except psycopg.Error as exc:
            raise self._fail(exc) from None
        finally:
            con.close()

    def _run(
        self, con: Any, sql: str, params: tuple[Any, ...], cancelled: CancelCheck
    ) -> list[tuple[Any, ...]]:
        """Run one statement in a worker thread; cancel it on the server when ``cancelled()`` turns True."""
        import psycopg

        try:
            return run_in_worker(
                lambda: con.execute(sql, params).fetchall(),
                name="dpdesk-postgres",
                interrupt=con.cancel_safe,
                cancelled=cancelled,
            )
        except psycopg.errors.QueryCanceled:
            if cancelled is not None and cancelled():
                raise Cancelled("cube build cancelled") from None
            raise

    # --- the Source interface ------------------------------------------------------------------------

    def columns(self) -> list[str]:
        return self._with(lambda con: [name for name, _, _ in self._columns(con, self._resolve(con)[0])])

    def sql(self, schema: Schema) -> str:
        return self._with(lambda con: self._query(con, schema, SHOWN_ORDER_KEY).display())

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

        def go(con: Any) -> dict[str, list[Any]]:
            q = self._query(con, schema, order_key)
            report(progress, 0.0)  # the server reports no progress for one statement
            return rows_to_columns(q.columns, self._run(con, q.sql, q.params, cancelled))

        columns = self._with(go)
        report(progress, 1.0)
        return cube_from_columns(schema, columns)

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

        def go(con: Any) -> dict[str, list[Any]]:
            self._query(con, schema, SHOWN_ORDER_KEY)  # the columns checked as for a cube
            oid, qualified = self._resolve(con)
            kinds = {name: _category_kind(cat) for name, _, cat in self._columns(con, oid)}
            q = sqlbounds.contributions_statement(schema, column, kinds, qualified, (), sqlgen.POSTGRESQL)
            return rows_to_columns(q.columns, self._run(con, q.sql, q.params, cancelled))

        columns = self._with(go)
        report(progress, 1.0)
        return contributions_from_columns(columns)

    def fingerprint(self, *, progress: Progress = None, cancelled: CancelCheck = None) -> Fingerprint:
        check_cancelled(cancelled, "fingerprint")

        def go(con: Any) -> tuple[list[tuple[str, str, str]], tuple[Any, ...]]:
            oid, qualified = self._resolve(con)
            cols = self._columns(con, oid)
            for statement in _STABLE_TEXT_SETTINGS:
                con.execute(statement)
            # Two 60-bit slices of each row's md5, summed exactly (numeric): order-independent, so no sort.
            rows = self._run(
                con,
                "SELECT COUNT(*), "
                "COALESCE(SUM(('x' || substr(h, 1, 15))::bit(60)::bigint), 0)::text, "
                "COALESCE(SUM(('x' || substr(h, 16, 15))::bit(60)::bigint), 0)::text "
                f"FROM (SELECT md5(CAST(t AS text)) AS h FROM {qualified} AS t) AS hashed",
                (),
                cancelled,
            )
            return cols, rows[0]

        cols, (count, s1, s2) = self._with(go)
        h = hashlib.sha256()
        h.update("\x1f".join(f"{n}:{t}" for n, t, _ in cols).encode())
        h.update(f"\x1e{count}\x1e{s1}\x1e{s2}".encode())
        report(progress, 1.0)
        return Fingerprint(
            method="postgresql-checksum",
            digest=h.hexdigest(),
            row_count=int(count),
            caveat=FINGERPRINT_CAVEAT,
        )

    def preview(self, limit: int = 1000) -> pd.DataFrame:
        import pandas as pd

        def go(con: Any) -> pd.DataFrame:
            _, qualified = self._resolve(con)
            cur = con.execute(f"SELECT * FROM {qualified} LIMIT $1", (int(limit),))
            return pd.DataFrame(cur.fetchall(), columns=[d.name for d in cur.description])

        return self._with(go)
