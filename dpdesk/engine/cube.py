"""The count cube: record counts over the declared cells of a :class:`~dpdesk.engine.schema.Schema`.

Built from a pandas DataFrame in a vectorised pass (attribute codes → flat cell index → ``bincount``).
Values outside a declared domain, or missing, are counted as *out of domain* and never placed in a cell.
Other sources (DuckDB, PostgreSQL) build the same :class:`Cube` in :mod:`dpdesk.sources`.

When the schema declares measures, the cube also holds, per cell, the sum of each measure's clamped
values and how many values were summed (:mod:`dpdesk.engine.measures`); when it declares a privacy unit
other than one row per person, only the rows the contribution bounds keep are counted and summed
(:mod:`dpdesk.engine.truncation`), and the cube says what was dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from dpdesk.engine.errors import Cancelled, DpdeskError, SchemaError
from dpdesk.engine.measures import SPLIT_BITS, Measure
from dpdesk.engine.schema import Attribute, Schema
from dpdesk.engine.truncation import (
    MISSING_Q,
    OrderKey,
    TruncationReport,
    keep_rows,
    order_values,
    unit_numbers,
)

if TYPE_CHECKING:  # pandas is imported where it is used: the app's start-up does not need it
    import pandas as pd


def _read_only(values: Any, dtype: Any, shape: tuple[int, ...]) -> np.ndarray:
    arr = np.asarray(values, dtype=dtype).reshape(shape)
    if arr.flags.writeable:
        arr = arr.copy()
        arr.setflags(write=False)
    return arr


@dataclass(frozen=True)
class MeasureSums:
    """One measure over the cube's cells. Private, like the counts.

    ``sums`` (float64) holds the sum of the clamped values of the cell's rows (after the null rule),
    ``counts`` (int64) how many values were summed — the cell's count when missing values are replaced,
    fewer when they are skipped — and ``missing`` how many of the counted rows had no value. Both arrays
    have the schema's shape and are read-only.
    """

    name: str
    sums: np.ndarray
    counts: np.ndarray
    missing: int = 0

    @property
    def flat_sums(self) -> np.ndarray:
        return self.sums.reshape(-1)

    @property
    def flat_counts(self) -> np.ndarray:
        return self.counts.reshape(-1)


@dataclass(frozen=True)
class Cube:
    """Private record counts. ``counts`` has ``schema.shape`` and is read-only; it never leaves the curator.

    ``measures`` holds one :class:`MeasureSums` per measure the schema declares, in its order;
    ``truncation`` what enforcing the privacy unit's contribution bounds dropped (None when one row is one
    person). Neither is ever written to a project file.
    """

    schema: Schema
    counts: np.ndarray
    out_of_domain: int = 0
    measures: tuple[MeasureSums, ...] = ()
    truncation: TruncationReport | None = None

    def __post_init__(self) -> None:
        shape = self.schema.shape
        object.__setattr__(self, "counts", _read_only(self.counts, np.int64, shape))
        object.__setattr__(
            self,
            "measures",
            tuple(
                MeasureSums(
                    m.name,
                    _read_only(m.sums, np.float64, shape),
                    _read_only(m.counts, np.int64, shape),
                    int(m.missing),
                )
                for m in self.measures
            ),
        )

    def measure(self, name: str) -> MeasureSums:
        """The sums of measure ``name`` (SchemaError naming the known measures if there is none)."""
        for m in self.measures:
            if m.name == name:
                return m
        known = ", ".join(repr(m.name) for m in self.measures) or "none"
        raise SchemaError(f"no measure {name!r} in this cube (measures: {known})")

    @property
    def flat(self) -> np.ndarray:
        """Counts in C order (last attribute fastest), read-only."""
        return self.counts.reshape(-1)

    @property
    def total(self) -> int:
        """Number of records inside the declared domain."""
        return int(self.counts.sum())


# A counted cube and its per-cell costs are dense arrays in memory: 10⁸ cells is 800 MB for each.
MAX_CUBE_CELLS = 10**8


def check_cells(schema: Schema) -> None:
    """Refuse, in one line and before any data is read, a schema whose cube could not be held in memory."""
    if schema.n_cells > MAX_CUBE_CELLS:
        raise SchemaError(
            f"schema: {' × '.join(map(str, schema.shape))} = {schema.n_cells:.3g} cells, more than the "
            f"{MAX_CUBE_CELLS:.0e} a counted cube may have (it and its per-cell costs are held in memory)"
        )


# Rows per chunk in build_cube: large enough for numpy to be efficient, small enough that progress
# and cancellation stay responsive on tables of tens of millions of rows.
DEFAULT_CHUNK_ROWS = 1_000_000


def attribute_codes(series: pd.Series, attribute: Attribute) -> np.ndarray:
    """Domain position of every value in ``series`` under ``attribute`` (int64; -1 = out of domain).

    This is the one binning rule every cube source shares (DESIGN §6):

    - numeric: bins ``[e_i, e_{i+1})``, the last one closed ``[e_{k-1}, e_k]``; text that is not a
      number, values outside ``[e_0, e_k]`` and missing values are out of domain;
    - categorical: a value matches a declared value if it equals it, or if its text form equals the
      declared value's text form (so ``"1"`` read from a CSV matches a declared ``1``); missing values
      and undeclared categories are out of domain.

    Examples
    --------
    >>> import pandas as pd
    >>> from dpdesk.engine.schema import parse_attribute
    >>> age = parse_attribute({"name": "age", "kind": "numeric", "edges": [0, 30, 150]})
    >>> attribute_codes(pd.Series([0, 29.9, 30, 150, 151, None]), age).tolist()
    [0, 0, 1, 1, -1, -1]
    """
    if attribute.kind == "numeric":
        return _numeric_codes(series, attribute.edges)
    return _categorical_codes(series, attribute.values)


def _numeric_codes(series: pd.Series, edges: tuple[float, ...]) -> np.ndarray:
    import pandas as pd

    if isinstance(series.dtype, pd.CategoricalDtype):
        series = series.astype(object)
    values = pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    e = np.asarray(edges, dtype=np.float64)
    k = len(e) - 1
    codes: np.ndarray = np.searchsorted(e, values, side="right").astype(np.int64) - 1
    codes[values == e[-1]] = k - 1  # the last bin is closed on the right
    # NaN fails both comparisons, so missing and non-numeric values land here too.
    inside = (values >= e[0]) & (values <= e[-1])
    codes[~inside] = -1
    return codes


def _categorical_codes(series: pd.Series, declared: tuple[Any, ...]) -> np.ndarray:
    import pandas as pd

    # Factorise first so the per-value matching runs once per distinct value, not once per row.
    row_codes, uniques = pd.factorize(series, use_na_sentinel=True)
    by_value = {v: i for i, v in enumerate(declared)}
    by_text = {str(v): i for i, v in enumerate(declared)}
    mapping = np.full(len(uniques) + 1, -1, dtype=np.int64)  # last slot: missing (code -1)
    for j, u in enumerate(uniques):
        try:
            pos = by_value.get(u, -1)
        except TypeError:  # unhashable cell content (a list, a dict): never a declared value
            pos = -1
        if pos < 0:
            pos = by_text.get(str(u), -1)
        mapping[j] = pos
    return mapping[np.asarray(row_codes, dtype=np.int64)]


def build_cube(
    df: pd.DataFrame,
    schema: Schema,
    *,
    progress: Callable[[float], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    order_key: OrderKey | None = None,
) -> Cube:
    """Count the rows of ``df`` into the cells of ``schema`` (vectorised, in chunks of rows).

    Each attribute's column is binned by :func:`attribute_codes`; rows with every attribute in domain
    go to cell ``ravel_multi_index(codes, schema.shape)`` (C order, last attribute fastest); the
    others are counted in ``out_of_domain``. Domains come only from ``schema``, never from the data.
    Measures are summed per cell (:mod:`dpdesk.engine.measures`). A privacy unit other than one row
    per person keeps only the rows its bounds allow, chosen in the keyed order of ``order_key``
    (required then; :mod:`dpdesk.engine.truncation`); rows without an identifier are out of domain.
    This is the reference every pushdown source is tested against.

    ``progress(fraction)`` is called after each chunk; when ``cancelled()`` returns True the build
    stops with :class:`~dpdesk.engine.errors.Cancelled`.

    Examples
    --------
    >>> import pandas as pd
    >>> from dpdesk.engine.schema import Schema
    >>> schema = Schema.from_dict({"attributes": [
    ...     {"name": "age", "kind": "numeric", "edges": [0, 30, 150]},
    ...     {"name": "income", "kind": "categorical", "values": ["<=50K", ">50K"]}]})
    >>> df = pd.DataFrame({"age": [10, 40, 40, 200], "income": [">50K", "<=50K", ">50K", ">50K"]})
    >>> cube = build_cube(df, schema)
    >>> cube.flat.tolist(), cube.out_of_domain
    ([0, 1, 1, 1], 1)
    """
    check_cells(schema)
    if chunk_rows < 1:
        raise ValueError(f"chunk_rows ({chunk_rows}) must be at least 1")
    _check_columns(df, schema, order_key)
    shape = schema.shape
    n_cells = schema.n_cells
    plain = schema.unit.rows_are_people and not schema.measures
    counts = np.zeros(n_cells, dtype=np.int64)
    out_of_domain = 0
    n_rows = len(df)
    cells = None if plain else np.empty(n_rows, dtype=np.int64)
    for start in range(0, max(n_rows, 1), chunk_rows):
        if cancelled is not None and cancelled():
            raise Cancelled("cube build cancelled")
        stop = min(start + chunk_rows, n_rows)
        chunk = df.iloc[start:stop]
        codes = np.empty((len(shape), stop - start), dtype=np.int64)
        for d, a in enumerate(schema.attributes):
            codes[d] = attribute_codes(chunk[a.column], a)
        inside = np.all(codes >= 0, axis=0)
        flat = np.ravel_multi_index(tuple(codes[:, inside]), shape)
        if cells is None:
            out_of_domain += int(inside.size - np.count_nonzero(inside))
            counts += np.bincount(flat, minlength=n_cells)
        else:
            part = np.full(stop - start, -1, dtype=np.int64)
            part[inside] = flat
            cells[start:stop] = part
        if progress is not None:
            progress(stop / n_rows if n_rows else 1.0)
    if cells is None:
        return Cube(schema=schema, counts=counts.reshape(shape), out_of_domain=out_of_domain)
    if cancelled is not None and cancelled():
        raise Cancelled("cube build cancelled")
    return _bounded_cube(df, schema, cells, order_key)


def _check_columns(df: pd.DataFrame, schema: Schema, order_key: OrderKey | None) -> None:
    """Every column the schema names is in ``df`` exactly once (and a privacy unit has its order key)."""
    columns = [str(c) for c in df.columns]
    unit = schema.unit
    needed = [(f"attribute '{a.name}'", a.column) for a in schema.attributes]
    needed += [(f"measure '{m.name}'", m.column) for m in schema.measures]
    if unit.column is not None:
        needed.append(("the privacy unit", unit.column))
        if order_key is None:
            raise DpdeskError(
                "the privacy unit's contribution bounds need the curator's order key to choose rows"
            )
    for what, column in needed:
        matches = sum(1 for c in df.columns if c == column)
        if matches == 0:
            raise SchemaError(
                f"{what}: column {column!r} is not in the table (columns: {', '.join(map(repr, columns))})"
            )
        if matches > 1:
            raise SchemaError(f"{what}: column {column!r} appears {matches} times in the table")


def measure_values(series: pd.Series) -> np.ndarray:
    """A measure column as float64 (NaN where missing or not a number), as every engine reads it."""
    import pandas as pd

    if isinstance(series.dtype, pd.CategoricalDtype):
        series = series.astype(object)
    values: np.ndarray = pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    return values


def _summed(m: Measure, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(q, present)`` after the null rule: a replaced missing value is the replacement's integer."""
    q, present = m.quantised(values)
    if m.nulls == "replace":
        q[~present] = m.null_quantised()
    return q, present


def _bounded_cube(df: pd.DataFrame, schema: Schema, cells: np.ndarray, order_key: OrderKey | None) -> Cube:
    """The cube of the rows the privacy unit keeps, with the measures' sums (the pandas reference)."""
    unit = schema.unit
    inside = cells >= 0
    people = None
    if unit.column is not None:
        people, have = unit_numbers(df[unit.column], f"the privacy unit's column {unit.column!r}")
        inside &= have
    rows = np.flatnonzero(inside)
    summed = [_summed(m, measure_values(df[m.column])[rows]) for m in schema.measures]
    report = None
    if people is not None:
        assert order_key is not None
        import pandas as pd

        person = pd.factorize(df[unit.column].iloc[rows], use_na_sentinel=True)[0].astype(np.int64)
        hashed = [
            np.where(present | (m.nulls == "replace"), q, 0)
            for m, (q, present) in zip(schema.measures, summed)
        ]
        tie = [
            np.where(present | (m.nulls == "replace"), q, MISSING_Q)
            for m, (q, present) in zip(schema.measures, summed)
        ]
        order = order_values(order_key, people[rows], cells[rows], hashed)
        groups = None
        if unit.grouped:
            names = unit.group_attributes(schema.names)
            axes = [schema.axis(n) for n in names]
            multi = np.unravel_index(cells[rows], schema.shape)
            groups = np.ravel_multi_index(tuple(multi[a] for a in axes), tuple(schema.shape[a] for a in axes))
        keep, report = keep_rows(unit, person, cells[rows], order, tie, groups)
        rows, summed = rows[keep], [(q[keep], present[keep]) for q, present in summed]
    kept_cells = cells[rows]
    n_cells = schema.n_cells
    counts = np.bincount(kept_cells, minlength=n_cells)
    sums = []
    for m, (q, present) in zip(schema.measures, summed):
        hi = np.bincount(kept_cells, weights=q >> SPLIT_BITS, minlength=n_cells)
        lo = np.bincount(kept_cells, weights=q & ((1 << SPLIT_BITS) - 1), minlength=n_cells)
        valid = np.bincount(kept_cells[present], minlength=n_cells)
        summed_counts = counts if m.nulls == "replace" else valid
        sums.append(
            MeasureSums(
                m.name,
                m.total(np.rint(hi).astype(np.int64), np.rint(lo).astype(np.int64)).reshape(schema.shape),
                summed_counts.reshape(schema.shape),
                int(rows.size - np.count_nonzero(present)),
            )
        )
    return Cube(
        schema=schema,
        counts=counts.reshape(schema.shape),
        out_of_domain=int(cells.size - rows.size - (report.rows_dropped if report else 0)),
        measures=tuple(sums),
        truncation=report,
    )
