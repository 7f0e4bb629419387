"""One product-form piece of a linear query: ``weight · f_1 ⊗ … ⊗ f_N`` (see :mod:`.query`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import reduce

import numpy as np

from dpdesk.engine.errors import QueryError

# Coefficients of a multi-term query smaller than this fraction of its largest possible term are
# rounding residue (0.1 + 0.2 - 0.3), not real coefficients.
CANCEL_TOL = 1e-12
# Largest number of distinct coefficient values enumerated without densifying a single term.
VALUE_SET_LIMIT = 1 << 16


def readonly(a: np.ndarray) -> np.ndarray:
    if a.flags.writeable:
        a = a.copy()
        a.setflags(write=False)
    return a


def fmt_number(x: float) -> int | float:
    return int(x) if float(x).is_integer() else float(x)


@dataclass(frozen=True, eq=False)
class Term:
    """``weight · outer(factors[0], …, factors[N-1])``: one product-form piece of a query."""

    weight: float
    factors: tuple[np.ndarray, ...]

    def __post_init__(self) -> None:
        if isinstance(self.weight, bool) or not isinstance(self.weight, (int, float, np.number)):
            raise QueryError(f"query: term weight must be a number, got {self.weight!r}")
        w = float(self.weight)
        if not math.isfinite(w):
            raise QueryError(f"query: term weight {w!r} is not finite")
        factors = []
        for d, f in enumerate(self.factors):
            arr = np.asarray(f, dtype=np.float64)
            if arr.ndim != 1 or arr.size == 0:
                raise QueryError(f"query: factor {d} must be a non-empty 1-d vector, got shape {arr.shape}")
            if not np.all(np.isfinite(arr)):
                raise QueryError(f"query: factor {d} has a NaN or infinite coefficient")
            factors.append(readonly(arr))
        if not factors:
            raise QueryError("query: a term needs at least one factor")
        object.__setattr__(self, "weight", w)
        object.__setattr__(self, "factors", tuple(factors))

    def __reduce__(self) -> tuple[type[Term], tuple[float, tuple[np.ndarray, ...]]]:
        return (Term, (self.weight, self.factors))  # re-validate: unpickled arrays come back writable

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(f) for f in self.factors)

    @property
    def is_zero(self) -> bool:
        return self.weight == 0.0 or any(not np.any(f) for f in self.factors)

    def same_factors(self, other: Term) -> bool:
        return self.shape == other.shape and all(
            np.array_equal(a, b) for a, b in zip(self.factors, other.factors)
        )

    def dense(self) -> np.ndarray:
        return (self.weight * reduce(np.multiply.outer, self.factors)).reshape(-1)

    def values_at(self, idx: tuple[np.ndarray, ...]) -> np.ndarray:
        out = np.full(len(idx[0]), self.weight)
        for f, i in zip(self.factors, idx):
            out *= f[i]
        return out

    def support_size(self) -> int:
        return math.prod(int(np.count_nonzero(f)) for f in self.factors)

    def value_set(self) -> np.ndarray | None:
        """The distinct nonzero coefficients (up to repeats), or None if there are too many to list."""
        parts = [np.unique(f[f != 0]) for f in self.factors]
        if math.prod(len(p) for p in parts) > VALUE_SET_LIMIT:
            return None
        return self.weight * reduce(np.multiply.outer, parts).reshape(-1)


def box_cells(t: Term, shape: tuple[int, ...]) -> np.ndarray:
    """The flat indices of the cells where ``t`` is nonzero, ascending."""
    nz = [np.flatnonzero(f) for f in t.factors]
    grids = np.meshgrid(*nz, indexing="ij")
    return np.ravel_multi_index(tuple(g.reshape(-1) for g in grids), shape).astype(np.int64)


def integral_term(t: Term) -> bool:
    return float(t.weight).is_integer() and all(bool(np.all(f == np.round(f))) for f in t.factors)


def same_box(a: Term, b: Term) -> bool:
    """Terms over the same cells of the cube (all factors but the first, the blocks', equal)."""
    return a.shape == b.shape and all(np.array_equal(f, g) for f, g in zip(a.factors[1:], b.factors[1:]))
