"""The one interface every table source implements, and the pieces sources share.

A :class:`Source` turns a table (a file, a glob of files, a database table or view, a DataFrame) into the
count :class:`~dpdesk.engine.cube.Cube` of a declared :class:`~dpdesk.engine.schema.Schema`, including the
out-of-domain count, and fingerprints the table for the project file. Sources that can push the
``GROUP BY`` down to an engine (DuckDB, SQLite, PostgreSQL) bring back only cell counts; no row ever
reaches Python. Every error a curator can cause is a one-line :class:`SourceError`.
"""

from __future__ import annotations

import abc
import importlib
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from dpdesk.engine.cube import Cube
from dpdesk.engine.errors import Cancelled, DpdeskError
from dpdesk.engine.schema import Schema

if TYPE_CHECKING:  # pandas is only needed by callers of preview()
    import pandas as pd

Progress = Callable[[float], None] | None
CancelCheck = Callable[[], bool] | None
T = TypeVar("T")


class SourceError(DpdeskError):
    """A table cannot be read or does not fit the schema (missing file, column, type, server, login)."""


@dataclass(frozen=True)
class Fingerprint:
    """What identifies the table a cube was built from.

    ``method`` names how ``digest`` was computed (``"sha256"`` for one file, ``"sha256-files"`` for a glob,
    ``"pandas-hash"`` for an in-memory table, ``"postgresql-checksum"`` for a server table). ``caveat``
    is set when the fingerprint is best effort and says why; a front end shows it to the curator.
    """

    method: str
    digest: str
    row_count: int | None
    caveat: str | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "method": self.method,
            "digest": self.digest,
            "row_count": self.row_count,
            "caveat": self.caveat,
        }


class Source(abc.ABC):
    """A table that can be counted into a cube.

    ``kind`` is ``"duckdb"``, ``"pandas"``, ``"sqlite"`` or ``"postgresql"``; ``location`` is what the
    curator named (a path, a glob, or a URL with any password removed); ``table`` the table or view
    inside a database, if any.
    """

    kind: str
    location: str
    table: str | None = None

    @abc.abstractmethod
    def columns(self) -> list[str]:
        """The table's column names, in table order."""

    @abc.abstractmethod
    def build_cube(self, schema: Schema, *, progress: Progress = None, cancelled: CancelCheck = None) -> Cube:
        """Count the table's rows into ``schema``'s cells; rows with any attribute out of domain (or
        missing) go to ``Cube.out_of_domain``."""

    @abc.abstractmethod
    def fingerprint(self, *, progress: Progress = None, cancelled: CancelCheck = None) -> Fingerprint:
        """Identify the table's content (and row count) for the project file."""

    @abc.abstractmethod
    def preview(self, limit: int = 1000) -> pd.DataFrame:
        """The first ``limit`` rows. Private: for the curator's eyes only."""

    def sql(self, schema: Schema) -> str:
        """The generated ``GROUP BY`` with its parameters (for ``dpdesk cube --show-sql``)."""
        raise SourceError(f"{self.kind} sources do not run SQL; there is nothing to show for {self.location}")

    def describe(self) -> dict[str, object]:
        return {"kind": self.kind, "location": self.location, "table": self.table}

    def __repr__(self) -> str:
        table = f", table={self.table!r}" if self.table else ""
        return f"{type(self).__name__}({self.location!r}{table})"


# --- helpers shared by the implementations -------------------------------------------------------------


def one_line(exc: BaseException | str) -> str:
    """The first non-empty line of an exception's message (engines like multi-line messages)."""
    text = str(exc)
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return type(exc).__name__ if isinstance(exc, BaseException) else text


def require_extra(module: str, extra: str | None, what: str) -> Any:
    """Import ``module`` or raise a one-line SourceError naming the dpdesk extra that installs it.

    ``extra`` is None for a package every install of dpdesk brings (then the install is damaged).
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.split(".")[0]
        missing = getattr(exc, "name", None) or top
        detail = "" if missing.split(".")[0] == top else f" (importing it failed: {one_line(exc)})"
        if extra is None:
            raise SourceError(
                f"{what} needs the Python package {top!r}, which every install of dpdesk brings{detail}; "
                "reinstall dpdesk (pip install --force-reinstall dpdesk)"
            ) from None
        raise SourceError(
            f"{what} needs the optional package {top!r}{detail}: install it with "
            f"pip install 'dpdesk[{extra}]'"
        ) from None


def check_cancelled(cancelled: CancelCheck, what: str = "cube build") -> None:
    if cancelled is not None and cancelled():
        raise Cancelled(f"{what} cancelled")


def report(progress: Progress, fraction: float) -> None:
    if progress is not None:
        progress(min(1.0, max(0.0, float(fraction))))


def run_in_worker(
    work: Callable[[], T],
    *,
    name: str,
    interrupt: Callable[[], object],
    cancelled: CancelCheck,
    poll: Callable[[], object] | None = None,
) -> T:
    """``work()`` in a daemon thread while this thread watches: once ``cancelled()`` turns True it calls
    ``interrupt()`` (the engine's own way to stop a statement), waits and raises Cancelled; between
    checks it calls ``poll()`` (progress). An exception raised by ``work`` is raised here.

    An engine forgets an interrupt that comes before its statement starts (DuckDB and PostgreSQL stop
    only the statement running then), and on a loaded machine the worker may not have reached it when
    Cancel is asked; so the interrupt is repeated every 0.1 s until the worker ends."""
    result: dict[str, Any] = {}

    def target() -> None:
        try:
            result["value"] = work()
        except BaseException as exc:  # handed to the calling thread
            result["error"] = exc

    worker = threading.Thread(target=target, name=name, daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(0.1)
        if cancelled is not None and worker.is_alive() and cancelled():
            while worker.is_alive():
                interrupt()
                worker.join(0.1)
            raise Cancelled("cube build cancelled")
        if poll is not None and worker.is_alive():
            poll()
    if "error" in result:
        raise result["error"]
    return result["value"]


def column_kinds_checked(
    schema: Schema, kinds: Mapping[str, str], where: str, type_names: Mapping[str, str] | None = None
) -> None:
    """Raise a one-line SourceError if a schema column is missing or a numeric attribute sits on text.

    ``kinds`` maps each table column to ``"numeric"``, ``"text"`` or ``"other"`` (dates, booleans, ...).
    """
    available = list(kinds)
    for a in schema.attributes:
        if a.column not in kinds:
            shown = ", ".join(repr(c) for c in available[:40]) + (", ..." if len(available) > 40 else "")
            raise SourceError(
                f"attribute '{a.name}': column {a.column!r} is not in {where} (columns: {shown})"
            )
        kind = kinds[a.column]
        if a.kind == "numeric" and kind != "numeric":
            tname = f" ({type_names[a.column]})" if type_names and a.column in type_names else ""
            what = "text" if kind == "text" else "non-numeric values"
            raise SourceError(
                f"attribute '{a.name}' is numeric but column {a.column!r} in {where} holds {what}{tname}; "
                "declare it categorical or convert the column to numbers"
            )


def cube_from_cell_counts(
    schema: Schema, cells: Iterable[int] | np.ndarray, counts: Iterable[int] | np.ndarray
) -> Cube:
    """Assemble a Cube from the (cell, count) rows a ``GROUP BY`` returned; cell -1 is out of domain."""
    cells = np.asarray(cells, dtype=np.int64).reshape(-1)
    counts = np.asarray(counts, dtype=np.int64).reshape(-1)
    flat = np.zeros(schema.n_cells, dtype=np.int64)
    inside = cells >= 0
    if np.any(cells[inside] >= schema.n_cells):  # would mean a bug in the generated SQL
        raise AssertionError("the engine returned a cell index outside the cube")
    np.add.at(flat, cells[inside], counts[inside])
    return Cube(schema=schema, counts=flat.reshape(schema.shape), out_of_domain=int(counts[~inside].sum()))
