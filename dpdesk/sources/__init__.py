"""Reading tables and building cubes: one :class:`Source` interface, several engines.

``open_source(location, table=None)`` picks the engine from the location: CSV/TSV/Parquet files or globs
go to DuckDB, Excel workbooks to pandas, ``.sqlite``/``.db`` files to SQLite, ``postgresql://`` URLs to the
server, ``sc://HOST:PORT`` (Spark Connect) and ``spark://MASTER`` to Spark. In-memory tables use :class:`DataFrameSource`. Engines are imported only
when used; an engine from an extra that is not installed is a one-line SourceError naming the extra
(``dpdesk[postgresql]``, ``dpdesk[excel]``, ``dpdesk[spark]``).
"""

from __future__ import annotations

import os

from dpdesk.sources.base import Fingerprint, Source, SourceError
from dpdesk.sources.pandas_source import DataFrameSource

__all__ = ["DataFrameSource", "Fingerprint", "Source", "SourceError", "is_sqlite_file", "open_source"]

EXCEL_SUFFIXES = (".xlsx", ".xlsm", ".xls")
SQLITE_SUFFIXES = (".sqlite", ".sqlite3", ".db", ".db3")


def is_sqlite_file(location: str) -> bool:
    """Whether ``location`` names an SQLite database by its ending (its table must then be chosen)."""
    return location.lower().endswith(SQLITE_SUFFIXES)


def open_source(location: str, *, table: str | None = None) -> Source:
    """The :class:`Source` for ``location`` (a path, a glob, a ``postgresql://`` URL, ``sc://HOST:PORT`` or
    ``spark://MASTER``).

    ``table`` names the table or view inside a database (required for SQLite, PostgreSQL and Spark; for
    Spark it may also be a Parquet/CSV/Delta path) or the worksheet of an Excel workbook (optional).
    Raises :class:`SourceError` for a missing file, an unknown file type, a missing table name or a
    missing optional package.
    """
    if not isinstance(location, str) or not location.strip():
        raise SourceError(
            "no source given: name a file, a glob, a postgresql:// URL, sc://HOST:PORT or spark://MASTER"
        )
    low = location.lower()
    if low.startswith(("spark://", "sc://")):
        from dpdesk.sources.spark import SparkSource

        return SparkSource(location, table)
    if low.startswith(("postgresql://", "postgres://")):
        from dpdesk.sources.postgres import PostgresSource

        return PostgresSource(location, table)
    location = os.path.expanduser(location)
    from dpdesk.sources.duck import file_format

    if low.endswith(EXCEL_SUFFIXES):
        from dpdesk.sources.pandas_source import ExcelSource

        return ExcelSource(location, table)
    if low.endswith(SQLITE_SUFFIXES):
        from dpdesk.sources.sqlite_source import SQLiteSource

        return SQLiteSource(location, table)
    if file_format(location) is not None:
        from dpdesk.sources.duck import DuckDBSource

        if table:
            raise SourceError(f"{location}: --table applies to databases and workbooks, not to files")
        return DuckDBSource(location)
    raise SourceError(
        f"{location}: unknown source type (expected .csv, .tsv, .parquet, a glob of those, .xlsx, "
        ".sqlite/.db, a postgresql:// URL, sc://HOST:PORT or spark://MASTER)"
    )
