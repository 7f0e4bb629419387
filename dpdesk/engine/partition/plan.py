"""Release plans: which partition counts a one-shot release publishes, and what it charges per cell.

Every plan is a union of *groups*. A group cuts each attribute's labels into contiguous blocks (single
labels, one block for the whole domain, or the blocks of one level of an interval tree) and releases
one noisy count per combination of blocks: the Kronecker product of per-attribute aggregation
matrices, as in HDMM's product strategies. Each group is a partition of the cube, so a record falls in
exactly one count per group; with ``k`` groups each count is released at ``α/k`` and every cell pays
``α`` in total (paper Thm 5.4, charged per cell).

- :func:`cells_plan` — every cell (the seed's release, §4.1.1 and §5.2);
- :func:`marginals_plan` / :func:`marginals_by_order` — a set of marginals (e.g. all 1- and 2-way);
- :func:`tree_plan` — a hierarchical interval tree over one ordered (numeric) attribute with
  branching ``b`` (Hay et al.): level ``j`` releases blocks of ``b^j`` consecutive labels, from single
  labels up to the root, crossed with the other attributes or summed over them.

Nothing here reads data except :meth:`PartitionPlan.true_rows`, the private counts a release adds noise to.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from dpdesk.engine.errors import PlanError
from dpdesk.engine.schema import Attribute, Schema

__all__ = [
    "Blocks",
    "Group",
    "PartitionPlan",
    "cells_plan",
    "marginals_by_order",
    "marginals_plan",
    "tree_plan",
]

PlanKind = Literal["cells", "marginals", "tree"]


@dataclass(frozen=True, eq=False)
class Blocks:
    """A partition of one attribute's ``size`` labels into contiguous blocks starting at ``starts``."""

    size: int
    starts: np.ndarray

    def __post_init__(self) -> None:
        s = np.asarray(self.starts, dtype=np.int64)
        if s.ndim != 1 or s.size == 0 or s[0] != 0 or np.any(np.diff(s) <= 0) or s[-1] >= self.size:
            raise PlanError(f"blocks: starts {s.tolist()} must rise strictly from 0 below {self.size}")
        s = s.copy()
        s.setflags(write=False)
        object.__setattr__(self, "starts", s)

    @classmethod
    def cells(cls, size: int) -> Blocks:
        return cls(size, np.arange(size))

    @classmethod
    def total(cls, size: int) -> Blocks:
        return cls(size, np.zeros(1, dtype=np.int64))

    @classmethod
    def of_width(cls, size: int, width: int) -> Blocks:
        return cls(size, np.arange(0, size, width))

    @property
    def n_blocks(self) -> int:
        return int(self.starts.size)

    @property
    def stops(self) -> np.ndarray:
        return np.append(self.starts[1:], self.size)

    @property
    def is_identity(self) -> bool:
        return self.n_blocks == self.size

    @property
    def is_total(self) -> bool:
        return self.n_blocks == 1

    def matrix(self) -> np.ndarray:
        """The ``n_blocks × size`` 0/1 aggregation matrix ``M``."""
        m = np.zeros((self.n_blocks, self.size))
        for r, (a, b) in enumerate(zip(self.starts, self.stops)):
            m[r, a:b] = 1.0
        return m

    def aggregate(self, x: np.ndarray, axis: int = 0) -> np.ndarray:
        """``M`` applied along ``axis`` of ``x`` (block sums)."""
        if self.is_identity:
            return x
        return np.add.reduceat(x, self.starts, axis=axis)

    def expand(self, v: np.ndarray, axis: int = 0) -> np.ndarray:
        """``Mᵀ`` applied along ``axis`` of ``v`` (each block's value repeated over its labels)."""
        if self.is_identity:
            return v
        return np.repeat(v, np.diff(np.append(self.starts, self.size)), axis=axis)

    def labels(self, attribute: Attribute) -> tuple[str, ...]:
        """A readable label per block: the label itself, ``*`` for the whole domain, or ``first..last``."""
        if self.is_identity:
            return attribute.labels
        if self.is_total:
            return ("*",)
        out = []
        for a, b in zip(self.starts, self.stops):
            out.append(
                attribute.labels[a] if b - a == 1 else f"{attribute.labels[a]}..{attribute.labels[b - 1]}"
            )
        return tuple(out)


@dataclass(frozen=True, eq=False)
class Group:
    """One partition of the cube: a block structure per attribute; its counts form an array of ``shape``."""

    name: str
    blocks: tuple[Blocks, ...]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(b.n_blocks for b in self.blocks)

    @property
    def n_rows(self) -> int:
        return math.prod(self.shape)

    def aggregate(self, counts: np.ndarray) -> np.ndarray:
        """The group's counts from the cube's counts (private when ``counts`` are the true counts)."""
        x = counts
        for axis, b in enumerate(self.blocks):
            x = b.aggregate(x, axis)
        return np.ascontiguousarray(x)


@dataclass(frozen=True, eq=False)
class PartitionPlan:
    """A release plan over a declared cube: its groups and how it was asked for.

    Attributes
    ----------
    schema : Schema
    kind : {"cells", "marginals", "tree"}
    groups : tuple of Group
        Each group is a partition of the cube; every cell lies in exactly one count of each.
    description : str
        One line for the curator, e.g. ``"interval tree over age (branching 2, 7 levels), crossed with sex"``.
    tree_attribute : str or None
        The ordered attribute a tree plan is built over.
    """

    schema: Schema
    kind: PlanKind
    groups: tuple[Group, ...]
    description: str
    tree_attribute: str | None = None
    branching: int | None = None
    crossed: tuple[str, ...] = ()

    @property
    def shape(self) -> tuple[int, ...]:
        return self.schema.shape

    @property
    def n_rows(self) -> int:
        """Number of counts the release publishes."""
        return sum(g.n_rows for g in self.groups)

    @property
    def coverage(self) -> int:
        """Counts each record falls in (one per group)."""
        return len(self.groups)

    def row_alpha(self, alpha: float) -> float:
        """Budget of each released count when every cell pays ``alpha`` in all."""
        return float(alpha) / self.coverage

    def true_rows(self, counts: np.ndarray) -> list[np.ndarray]:
        """Private: the exact count of every released row, one array per group."""
        counts = np.asarray(counts)
        if counts.shape != self.shape:
            raise PlanError(f"cube has shape {counts.shape}, the plan was made for {self.shape}")
        return [g.aggregate(counts) for g in self.groups]

    def to_json(self) -> dict[str, Any]:
        """How the plan was asked for (enough to rebuild it with :func:`plan_from_json`)."""
        out: dict[str, Any] = {"kind": self.kind}
        if self.kind == "marginals":
            out["marginals"] = [
                [self.schema.names[d] for d, b in enumerate(g.blocks) if not b.is_total] for g in self.groups
            ]
        elif self.kind == "tree":
            out["attribute"] = self.tree_attribute
            out["branching"] = self.branching
            out["depth"] = len(self.groups) - 1
            out["cross"] = list(self.crossed)
        return out


def _check_cube(schema: Schema) -> None:
    if not isinstance(schema, Schema) or not schema.attributes or schema.n_cells == 0:
        raise PlanError("plan: the cube has no cells (declare at least one attribute)")


def cells_plan(schema: Schema) -> PartitionPlan:
    """Every cell of the cube, once (the seed's release)."""
    _check_cube(schema)
    g = Group("cells", tuple(Blocks.cells(a.size) for a in schema.attributes))
    return PartitionPlan(schema, "cells", (g,), f"every cell ({schema.n_cells} counts)")


def _marginal_group(schema: Schema, names: tuple[str, ...]) -> Group:
    blocks = tuple(
        Blocks.cells(a.size) if a.name in names else Blocks.total(a.size) for a in schema.attributes
    )
    return Group("×".join(names) if names else "total", blocks)


def marginals_plan(schema: Schema, marginals: Iterable[Sequence[str]]) -> PartitionPlan:
    """The listed marginals, each a set of attribute names (its counts sum over the other attributes)."""
    _check_cube(schema)
    seen: list[tuple[str, ...]] = []
    for i, m in enumerate(marginals):
        if isinstance(m, str):
            m = [m]
        names = tuple(m)
        if not names:
            raise PlanError(f"marginals[{i}]: empty attribute list")
        for n in names:
            if n not in schema.names:
                raise PlanError(
                    f"marginals[{i}]: unknown attribute {n!r} (attributes: {', '.join(map(repr, schema.names))})"
                )
        if len(set(names)) != len(names):
            raise PlanError(f"marginals[{i}]: attribute listed twice in {list(names)}")
        canon = tuple(n for n in schema.names if n in names)
        if canon in seen:
            raise PlanError(f"marginals[{i}]: marginal {list(canon)} listed twice")
        seen.append(canon)
    if not seen:
        raise PlanError("plan: no marginals given")
    groups = tuple(_marginal_group(schema, m) for m in seen)
    desc = ", ".join("×".join(m) for m in seen)
    return PartitionPlan(
        schema, "marginals", groups, f"marginals {desc} ({sum(g.n_rows for g in groups)} counts)"
    )


def marginals_by_order(schema: Schema, orders: Iterable[int]) -> PartitionPlan:
    """All marginals of the given orders, e.g. ``(1, 2)`` for every 1-way and 2-way marginal."""
    _check_cube(schema)
    chosen: list[tuple[str, ...]] = []
    n = len(schema.attributes)
    orders = list(orders)
    if not orders:
        raise PlanError("plan: no marginal orders given")
    for k in orders:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= n:
            raise PlanError(
                f"plan: marginal order {k!r} must be an integer from 1 to {n} (the cube has {n} attributes)"
            )
        chosen.extend(itertools.combinations(schema.names, int(k)))
    return marginals_plan(schema, list(dict.fromkeys(chosen)))


def _tree_attribute(schema: Schema, attribute: str) -> Any:
    """The ordered attribute a tree is built over, checked (numeric, at least two labels)."""
    if attribute not in schema.names:
        raise PlanError(
            f"tree: unknown attribute {attribute!r} (attributes: {', '.join(map(repr, schema.names))})"
        )
    attr = schema.attribute(attribute)
    if attr.kind != "numeric":
        raise PlanError(
            f"tree: attribute {attribute!r} is not ordered (an interval tree needs a numeric attribute)"
        )
    if attr.size < 2:
        raise PlanError(f"tree: attribute {attribute!r} has {attr.size} label; a tree needs at least 2")
    return attr


def _crossed(schema: Schema, attribute: str, others: list[str], cross: bool | Sequence[str]) -> list[str]:
    """The other attributes every node is crossed with, in the schema's order."""
    if cross is True:
        return others
    if cross is False:
        return []
    chosen = list(cross)
    for n in chosen:
        if n not in schema.names:
            raise PlanError(
                f"tree: unknown attribute {n!r} to cross with (attributes: {', '.join(map(repr, schema.names))})"
            )
        if n == attribute:
            raise PlanError(f"tree: cannot cross {attribute!r} with itself")
    return [n for n in others if n in chosen]


def tree_plan(
    schema: Schema,
    attribute: str,
    branching: int = 2,
    depth: int | None = None,
    cross: bool | Sequence[str] = True,
) -> PartitionPlan:
    """A hierarchical interval tree over the ordered attribute ``attribute``.

    Parameters
    ----------
    schema : Schema
    attribute : str
        A numeric (ordered) attribute with at least two labels.
    branching : int
        Labels per node at each level up (``b ≥ 2``).
    depth : int, optional
        Levels above the single labels; the default reaches one root node (``⌈log_b k⌉``). Level ``j``
        releases blocks of ``b^j`` consecutive labels (the last block of a level may be shorter).
    cross : bool or sequence of str
        The other attributes every node is crossed with (True: all; False: none, i.e. summed over).

    Examples
    --------
    >>> from dpdesk.engine.schema import Schema
    >>> s = Schema.from_dict({"attributes": [{"name": "age", "column": "age", "kind": "numeric",
    ...                                       "edges": [0, 10, 20, 30, 40]}]})
    >>> [g.n_rows for g in tree_plan(s, "age").groups]
    [1, 2, 4]
    """
    _check_cube(schema)
    attr = _tree_attribute(schema, attribute)
    if isinstance(branching, bool) or not isinstance(branching, (int, np.integer)) or branching < 2:
        raise PlanError(f"tree: branching ({branching!r}) must be an integer ≥ 2")
    full = 1
    while branching**full < attr.size:
        full += 1
    if depth is None:
        depth = full
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or not 1 <= depth <= full:
        raise PlanError(
            f"tree: depth ({depth!r}) must be an integer from 1 to {full} (branching {branching}, {attr.size} labels)"
        )
    axis = schema.axis(attribute)
    others = [n for n in schema.names if n != attribute]
    crossed = _crossed(schema, attribute, others, cross)
    groups = []
    for j in range(int(depth), -1, -1):
        width = int(branching) ** j
        blocks = []
        for d, a in enumerate(schema.attributes):
            if d == axis:
                blocks.append(Blocks.of_width(a.size, width))
            else:
                blocks.append(Blocks.cells(a.size) if a.name in crossed else Blocks.total(a.size))
        groups.append(Group(f"{attribute} blocks of {width}", tuple(blocks)))
    with_ = (
        f", crossed with {', '.join(crossed)}" if crossed else (", other attributes summed" if others else "")
    )
    desc = f"interval tree over {attribute} (branching {branching}, {depth + 1} levels){with_}"
    return PartitionPlan(
        schema,
        "tree",
        tuple(groups),
        f"{desc} ({sum(g.n_rows for g in groups)} counts)",
        tree_attribute=attribute,
        branching=int(branching),
        crossed=tuple(crossed),
    )


def plan_from_json(schema: Schema, obj: dict[str, Any]) -> PartitionPlan:
    """Rebuild a plan from :meth:`PartitionPlan.to_json`."""
    if not isinstance(obj, dict) or obj.get("kind") not in ("cells", "marginals", "tree"):
        raise PlanError("plan: 'kind' must be one of 'cells', 'marginals', 'tree'")
    if obj["kind"] == "cells":
        return cells_plan(schema)
    if obj["kind"] == "marginals":
        return marginals_plan(schema, obj.get("marginals", []))
    attribute = obj.get("attribute")
    if not isinstance(attribute, str):
        raise PlanError("plan: a tree needs 'attribute', the name of the attribute it splits")
    return tree_plan(schema, attribute, obj.get("branching", 2), obj.get("depth"), obj.get("cross", True))
