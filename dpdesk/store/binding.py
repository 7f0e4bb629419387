"""The project's data binding: open its source, rebuild the cube, compare fingerprints.

The store never reads tables itself: it asks :func:`dpdesk.sources.open_source` (imported when first
needed), checks the schema's columns exist, and keeps only the cube and the fingerprint.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dpdesk.engine.cube import Cube
from dpdesk.engine.schema import Schema
from dpdesk.store.errors import BindingError


@dataclass(frozen=True)
class SourceBinding:
    """Where the data lives and what it looked like when bound (a fingerprint, never the rows)."""

    location: str
    table: str | None
    fingerprint_method: str
    fingerprint: str
    row_count: int | None
    out_of_domain: int
    bound_at: str

    def identity(self) -> dict[str, Any]:
        """The fields that say *which data* this is (what a rebind changes)."""
        return {
            "location": self.location,
            "table": self.table,
            "fingerprint_method": self.fingerprint_method,
            "fingerprint": self.fingerprint,
            "row_count": self.row_count,
            "out_of_domain": self.out_of_domain,
        }


@dataclass(frozen=True)
class Snapshot:
    """The source as it is now: its cube and fingerprint."""

    cube: Cube
    fingerprint_method: str
    fingerprint: str
    row_count: int | None


def open_table(location: str, table: str | None = None) -> Any:
    """The :mod:`dpdesk.sources` object for ``location``."""
    from dpdesk.sources import open_source

    return open_source(location, table=table)


def snapshot(
    location: str,
    table: str | None,
    schema: Schema,
    progress: Callable[[float], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> Snapshot:
    """Read the source now: check its columns against the schema, build the cube, fingerprint it.

    ``progress(fraction)`` hears how far (the cube build is the first half, the fingerprint the second);
    ``cancelled()`` true stops it with the source's cancellation error.
    """
    where = f"source {location}{f' table {table}' if table else ''}"
    try:
        source = open_table(location, table)
        columns = set(source.columns())
    except OSError as exc:
        raise BindingError(f"{where}: cannot read it ({exc.strerror or exc})") from None
    missing = [a.column for a in schema.attributes if a.column not in columns]
    if missing:
        raise BindingError(
            f"{where} has no column {missing[0]!r} "
            f"named by the schema (columns: {', '.join(sorted(columns))})"
        )
    try:
        half = (lambda lo: lambda f: progress(lo + f / 2)) if progress is not None else (lambda lo: None)
        cube = source.build_cube(schema, progress=half(0.0), cancelled=cancelled)
        fp = source.fingerprint(progress=half(0.5), cancelled=cancelled)
    except OSError as exc:
        raise BindingError(f"{where}: cannot read it ({exc.strerror or exc})") from None
    return Snapshot(cube, fp.method, fp.digest, fp.row_count)
