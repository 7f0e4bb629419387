"""How many rows each person has: the distribution a curator reads to choose the contribution bound.

Private: it is computed from the raw rows, shown to the curator (the guided New project flow, ``dpdesk
project contributions``) and never written to a project file. Every source computes it where the data
lives (:meth:`dpdesk.sources.Source.contributions`); :func:`contributions` is the pandas reference.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from dpdesk.engine.errors import SchemaError
from dpdesk.engine.schema import Schema

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Contributions:
    """People by their number of rows (and of distinct cells), over the rows a cube would count.

    ``rows[i]`` is the number of people with exactly ``i`` rows (``rows[0]`` is 0); ``cells[i]`` the
    number with rows in exactly ``i`` distinct cells — or distinct groups, when the schema's unit keeps
    one row per value of some attributes; ``outside`` counts the rows that take no part (no identifier,
    or, with a schema, outside its domain). Arrays are read-only.

    Examples
    --------
    >>> c = Contributions(np.array([0, 3, 1, 0, 1]), np.array([0, 4, 1]), outside=2)
    >>> c.people, c.total_rows, c.smallest_bound(0.8), c.rows_kept(2)
    (5, 9, 2, 7)
    """

    rows: np.ndarray
    cells: np.ndarray
    outside: int = 0

    def __post_init__(self) -> None:
        for name in ("rows", "cells"):
            arr = np.array(getattr(self, name), dtype=np.int64)
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)

    @property
    def people(self) -> int:
        return int(self.rows.sum())

    @property
    def total_rows(self) -> int:
        return int((np.arange(self.rows.size) * self.rows).sum())

    @property
    def most_rows(self) -> int:
        """The largest number of rows one person has (0 when nobody has any)."""
        nz = np.flatnonzero(self.rows)
        return int(nz[-1]) if nz.size else 0

    def smallest_bound(self, share: float) -> int:
        """The smallest ``k`` such that at least ``share`` of the people have at most ``k`` rows."""
        if not 0.0 < share <= 1.0:
            raise ValueError(f"share ({share}) must be in (0, 1]")
        if self.people == 0:
            return 1
        cum = np.cumsum(self.rows)
        return max(1, int(np.searchsorted(cum, share * self.people - 1e-9)))

    def rows_kept(self, k: int) -> int:
        """How many rows a bound of ``k`` rows per person keeps (by row count alone)."""
        i = np.arange(self.rows.size)
        return int((np.minimum(i, k) * self.rows).sum())

    def table(self, limit: int = 20) -> list[tuple[str, int, int]]:
        """``(rows per person, people, people with that many distinct cells)`` lines for display: one per
        count up to ``limit``, then one line for everything above."""
        out = []
        top = max(self.rows.size, self.cells.size)
        for i in range(1, min(top, limit + 1)):
            out.append((str(i), _at(self.rows, i), _at(self.cells, i)))
        if top > limit + 1:
            out.append((f"> {limit}", int(self.rows[limit + 1 :].sum()), int(self.cells[limit + 1 :].sum())))
        return out

    def to_dict(self) -> dict[str, object]:
        return {"rows": self.rows.tolist(), "cells": self.cells.tolist(), "outside": self.outside}


def _at(arr: np.ndarray, i: int) -> int:
    return int(arr[i]) if i < arr.size else 0


def from_counts(pairs: Iterable[tuple[int, int, int]], outside: int) -> Contributions:
    """Build from ``(rows, distinct cells, people)`` triples (what a source's ``GROUP BY`` returns)."""
    rows: dict[int, int] = {}
    cells: dict[int, int] = {}
    for n, c, people in pairs:
        if n <= 0:
            continue
        rows[n] = rows.get(n, 0) + people
        cells[c] = cells.get(c, 0) + people
    r = np.zeros(max(rows, default=0) + 1, dtype=np.int64)
    for n, v in rows.items():
        r[n] = v
    c_arr = np.zeros(max(cells, default=0) + 1, dtype=np.int64)
    for c, v in cells.items():
        c_arr[c] = v
    return Contributions(r, c_arr, outside)


def contributions(df: pd.DataFrame, column: str, schema: Schema | None = None) -> Contributions:
    """The reference: people in ``df`` by rows and distinct cells (rows outside ``schema``'s domain, when
    given, and rows without an identifier are ``outside``). ``column`` holds the identifiers."""
    import pandas as pd

    from dpdesk.engine.cube import attribute_codes

    if column not in df.columns:
        raise SchemaError(f"the privacy unit's column {column!r} is not in the table")
    person = df[column]
    inside = person.notna().to_numpy().copy()
    if isinstance(person.dtype, pd.api.types.CategoricalDtype):
        person = person.astype(object)
    if pd.api.types.is_float_dtype(person.dtype) and person.notna().any():
        raise SchemaError(
            f"the privacy unit's column {column!r} holds floating-point numbers; "
            "a person's identifier must be an integer or text"
        )
    group = np.zeros(len(df), dtype=np.int64)
    if schema is not None:
        codes = np.stack([attribute_codes(df[a.column], a) for a in schema.attributes]) if len(df) else None
        if codes is not None:
            inside &= np.all(codes >= 0, axis=0)
            names = schema.unit.group_attributes(schema.names) if schema.unit.one_row_per else schema.names
            axes = [schema.axis(n) for n in names]
            sub = tuple(np.where(inside, codes[a], 0) for a in axes)
            group = np.ravel_multi_index(sub, tuple(schema.shape[a] for a in axes))
    frame = pd.DataFrame({"p": person[inside].to_numpy(), "g": group[inside]})
    per = frame.groupby("p", sort=False).agg(n=("g", "size"), c=("g", "nunique"))
    triples = per.groupby(["n", "c"]).size()
    return from_counts(
        ((int(n), int(c), int(k)) for (n, c), k in triples.items()), int(len(df) - inside.sum())
    )
