"""Declared attribute domains and the cube's cell layout.

A :class:`Schema` is the curator's declaration of which table columns become cube attributes and what
their domains are: categorical value lists or numeric bin edges (DESIGN §6). Nothing here reads data:
domains are public knowledge and must be declared, never read off the table. Cells are ordered in C
order (last attribute fastest).

Two optional members extend the DESIGN §6 format (old files read as before, and a schema without them
writes exactly what it read): ``privacy_unit`` (:mod:`dpdesk.engine.unit`: whose rows are one person,
and the contribution bounds) and ``measures`` (:mod:`dpdesk.engine.measures`: numeric columns summed per
cell within declared clamp bounds).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from dpdesk.engine.errors import SchemaError
from dpdesk.engine.measures import Measure, parse_measures
from dpdesk.engine.unit import ROW, PrivacyUnit, parse_unit

Kind = Literal["categorical", "numeric"]
# A cell's flat index is a 64-bit integer (in numpy and in the generated SQL). A cube that is counted is
# held in memory, which bounds it far lower (engine/cube.py MAX_CUBE_CELLS).
MAX_CELLS = 2**62


def _fmt_edge(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def half_open_labels(edges: Sequence[float]) -> tuple[str, ...]:
    """Labels that read as the bins they are — ``[e_i, e_{i+1})``, the last one closed — where ``0-1``
    reads as "0 or 1": ``0 to <1``, …, ``90 to 150``. What the app writes for a numeric attribute whose
    labels the curator left empty (a schema file without labels keeps the ``a-b`` labels of DESIGN §6).

    >>> half_open_labels([0, 1, 10, 150])
    ('0 to <1', '1 to <10', '10 to 150')
    """
    e = [_fmt_edge(float(x)) for x in edges]
    return tuple(f"{a} to {'' if i == len(e) - 2 else '<'}{b}" for i, (a, b) in enumerate(zip(e, e[1:])))


@dataclass(frozen=True)
class Attribute:
    """One cube dimension.

    ``values`` holds the declared categories (categorical) and ``edges`` the strictly increasing bin
    edges (numeric: bins ``[e_i, e_{i+1})``, the last one closed). ``labels`` names each position of
    the domain; it defaults to the values, or to ``"lo-hi"`` for numeric bins.
    """

    name: str
    column: str
    kind: Kind
    labels: tuple[str, ...]
    values: tuple[Any, ...] = ()
    edges: tuple[float, ...] = ()

    @property
    def size(self) -> int:
        return len(self.labels)

    def position(self, label: str) -> int:
        """Index of ``label`` in this attribute's domain (raises SchemaError if unknown)."""
        try:
            return self.labels.index(label)
        except ValueError:
            raise SchemaError(
                f"attribute '{self.name}' has no label {label!r} (labels: {', '.join(map(repr, self.labels))})"
            ) from None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "column": self.column, "kind": self.kind}
        if self.kind == "numeric":
            out["edges"] = [int(e) if float(e).is_integer() else float(e) for e in self.edges]
        else:
            out["values"] = list(self.values)
        out["labels"] = list(self.labels)
        return out


@dataclass(frozen=True)
class Schema:
    """The declared attributes of a cube, in order (C-order flattening, last attribute fastest), with the
    privacy unit (default: one row is one person) and the measures summed per cell (default: none)."""

    attributes: tuple[Attribute, ...]
    unit: PrivacyUnit = ROW
    measures: tuple[Measure, ...] = ()

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(a.size for a in self.attributes)

    @property
    def n_cells(self) -> int:
        return int(math.prod(self.shape))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.attributes)

    def attribute(self, name: str) -> Attribute:
        for a in self.attributes:
            if a.name == name:
                return a
        raise SchemaError(f"unknown attribute {name!r} (attributes: {', '.join(map(repr, self.names))})")

    def axis(self, name: str) -> int:
        return self.names.index(self.attribute(name).name)

    def cell_labels(self, flat_index: int) -> tuple[str, ...]:
        """The labels of the cell at ``flat_index`` (C order)."""
        if not 0 <= flat_index < self.n_cells:
            raise SchemaError(f"cell index {flat_index} outside 0..{self.n_cells - 1}")
        idx = np.unravel_index(int(flat_index), self.shape)
        return tuple(a.labels[int(i)] for a, i in zip(self.attributes, idx))

    def describe_cell(self, flat_index: int) -> str:
        """``'age=0-30, income=>50K'`` for the cell at ``flat_index``."""
        return ", ".join(f"{a.name}={lab}" for a, lab in zip(self.attributes, self.cell_labels(flat_index)))

    def measure(self, name: str) -> Measure:
        for m in self.measures:
            if m.name == name:
                return m
        known = ", ".join(repr(m.name) for m in self.measures) or "none"
        raise SchemaError(f"unknown measure {name!r} (measures: {known})")

    def columns(self) -> tuple[str, ...]:
        """Every table column the schema reads (attributes, measures, the privacy unit), once each."""
        cols = [a.column for a in self.attributes] + [m.column for m in self.measures]
        if self.unit.column is not None:
            cols.append(self.unit.column)
        return tuple(dict.fromkeys(cols))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"attributes": [a.to_dict() for a in self.attributes]}
        unit = self.unit.to_dict()
        if unit is not None:
            out["privacy_unit"] = unit
        if self.measures:
            out["measures"] = [m.to_dict() for m in self.measures]
        return out

    @classmethod
    def from_dict(cls, obj: Any) -> Schema:
        """Parse the DESIGN §6 schema object; errors name the offending member."""
        return parse_schema(obj)


def _finite_number(x: Any, where: str) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise SchemaError(f"{where}: edges must be numbers, got {x!r}")
    try:
        v = float(x)
    except OverflowError:  # an integer of hundreds of digits
        raise SchemaError(f"{where}: edges must be finite, got a {len(str(x))}-digit number") from None
    if not math.isfinite(v):
        raise SchemaError(f"{where}: edges must be finite, got {x!r}")
    return v


def _parse_labels(raw: Any, expected: int, where: str) -> tuple[str, ...] | None:
    if raw is None:
        return None
    if not isinstance(raw, list) or not all(isinstance(s, str) for s in raw):
        raise SchemaError(f"{where}.labels: must be a list of strings")
    if len(raw) != expected:
        raise SchemaError(f"{where}.labels: {len(raw)} labels for {expected} domain positions")
    if len(set(raw)) != len(raw):
        raise SchemaError(f"{where}.labels: labels must be distinct")
    return tuple(raw)


def parse_attribute(obj: Any, where: str = "attribute") -> Attribute:
    if not isinstance(obj, dict):
        raise SchemaError(f"{where}: must be an object, got {type(obj).__name__}")
    name = obj.get("name")
    if not isinstance(name, str) or not name.strip():
        raise SchemaError(f"{where}.name: must be a non-empty string")
    column = obj.get("column", name)
    if not isinstance(column, str) or not column:
        raise SchemaError(f"{where}.column: must be a non-empty string")
    kind = obj.get("kind")
    if kind == "numeric":
        edges_raw = obj.get("edges")
        if not isinstance(edges_raw, list) or len(edges_raw) < 2:
            raise SchemaError(f"{where}.edges: a numeric attribute needs a list of at least 2 edges")
        edges = tuple(_finite_number(e, f"{where}.edges[{i}]") for i, e in enumerate(edges_raw))
        if any(b <= a for a, b in zip(edges, edges[1:])):
            raise SchemaError(f"{where}.edges: must be strictly increasing")
        labels = _parse_labels(obj.get("labels"), len(edges) - 1, where) or tuple(
            f"{_fmt_edge(a)}-{_fmt_edge(b)}" for a, b in zip(edges, edges[1:])
        )
        return Attribute(name=name, column=column, kind="numeric", labels=labels, edges=edges)
    if kind == "categorical":
        values = obj.get("values")
        if not isinstance(values, list) or not values:
            raise SchemaError(f"{where}.values: a categorical attribute needs a non-empty list of values")
        for i, v in enumerate(values):
            if isinstance(v, bool) or not isinstance(v, (str, int, float)):
                raise SchemaError(f"{where}.values[{i}]: must be a string or number, got {v!r}")
            if (isinstance(v, int) and not -(2**63) <= v < 2**63) or (
                isinstance(v, float) and not math.isfinite(v)
            ):
                raise SchemaError(f"{where}.values[{i}]: a number must be finite and fit in 64 bits")
        if len(set(values)) != len(values):
            raise SchemaError(f"{where}.values: values must be distinct")
        labels = _parse_labels(obj.get("labels"), len(values), where) or tuple(str(v) for v in values)
        if len(set(labels)) != len(labels):
            raise SchemaError(f"{where}.values: values must have distinct text forms")
        return Attribute(name=name, column=column, kind="categorical", labels=labels, values=tuple(values))
    raise SchemaError(f"{where}.kind: must be 'categorical' or 'numeric', got {kind!r}")


def parse_schema(obj: Any) -> Schema:
    """Parse a DESIGN §6 schema object (already decoded from JSON)."""
    if not isinstance(obj, dict) or "attributes" not in obj:
        raise SchemaError("schema: must be an object with an 'attributes' list")
    attrs = obj["attributes"]
    if not isinstance(attrs, list) or not attrs:
        raise SchemaError("schema.attributes: must be a non-empty list")
    parsed = tuple(parse_attribute(a, f"attributes[{i}]") for i, a in enumerate(attrs))
    names = [a.name for a in parsed]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise SchemaError(f"schema.attributes: duplicate attribute name {sorted(dup)[0]!r}")
    cells = math.prod(a.size for a in parsed)
    if cells > MAX_CELLS:
        raise SchemaError(
            f"schema.attributes: {' × '.join(str(a.size) for a in parsed)} = {cells:.3g} cells, more than "
            "a 64-bit cell index can number"
        )
    unit = parse_unit(obj.get("privacy_unit"), tuple(names))
    measures = parse_measures(obj.get("measures"))
    return Schema(parsed, unit, measures)
