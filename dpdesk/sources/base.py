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

from dpdesk.engine.contributions import Contributions, from_counts
from dpdesk.engine.cube import Cube, check_cells
from dpdesk.engine.errors import Cancelled, DpdeskError
from dpdesk.engine.schema import Schema
from dpdesk.engine.truncation import OrderKey

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
    def build_cube(
        self,
        schema: Schema,
        *,
        progress: Progress = None,
        cancelled: CancelCheck = None,
        order_key: OrderKey | None = None,
    ) -> Cube:
        """Count the table's rows into ``schema``'s cells; rows with any attribute out of domain (or
        missing) go to ``Cube.out_of_domain``. The schema's measures are summed per cell; a privacy unit
        other than one row per person keeps only the rows its bounds allow, in the keyed order of
        ``order_key`` (required then: :mod:`dpdesk.engine.truncation`)."""

    @abc.abstractmethod
    def fingerprint(self, *, progress: Progress = None, cancelled: CancelCheck = None) -> Fingerprint:
        """Identify the table's content (and row count) for the project file."""

    @abc.abstractmethod
    def preview(self, limit: int = 1000) -> pd.DataFrame:
        """The first ``limit`` rows. Private: for the curator's eyes only."""

    def sql(self, schema: Schema) -> str:
        """The generated statement with its parameters, the keyed order's constants left out (for
        ``dpdesk cube --show-sql``)."""
        raise SourceError(f"{self.kind} sources do not run SQL; there is nothing to show for {self.location}")

    def contributions(
        self,
        column: str,
        schema: Schema | None = None,
        *,
        progress: Progress = None,
        cancelled: CancelCheck = None,
    ) -> Contributions:
        """People by their number of rows (and distinct cells) — rows sharing a value of ``column`` being
        one person — over the rows ``schema``'s cube would count (every row with an identifier when no
        schema is given). Private: for the curator choosing a contribution bound; never recorded."""
        raise SourceError(f"{self.kind} sources cannot count rows per person")

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
    shown = ", ".join(repr(c) for c in available[:40]) + (", ..." if len(available) > 40 else "")
    for a in schema.attributes:
        if a.column not in kinds:
            raise SourceError(
                f"attribute '{a.name}': column {a.column!r} is not in {where} (columns: {shown})"
            )
    for m in schema.measures:
        if m.column not in kinds:
            raise SourceError(f"measure '{m.name}': column {m.column!r} is not in {where} (columns: {shown})")
        if kinds[m.column] != "numeric":
            tname = f" ({type_names[m.column]})" if type_names and m.column in type_names else ""
            raise SourceError(
                f"measure '{m.name}' sums numbers but column {m.column!r} in {where} does not hold numbers{tname}"
            )
    if schema.unit.column is not None and schema.unit.column not in kinds:
        raise SourceError(
            f"the privacy unit's column {schema.unit.column!r} is not in {where} (columns: {shown})"
        )
    for a in schema.attributes:
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
    check_cells(schema)
    cells = np.asarray(cells, dtype=np.int64).reshape(-1)
    counts = np.asarray(counts, dtype=np.int64).reshape(-1)
    flat = np.zeros(schema.n_cells, dtype=np.int64)
    inside = cells >= 0
    if np.any(cells[inside] >= schema.n_cells):  # would mean a bug in the generated SQL
        raise AssertionError("the engine returned a cell index outside the cube")
    np.add.at(flat, cells[inside], counts[inside])
    return Cube(schema=schema, counts=flat.reshape(schema.shape), out_of_domain=int(counts[~inside].sum()))


def unit_kind_checked(schema: Schema, kind: str, where: str, type_name: str | None = None) -> str:
    """The privacy unit column's kind for the SQL (``"integer"``, ``"text"``, ``"other"`` — read by its text
    form — or ``"any"``), or a one-line SourceError when it holds floating-point numbers or true/false.

    ``kind`` is the source's reading of the column's type: one of those, ``"float"`` or ``"boolean"``.
    """
    if kind in ("float", "boolean"):
        what = "floating-point numbers" if kind == "float" else "true/false values"
        tname = f" ({type_name})" if type_name else ""
        raise SourceError(
            f"the privacy unit's column {schema.unit.column!r} in {where} holds {what}{tname}; "
            "a person's identifier must be an integer or text"
        )
    return kind


SHOWN_ORDER_KEY = OrderKey(1, 1, 1, 1)  # stands in for the curator's key in a statement only displayed


def needs_order_key(schema: Schema, order_key: OrderKey | None) -> OrderKey | None:
    """``order_key``, or a one-line SourceError when the schema's privacy unit needs one and none is given."""
    if schema.unit.column is not None and order_key is None:
        raise SourceError(
            "the privacy unit's contribution bounds choose rows in a keyed order: "
            "building this cube needs the curator's order key"
        )
    return order_key


def cube_from_columns(schema: Schema, columns: Mapping[str, Any]) -> Cube:
    """Assemble a Cube from the result of :func:`dpdesk.sources.sqlbounds.cube_statement`, column by
    column (``cell``, ``n``, the measures' ``h<i>``, ``l<i>``, ``p<i>`` and, with a privacy unit, the
    truncation counts); cell -1 is out of domain. NULL sums (no value in a cell) count as 0."""
    from dpdesk.engine.cube import MeasureSums
    from dpdesk.engine.truncation import TruncationReport

    def ints(name: str) -> np.ndarray:
        v = columns[name]
        if isinstance(v, np.ma.MaskedArray):
            return np.asarray(v.filled(0), dtype=np.int64)
        if isinstance(v, np.ndarray) and v.dtype != object:
            return v.astype(np.int64)
        return np.array([0 if x is None else int(x) for x in v], dtype=np.int64)

    cells = ints("cell")
    inside = cells >= 0
    n_cells = schema.n_cells
    if np.any(cells[inside] >= n_cells):  # would mean a bug in the generated SQL
        raise AssertionError("the engine returned a cell index outside the cube")

    def per_cell(values: np.ndarray) -> np.ndarray:
        flat = np.zeros(n_cells, dtype=np.int64)
        np.add.at(flat, cells[inside], values[inside])
        return flat.reshape(schema.shape)

    n = ints("n")
    counts = per_cell(n)
    measures = []
    for i, m in enumerate(schema.measures):
        present = per_cell(ints(f"p{i}"))
        sums = m.total(per_cell(ints(f"h{i}")), per_cell(ints(f"l{i}")))
        measures.append(
            MeasureSums(
                m.name,
                sums,
                counts if m.nulls == "replace" else present,
                int(counts.sum() - present.sum()),
            )
        )
    report = None
    if schema.unit.column is not None:
        report = TruncationReport(
            max_rows=schema.unit.max_rows,
            people=int(ints("people")[inside].sum()),
            rows_kept=int(n[inside].sum()),
            rows_dropped=int(ints("dropped")[inside].sum()),
            people_over_limit=int(ints("over_limit")[inside].sum()),
            repeats_dropped=int(ints("repeats")[inside].sum()),
        )
    return Cube(
        schema=schema,
        counts=counts,
        out_of_domain=int(n[~inside].sum()),
        measures=tuple(measures),
        truncation=report,
    )


def rows_to_columns(names: tuple[str, ...], rows: Iterable[Any]) -> dict[str, list[Any]]:
    """Rows of a result (tuples in ``names`` order) as columns by name."""
    out: dict[str, list[Any]] = {name: [] for name in names}
    for row in rows:
        for name, value in zip(names, row):
            out[name].append(value)
    return out


def contributions_schema(schema: Schema | None, column: str) -> Schema:
    """The schema whose domain a contributions count covers (no attributes: every row), with ``column``
    as its privacy unit (grouping kept) — what :func:`dpdesk.sources.sqlbounds.contributions_statement`
    and the column checks read."""
    from dataclasses import replace

    from dpdesk.engine.unit import PrivacyUnit

    base = schema if schema is not None else Schema(())
    unit = replace(base.unit, column=column) if base.unit.column is not None else PrivacyUnit(column, 1)
    return replace(base, unit=unit, measures=())


def contributions_from_columns(columns: Mapping[str, Any]) -> Contributions:
    """Contributions from the columns of the contributions statement's result."""
    triples = []
    outside = 0
    for n, c, people, out in zip(columns["n"], columns["c"], columns["people"], columns["outside"]):
        outside += int(out or 0)
        triples.append((int(n), int(c), int(people)))
    return from_counts(triples, outside)
