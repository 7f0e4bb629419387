"""Query coefficients as JSON holds them: a sparse query's written form, a coefficient list checked, and
the cube shape a vector of ``n`` cells is read over."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from dpdesk.engine.errors import QueryError
from dpdesk.engine.queries.term import fmt_number

__all__ = ["check_coefficients", "resolve_shape", "sparse_json"]


def sparse_json(idx: np.ndarray, val: np.ndarray) -> dict[str, Any]:
    """A sparse query's JSON form: its cell indices and coefficients (integral ones as ints)."""
    if np.all(np.mod(val, 1.0) == 0) and np.all(np.abs(val) < 2.0**53):  # integral: ints, as fmt_number
        values: list[int | float] = val.astype(np.int64).tolist()
    else:
        values = [fmt_number(v) for v in val]
    return {"indices": np.asarray(idx, dtype=np.int64).tolist(), "values": values}


_NUMBER_TYPES = frozenset((int, float))


def check_coefficients(raw: Sequence[Any], what: str) -> np.ndarray:
    # fast path for what JSON gives (plain ints and floats: one C-level pass, then one vector check);
    # the loop below only runs to name the first bad coefficient
    if isinstance(raw, list) and set(map(type, raw)) <= _NUMBER_TYPES:
        arr = np.asarray(raw, dtype=np.float64)
        if np.all(np.isfinite(arr)):
            return arr
    for i, v in enumerate(raw):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise QueryError(f"query: {what}[{i}] must be a number, got {v!r}")
        if not math.isfinite(float(v)):
            raise QueryError(f"query: {what}[{i}] is {v!r}; coefficients must be finite")
    return np.asarray(raw, dtype=np.float64)


def resolve_shape(n_cells: int, shape: Sequence[int] | None) -> tuple[int, ...]:
    if shape is None:
        return (int(n_cells),)
    shape = tuple(int(s) for s in shape)
    if math.prod(shape) != n_cells:
        raise QueryError(f"query: shape {shape} has {math.prod(shape)} cells, expected {n_cells}")
    return shape
