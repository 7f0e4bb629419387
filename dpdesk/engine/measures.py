"""Measures: numeric columns summed per cell, each value clamped to public bounds declared by the curator.

A measure's bounds ``[L, U]`` are public inputs (never read off the data): a value below ``L`` counts as
``L``, one above ``U`` as ``U``, so one row moves a cell's sum by at most ``max(|L|, |U|)``. Missing
values (NULL, and NaN, which every engine here treats as missing) are handled as declared: ``"skip"``
(the row still counts in its cell, adds nothing to the sum and is not one of the values summed) or
``"replace"`` (it counts as ``null_value``, a number inside the bounds).

**Exact, engine-independent sums.** Floating-point sums depend on the order of addition, which differs
between DuckDB's threads, Spark's partitions and a server's plan. So every engine sums integers: each
clamped value ``v`` becomes ``q = trunc(v · 2^f)`` (rounded toward zero, so ``|q| / 2^f ≤ |v|`` and the
bound still holds), where ``f`` is the largest whole number with ``max(|L|, |U|) · 2^f ≤ 2^52`` — a
resolution of about 2⁻⁵² of the bound. Multiplying a double by a power of two and truncating is exact in
IEEE arithmetic, so every engine computes the same ``q``; the integers are summed exactly and the cell's
sum is ``Σq / 2^f``, rounded once to a double. The same table gives the same sums on every engine.

JSON (the schema's optional ``measures`` list)::

    {"name": "income", "column": "income", "bounds": [0, 250000], "nulls": "skip"}
    {"name": "hours", "column": "hours", "bounds": [0, 80], "nulls": "replace", "null_value": 0}
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from dpdesk.engine.errors import SchemaError

NullRule = Literal["skip", "replace"]
MANTISSA_BITS = 52
# The bits of q summed apart: q = hi · 2^26 + lo with 0 ≤ lo < 2^26, so per-cell sums of either part stay
# exact in 64-bit integers (and in doubles) for any table of fewer than 2^26 ≈ 67 million rows per cell.
SPLIT_BITS = 26
_LARGEST_BOUND = 2.0**200
_SMALLEST_BOUND = 2.0**-200


@dataclass(frozen=True)
class Measure:
    """A numeric column summed per cell within public bounds ``[lower, upper]``.

    Examples
    --------
    >>> m = Measure("income", "income", 0.0, 250000.0, "skip")
    >>> m.bound, m.scale_bits
    (250000.0, 34)
    >>> q, present = m.quantised(np.array([-5.0, 0.1, 1e9, np.nan]))
    >>> q.tolist(), present.tolist()
    ([0, 1717986918, 4294967296000000, 0], [True, True, True, False])
    """

    name: str
    column: str
    lower: float
    upper: float
    nulls: NullRule
    null_value: float | None = None

    @property
    def bound(self) -> float:
        """``max(|L|, |U|)``: the most one row can move a cell's sum."""
        return max(abs(self.lower), abs(self.upper))

    @property
    def scale_bits(self) -> int:
        """``f``: values are summed as ``trunc(v · 2^f)``, with ``bound · 2^f ≤ 2^52``."""
        return MANTISSA_BITS - math.ceil(math.log2(self.bound))

    @property
    def quantum(self) -> float:
        """``2^-f``, the resolution of a summed value."""
        return math.ldexp(1.0, -self.scale_bits)

    def describe(self) -> str:
        """The measure in the curator's words."""
        missing = (
            "missing values skipped"
            if self.nulls == "skip"
            else f"missing values count as {_fmt(self.null_value or 0.0)}"
        )
        col = "" if self.column == self.name else f" (column {self.column})"
        return f"{self.name}{col}: values clamped to [{_fmt(self.lower)}, {_fmt(self.upper)}], {missing}"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "column": self.column,
            "bounds": [_number(self.lower), _number(self.upper)],
            "nulls": self.nulls,
        }
        if self.nulls == "replace":
            out["null_value"] = _number(self.null_value or 0.0)
        return out

    def quantised(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(q, present)``: int64 ``trunc(clamp(v) · 2^f)`` (0 where missing) and which values were present.

        ``values`` is float64 (NaN = missing); infinities clamp to the bounds.
        """
        v = np.asarray(values, dtype=np.float64)
        present = ~np.isnan(v)
        clamped = np.clip(np.where(present, v, 0.0), self.lower, self.upper)
        q = np.trunc(np.ldexp(clamped, self.scale_bits)).astype(np.int64)
        q[~present] = 0
        return q, present

    def null_quantised(self) -> int:
        """``q`` of the replacement value (0 when missing values are skipped)."""
        if self.nulls != "replace":
            return 0
        return int(math.trunc(math.ldexp(float(self.null_value or 0.0), self.scale_bits)))

    def total(self, hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
        """Per-cell sums ``(hi · 2^26 + lo) / 2^f`` from the exact integer sums of ``q >> 26`` and
        ``q & (2^26 − 1)``, each rounded once to the nearest double (so equal integers give equal sums)."""
        h = np.asarray(hi, dtype=np.int64)
        low = np.asarray(lo, dtype=np.int64)
        if h.size == 0 or int(np.abs(h).max()) < 2**36:  # h · 2^26 + lo fits in 63 bits
            exact = (h << SPLIT_BITS) + low
            return np.ldexp(exact.astype(np.float64), -self.scale_bits)
        out = [
            math.ldexp(float((int(a) << SPLIT_BITS) + int(b)), -self.scale_bits)
            for a, b in zip(h.flat, low.flat)
        ]
        return np.array(out, dtype=np.float64).reshape(h.shape)


def _number(x: float) -> int | float:
    return int(x) if float(x).is_integer() and abs(x) < 2**53 else float(x)


def _fmt(x: float) -> str:
    return str(_number(x))


def _finite(x: Any, where: str) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(float(x)):
        raise SchemaError(f"{where}: must be a finite number, got {x!r}")
    return float(x)


def parse_measure(obj: Any, where: str = "measure") -> Measure:
    """Parse one member of the schema's ``measures`` list; errors name the member."""
    if not isinstance(obj, dict):
        raise SchemaError(f"{where}: must be an object, got {type(obj).__name__}")
    unknown = sorted(set(obj) - {"name", "column", "bounds", "nulls", "null_value"})
    if unknown:
        raise SchemaError(
            f"{where}.{unknown[0]}: unknown member (known: name, column, bounds, nulls, null_value)"
        )
    name = obj.get("name")
    if not isinstance(name, str) or not name.strip():
        raise SchemaError(f"{where}.name: must be a non-empty string")
    column = obj.get("column", name)
    if not isinstance(column, str) or not column:
        raise SchemaError(f"{where}.column: must be a non-empty string")
    bounds = obj.get("bounds")
    if not isinstance(bounds, list) or len(bounds) != 2:
        raise SchemaError(
            f"{where}.bounds: declare the public clamp bounds as [lower, upper] (never read them off the data)"
        )
    lower, upper = (_finite(b, f"{where}.bounds[{i}]") for i, b in enumerate(bounds))
    if not lower < upper:
        raise SchemaError(f"{where}.bounds: lower ({_fmt(lower)}) must be below upper ({_fmt(upper)})")
    big = max(abs(lower), abs(upper))
    if not _SMALLEST_BOUND <= big <= _LARGEST_BOUND:
        raise SchemaError(f"{where}.bounds: magnitudes between 2^-200 and 2^200 only, got {_fmt(big)}")
    nulls = obj.get("nulls")
    if nulls == "skip":
        if "null_value" in obj:
            raise SchemaError(f'{where}.null_value: only with "nulls": "replace"')
        return Measure(name, column, lower, upper, "skip")
    if nulls == "replace":
        if "null_value" not in obj:
            raise SchemaError(
                f'{where}.null_value: "nulls": "replace" needs the value a missing one counts as'
            )
        value = _finite(obj["null_value"], f"{where}.null_value")
        if not lower <= value <= upper:
            raise SchemaError(
                f"{where}.null_value: {_fmt(value)} is outside the bounds [{_fmt(lower)}, {_fmt(upper)}]"
            )
        return Measure(name, column, lower, upper, "replace", value)
    raise SchemaError(
        f'{where}.nulls: declare how missing values count: "skip" or "replace" (with null_value), got {nulls!r}'
    )


def parse_measures(obj: Any, where: str = "measures") -> tuple[Measure, ...]:
    """Parse the schema's ``measures`` list (absent: no measures)."""
    if obj is None:
        return ()
    if not isinstance(obj, list):
        raise SchemaError(f"{where}: must be a list of measures")
    parsed = tuple(parse_measure(m, f"{where}[{i}]") for i, m in enumerate(obj))
    names = [m.name for m in parsed]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise SchemaError(f"{where}: duplicate measure name {dup[0]!r}")
    return parsed
