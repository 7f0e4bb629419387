"""The count cube: record counts over the declared cells of a :class:`~dpdesk.engine.schema.Schema`.

Built from a pandas DataFrame in a vectorised pass (attribute codes → flat cell index → ``bincount``).
Values outside a declared domain, or missing, are counted as *out of domain* and never placed in a cell.
Other sources (DuckDB, PostgreSQL) build the same :class:`Cube` in :mod:`dpdesk.sources`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpdesk.engine.schema import Schema


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
