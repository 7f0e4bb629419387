"""The query classes a partition release's guarantee speaks about (every interval, every cell, every cell
of a marginal), the classes a preview reports by default, and how one member of a class is named."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from dpdesk.engine.errors import PlanError
from dpdesk.engine.partition.plan import PartitionPlan
from dpdesk.engine.queries.query import Query
from dpdesk.engine.queries.text import format_terms
from dpdesk.engine.schema import Schema

__all__ = ["QueryClass", "check_class", "default_classes", "describe_box"]


@dataclass(frozen=True)
class QueryClass:
    """A family of queries a guarantee speaks about.

    ``kind="interval"``: every interval of the ordered ``attribute``, the other attributes summed
    (``within="all"``) or each fixed to one label (``within="cell"``). ``kind="cell"``: every single cell.
    ``kind="marginal"``: every cell of the marginal over ``attributes``.
    """

    kind: Literal["interval", "cell", "marginal"]
    attribute: str | None = None
    within: Literal["all", "cell"] = "all"
    attributes: tuple[str, ...] = ()

    def describe(self) -> str:
        if self.kind == "cell":
            return "every cell"
        if self.kind == "marginal":
            return f"every cell of the {'×'.join(self.attributes)} marginal"
        rest = (
            "other attributes summed" if self.within == "all" else "other attributes fixed to one label each"
        )
        return f"every interval of {self.attribute} ({rest})"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        if self.kind == "interval":
            out.update(attribute=self.attribute, within=self.within)
        if self.kind == "marginal":
            out["attributes"] = list(self.attributes)
        return out


def describe_box(schema: Schema, query: Query) -> str:
    """``age=20-30..60-70, sex=F`` for a one-term 0/1 query whose factors are label ranges."""
    if query.terms is None or len(query.terms) != 1:
        return format_terms(query.terms, schema) or query.describe() if query.terms else query.describe()
    parts = []
    for attr, f in zip(schema.attributes, query.terms[0].factors):
        nz = np.flatnonzero(f)
        if nz.size == f.size:
            continue
        if not np.all(f[nz] == 1) or nz[-1] - nz[0] + 1 != nz.size:
            return format_terms(query.terms, schema) or query.describe()
        lab = attr.labels[nz[0]] if nz.size == 1 else f"{attr.labels[nz[0]]}..{attr.labels[nz[-1]]}"
        parts.append(f"{attr.name}={lab}")
    return ", ".join(parts) if parts else "all records"


def default_classes(plan: PartitionPlan) -> tuple[QueryClass, ...]:
    """The query classes a preview reports by default; the first one is what an accuracy target means."""
    s = plan.schema
    if plan.kind == "tree":
        out = [QueryClass("interval", plan.tree_attribute, "all")]
        if len(s.attributes) > 1 and len(plan.crossed) == len(s.attributes) - 1:
            out.append(QueryClass("interval", plan.tree_attribute, "cell"))
        return tuple(out)
    if plan.kind == "marginals":
        return tuple(
            QueryClass(
                "marginal", attributes=tuple(n for d, n in enumerate(s.names) if not g.blocks[d].is_total)
            )
            for g in plan.groups
        )
    numeric = [a.name for a in s.attributes if a.kind == "numeric" and a.size > 1]
    return tuple(QueryClass("interval", n, "all") for n in numeric) + (QueryClass("cell"),)


def check_class(plan: PartitionPlan, qc: QueryClass) -> None:
    names = plan.schema.names
    if qc.kind == "interval":
        if qc.attribute not in names:
            raise PlanError(
                f"guarantee: unknown attribute {qc.attribute!r} (attributes: {', '.join(map(repr, names))})"
            )
        if plan.schema.attribute(qc.attribute).kind != "numeric":
            raise PlanError(
                f"guarantee: attribute {qc.attribute!r} is not ordered; intervals need a numeric attribute"
            )
    elif qc.kind == "marginal":
        for n in qc.attributes:
            if n not in names:
                raise PlanError(
                    f"guarantee: unknown attribute {n!r} (attributes: {', '.join(map(repr, names))})"
                )
    elif qc.kind != "cell":
        raise PlanError(f"guarantee: query class {qc.kind!r} must be 'interval', 'cell' or 'marginal'")
