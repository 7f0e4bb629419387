"""The partition-release mechanism: its privacy map and history rows, read from a recorded ledger payload.

A partition release (:mod:`dpdesk.engine.partition`) publishes the counts of several *groups*, each a
partition of the cube into boxes of contiguous labels, every count with discrete-Laplace noise of one
scale ``b`` (sensitivity 1). The payload records the structure by shape alone — per group, per
attribute, the first label of every block (``"starts"``) — so the privacy map needs no schema: each
group is checked to be a partition of every attribute's labels, a record then lies in exactly one count
of each group, and every cell is charged ``groups/b`` (paper Thm 5.4). The released counts are ordinary
noisy linear rows for the history: one per count, the indicator of its box, at budget ``1/b``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, overload

import numpy as np

from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.mechanisms.base import Contribution, NoisyRow
from dpdesk.engine.mechanisms.charge import Charge, ChargeTerm
from dpdesk.engine.queries.query import Query, Term

__all__ = ["PARTITION", "PartitionMechanism", "group_structure"]


def group_structure(payload: Mapping[str, Any], shape: tuple[int, ...]) -> list[list[np.ndarray]]:
    """The recorded block starts, checked: ``[group][attribute] -> starts`` (each a partition of the labels)."""
    groups = payload.get("groups")
    if not isinstance(groups, (list, tuple)) or not groups:
        raise DpdeskError("partition release: 'groups' must be a non-empty list")
    out = []
    for g, grp in enumerate(groups):
        starts = grp.get("starts") if isinstance(grp, Mapping) else None
        if not isinstance(starts, (list, tuple)) or len(starts) != len(shape):
            raise DpdeskError(
                f"partition release: groups[{g}].starts must give one list per attribute ({len(shape)})"
            )
        per = []
        for d, (s, k) in enumerate(zip(starts, shape)):
            a = np.asarray(s, dtype=np.int64)
            if a.ndim != 1 or a.size == 0 or a[0] != 0 or np.any(np.diff(a) <= 0) or a[-1] >= k:
                raise DpdeskError(
                    f"partition release: groups[{g}].starts[{d}] is not a partition of {k} labels"
                )
            per.append(a)
        out.append(per)
    return out


def _indicator(starts: np.ndarray, size: int, block: int) -> np.ndarray:
    f = np.zeros(size)
    stop = starts[block + 1] if block + 1 < starts.size else size
    f[starts[block] : stop] = 1.0
    return f


class _Rows(Sequence[NoisyRow]):
    """The release's noisy rows, built one at a time (a release may hold millions of counts)."""

    def __init__(
        self,
        structure: list[list[np.ndarray]],
        shape: tuple[int, ...],
        alpha: float,
        values: list[np.ndarray],
        family: str,
    ) -> None:
        self.structure, self.shape, self.alpha, self.family = structure, shape, alpha, family
        self.values = values
        self.sizes = [math.prod(s.size for s in grp) for grp in structure]
        self.offsets = np.cumsum([0, *self.sizes])

    def __len__(self) -> int:
        return int(self.offsets[-1])

    @overload
    def __getitem__(self, i: int) -> NoisyRow: ...

    @overload
    def __getitem__(self, i: slice) -> list[NoisyRow]: ...

    def __getitem__(self, i: int | slice) -> NoisyRow | list[NoisyRow]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if not -len(self) <= i < len(self):
            raise IndexError(i)
        i %= len(self)
        g = int(np.searchsorted(self.offsets, i, side="right") - 1)
        local = i - int(self.offsets[g])
        grp = self.structure[g]
        idx = np.unravel_index(local, tuple(s.size for s in grp))
        factors = tuple(_indicator(s, k, int(b)) for s, k, b in zip(grp, self.shape, idx))
        return NoisyRow(
            Query(self.shape, terms=(Term(1.0, factors),)),
            self.alpha,
            float(self.values[g][local]),
            self.family,
        )

    def __iter__(self) -> Iterator[NoisyRow]:
        for i in range(len(self)):
            yield self[i]


@dataclass(frozen=True)
class PartitionMechanism:
    """The registered mechanism of one-shot partition releases (discrete-Laplace counts)."""

    name: str = "partition"
    kind: str = "partition"
    label: str = "one-shot partition release (discrete Laplace counts)"
    family: str = "discrete_laplace"

    @staticmethod
    def charge_for(groups: int, scale: float) -> Charge:
        """Every cell pays ``groups/b``: one count of sensitivity 1 per group, each ``1/b``-DP."""
        return Charge((ChargeTerm(groups / scale, None),))

    def contribution(self, payload: Mapping[str, Any], shape: tuple[int, ...]) -> Contribution:
        """The privacy map and rows of a recorded release: ``groups``, ``scale`` and ``values`` (per group)."""
        structure = group_structure(payload, shape)
        scale = payload.get("scale")
        if (
            isinstance(scale, bool)
            or not isinstance(scale, (int, float))
            or not math.isfinite(scale)
            or scale <= 0
        ):
            raise DpdeskError(f"partition release: scale ({scale!r}) must be a positive finite number")
        raw = payload.get("values")
        if not isinstance(raw, (list, tuple)) or len(raw) != len(structure):
            raise DpdeskError("partition release: 'values' must hold one list of counts per group")
        values = []
        for g, (grp, v) in enumerate(zip(structure, raw)):
            a = np.asarray(v, dtype=float).reshape(-1)
            if a.size != math.prod(s.size for s in grp) or not np.all(np.isfinite(a)):
                raise DpdeskError(
                    f"partition release: values[{g}] must hold {math.prod(s.size for s in grp)} finite counts"
                )
            values.append(a)
        rows = _Rows(structure, tuple(shape), 1.0 / float(scale), values, self.family)
        return Contribution(
            self.charge_for(len(structure), float(scale)),
            rows,  # type: ignore[arg-type]
            tuple(float(x) for a in values for x in a),
        )


PARTITION = PartitionMechanism()
