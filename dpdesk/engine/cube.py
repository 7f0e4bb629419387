"""The count cube: record counts over the declared cells of a :class:`~dpdesk.engine.schema.Schema`.

Built from a pandas DataFrame in a vectorised pass (attribute codes → flat cell index → ``bincount``).
Values outside a declared domain, or missing, are counted as *out of domain* and never placed in a cell.
Other sources (DuckDB, PostgreSQL) build the same :class:`Cube` in :mod:`dpdesk.sources`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from dpdesk.engine.errors import Cancelled, SchemaError
from dpdesk.engine.schema import Attribute, Schema

if TYPE_CHECKING:  # pandas is imported where it is used: the app's start-up does not need it
    import pandas as pd


@dataclass(frozen=True)
class Cube:
    """Private record counts. ``counts`` has ``schema.shape`` and is read-only; it never leaves the curator."""

    schema: Schema
    counts: np.ndarray
    out_of_domain: int = 0

    def __post_init__(self) -> None:
        counts = np.asarray(self.counts, dtype=np.int64).reshape(self.schema.shape)
        if counts.flags.writeable:
            counts = counts.copy()
            counts.setflags(write=False)
        object.__setattr__(self, "counts", counts)

    @property
    def flat(self) -> np.ndarray:
        """Counts in C order (last attribute fastest), read-only."""
        return self.counts.reshape(-1)

    @property
    def total(self) -> int:
        """Number of records inside the declared domain."""
        return int(self.counts.sum())


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
) -> Cube:
    """Count the rows of ``df`` into the cells of ``schema`` (vectorised, in chunks of rows).

    Each attribute's column is binned by :func:`attribute_codes`; rows with every attribute in domain
    go to cell ``ravel_multi_index(codes, schema.shape)`` (C order, last attribute fastest); the
    others are counted in ``out_of_domain``. Domains come only from ``schema``, never from the data.

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
    if chunk_rows < 1:
        raise ValueError(f"chunk_rows ({chunk_rows}) must be at least 1")
    columns = [str(c) for c in df.columns]
    for a in schema.attributes:
        matches = sum(1 for c in df.columns if c == a.column)
        if matches == 0:
            raise SchemaError(
                f"attribute '{a.name}': column {a.column!r} is not in the table "
                f"(columns: {', '.join(map(repr, columns))})"
            )
        if matches > 1:
            raise SchemaError(
                f"attribute '{a.name}': column {a.column!r} appears {matches} times in the table"
            )

    shape = schema.shape
    n_cells = schema.n_cells
    counts = np.zeros(n_cells, dtype=np.int64)
    out_of_domain = 0
    n_rows = len(df)
    for start in range(0, max(n_rows, 1), chunk_rows):
        if cancelled is not None and cancelled():
            raise Cancelled("cube build cancelled")
        stop = min(start + chunk_rows, n_rows)
        chunk = df.iloc[start:stop]
        codes = np.empty((len(shape), stop - start), dtype=np.int64)
        for d, a in enumerate(schema.attributes):
            codes[d] = attribute_codes(chunk[a.column], a)
        inside = np.all(codes >= 0, axis=0)
        out_of_domain += int(inside.size - np.count_nonzero(inside))
        flat = np.ravel_multi_index(tuple(codes[:, inside]), shape)
        counts += np.bincount(flat, minlength=n_cells)
        if progress is not None:
            progress(stop / n_rows if n_rows else 1.0)
    return Cube(schema=schema, counts=counts.reshape(shape), out_of_domain=out_of_domain)
