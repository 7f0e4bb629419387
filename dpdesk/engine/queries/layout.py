"""The one vector of cells a linear query over measures reads (docs/sums.md).

A schema with measures gives every cell of the cube more than its count: the sum of each measure's
clamped values and, for a measure whose missing values are skipped, how many values were summed. A
linear query over them — ``sum(cost | ward="oncology") - 2*count(ward="oncology")`` — is a linear query
over ONE vector: the count cells, then each measure's sum cells, then the value-count cells of the
measures that skip missing values, each block in the cube's C order. That vector has the shape
``(blocks, *cube)``, so a query over it is an ordinary product-form :class:`~dpdesk.engine.queries.query.Query`
whose first factor weighs the blocks: inner products, the history's BLUE and the posterior work on it
exactly as on counts, and the count block comes first so a count cell keeps its flat index.

What differs is what one record can move. A record in cell ``j`` moves the count cell ``j`` by 1, every
sum cell ``j`` by its clamped value (at most the measure's bound ``B = max(|L|, |U|)``) and every
value-count cell ``j`` by 0 or 1 — all at once, and no other cell. So a query ``Q`` over the vector has the
per-record sensitivity ``S = max_j Σ_b B_b |Q_bj|`` (``B_count = 1``), and a release of it at budget α
charges cell ``j`` ``α·Σ_b B_b|Q_bj| / S`` (docs/sums.md, Theorem 1). :class:`Layout` holds the blocks
and these weights; a query carries its layout, so that its sensitivity is a record's, never one
coordinate's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from dpdesk.engine.errors import QueryError
from dpdesk.engine.schema import Schema

__all__ = ["Block", "BlockKind", "Layout"]

BlockKind = Literal["count", "sum", "values"]


@dataclass(frozen=True)
class Block:
    """One block of the vector: the counts, a measure's sums, or how many values of a measure were summed.

    ``bound`` is the most one record moves one cell of the block; ``[low, high]`` is the range of what one
    record adds to its cell of the block (a skipped missing value adds 0 to a sum).
    """

    kind: BlockKind
    measure: str | None
    bound: float
    low: float
    high: float

    def describe(self) -> str:
        if self.kind == "count":
            return "count"
        return f"{'sum' if self.kind == 'sum' else 'number of values'} of {self.measure}"


@dataclass(frozen=True)
class Layout:
    """The blocks of the vector a query over measures reads, over a cube of shape ``cells``.

    Examples
    --------
    >>> s = Schema.from_dict({"attributes": [{"name": "a", "kind": "categorical", "values": ["x", "y"]}],
    ...     "measures": [{"name": "cost", "bounds": [-10, 100], "nulls": "skip"},
    ...                  {"name": "stay", "bounds": [0, 30], "nulls": "replace", "null_value": 1}]})
    >>> lay = Layout.of(s)
    >>> lay.shape, [b.describe() for b in lay.blocks]
    ((4, 2), ['count', 'sum of cost', 'sum of stay', 'number of values of cost'])
    >>> lay.weights.tolist(), lay.index("values", "stay")
    ([1.0, 100.0, 30.0, 1.0], 0)
    """

    cells: tuple[int, ...]
    blocks: tuple[Block, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "cells", tuple(int(k) for k in self.cells))
        if not self.blocks or self.blocks[0].kind != "count":
            raise QueryError("query layout: the first block must be the counts")

    @classmethod
    def of(cls, schema: Schema) -> Layout | None:
        """The layout of ``schema``'s cube, or None when it declares no measures (counts alone)."""
        if not schema.measures:
            return None
        blocks = [Block("count", None, 1.0, 1.0, 1.0)]
        for m in schema.measures:
            low, high = (m.lower, m.upper) if m.nulls == "replace" else (min(m.lower, 0.0), max(m.upper, 0.0))
            blocks.append(Block("sum", m.name, m.bound, low, high))
        blocks += [Block("values", m.name, 1.0, 0.0, 1.0) for m in schema.measures if m.nulls == "skip"]
        return cls(schema.shape, tuple(blocks))

    @property
    def shape(self) -> tuple[int, ...]:
        """``(blocks, *cells)``: the shape of a query over the vector."""
        return (len(self.blocks),) + self.cells

    @property
    def n_base(self) -> int:
        """Cells of the cube."""
        return int(math.prod(self.cells))

    @property
    def n_cells(self) -> int:
        """Coordinates of the vector (blocks × cells)."""
        return len(self.blocks) * self.n_base

    @property
    def weights(self) -> np.ndarray:
        """``B_b`` per block: the most one record moves one cell of it (1 for counts and value counts)."""
        return np.array([b.bound for b in self.blocks])

    @property
    def summed(self) -> np.ndarray:
        """Which blocks hold sums of values (their answers are not on the integers)."""
        return np.array([b.kind == "sum" for b in self.blocks])

    def index(self, kind: BlockKind, measure: str | None = None) -> int:
        """The block of ``kind`` for ``measure``; the values of a measure that replaces missing values are
        counted by the count block itself (every record has one)."""
        for i, b in enumerate(self.blocks):
            if b.kind == kind and b.measure == measure:
                return i
        if kind == "values" and any(b.kind == "sum" and b.measure == measure for b in self.blocks):
            return 0
        known = ", ".join(repr(b.measure) for b in self.blocks if b.kind == "sum")
        raise QueryError(f"query: no measure {measure!r} (measures: {known})")

    def measure_names(self) -> tuple[str, ...]:
        return tuple(b.measure for b in self.blocks if b.kind == "sum" and b.measure is not None)

    def to_json(self) -> dict[str, Any]:
        """Plain JSON (a stored history's): the cube's shape and each block's kind, measure and ranges."""
        return {
            "cells": list(self.cells),
            "blocks": [[b.kind, b.measure, b.bound, b.low, b.high] for b in self.blocks],
        }

    @classmethod
    def from_json(cls, obj: Any) -> Layout:
        """The layout :meth:`to_json` wrote."""
        try:
            blocks = tuple(Block(k, m, float(b), float(lo), float(hi)) for k, m, b, lo, hi in obj["blocks"])
            return cls(tuple(int(k) for k in obj["cells"]), blocks)
        except (KeyError, TypeError, ValueError) as exc:
            raise QueryError(f"query layout: unreadable ({exc!r})") from None

    def record_loads(self, blocks: np.ndarray, cells: np.ndarray, values: np.ndarray) -> np.ndarray:
        """``Σ_b B_b |Q_bj|`` per cube cell from a query's nonzero coefficients (their blocks, cells, values)."""
        w = self.weights
        return np.bincount(cells, weights=np.abs(values) * w[blocks], minlength=self.n_base)
