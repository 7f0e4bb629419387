"""The privacy unit: whose data one neighbouring table adds or removes, and how much of it.

By default one row is one person (DESIGN §1's neighbours: add or remove one record). A schema may declare
instead that the rows sharing a value of one column belong to one person, with *contribution bounds*
the cube build enforces where the data lives (:mod:`dpdesk.sources`, :mod:`dpdesk.engine.truncation`):
at most ``max_rows`` rows per person in all and, optionally, at most one row per person in each cell
(``one_row_per: "cell"``) or per value of some attributes (``one_row_per: ["year"]``). The declaration is
public (it sits in the schema and the project file); nothing of how many rows people really have is.

JSON (the schema's optional ``privacy_unit`` member; absent means one row per person)::

    {"column": "patient_id", "max_rows": 5, "one_row_per": "cell"}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dpdesk.engine.errors import SchemaError

MAX_ROWS_LIMIT = 1_000_000  # a bound beyond this protects nobody; it also keeps ranks small in SQL


@dataclass(frozen=True)
class PrivacyUnit:
    """Who is protected: one row (``column`` None) or the rows sharing a value of ``column``.

    ``max_rows`` bounds a person's rows in the cube (1 when one row is one person). ``one_row_per_cell``
    keeps at most one row per person in each cell; ``one_row_per`` (attribute names) keeps at most one
    row per person per value of those attributes. Both empty: only ``max_rows`` applies.

    Examples
    --------
    >>> PrivacyUnit().rows_are_people
    True
    >>> PrivacyUnit("patient_id", 5, one_row_per_cell=True).describe()
    'rows with the same patient_id are one person (at most 5 rows per person, at most one per cell)'
    """

    column: str | None = None
    max_rows: int = 1
    one_row_per_cell: bool = False
    one_row_per: tuple[str, ...] = ()

    @property
    def rows_are_people(self) -> bool:
        """True when one row is one person (the default; no truncation)."""
        return self.column is None

    @property
    def grouped(self) -> bool:
        """True when a person keeps at most one row per cell or per value of some attributes."""
        return self.one_row_per_cell or bool(self.one_row_per)

    def group_attributes(self, names: tuple[str, ...]) -> tuple[str, ...]:
        """The attributes whose values a person may hold one row of (all of ``names`` for one per cell)."""
        return names if self.one_row_per_cell else self.one_row_per

    def describe(self) -> str:
        """The unit in the curator's words."""
        if self.column is None:
            return "one row is one person"
        per = ""
        if self.one_row_per_cell:
            per = ", at most one per cell"
        elif self.one_row_per:
            per = f", at most one per value of {', '.join(self.one_row_per)}"
        plural = "row" if self.max_rows == 1 else "rows"
        return (
            f"rows with the same {self.column} are one person "
            f"(at most {self.max_rows} {plural} per person{per})"
        )

    def to_dict(self) -> dict[str, Any] | None:
        """The schema's ``privacy_unit`` member (None when one row is one person: the member is omitted)."""
        if self.column is None:
            return None
        out: dict[str, Any] = {"column": self.column, "max_rows": self.max_rows}
        if self.one_row_per_cell:
            out["one_row_per"] = "cell"
        elif self.one_row_per:
            out["one_row_per"] = list(self.one_row_per)
        return out


ROW = PrivacyUnit()


def parse_unit(obj: Any, attribute_names: tuple[str, ...], where: str = "privacy_unit") -> PrivacyUnit:
    """Parse the schema's ``privacy_unit`` member; errors name the member (``privacy_unit.max_rows: ...``).

    ``None`` or ``"row"`` is the default unit (one row per person).
    """
    if obj is None or obj == "row":
        return ROW
    if not isinstance(obj, dict):
        raise SchemaError(
            f"{where}: must be an object such as "
            '{"column": "patient_id", "max_rows": 5}, or "row" (one row is one person)'
        )
    unknown = sorted(set(obj) - {"column", "max_rows", "one_row_per"})
    if unknown:
        raise SchemaError(f"{where}.{unknown[0]}: unknown member (known: column, max_rows, one_row_per)")
    column = obj.get("column")
    if not isinstance(column, str) or not column:
        raise SchemaError(f"{where}.column: must name the column whose equal values are one person")
    k = obj.get("max_rows")
    if isinstance(k, bool) or not isinstance(k, int):
        raise SchemaError(
            f"{where}.max_rows: must be a whole number of rows a person may contribute, got {k!r}"
        )
    if not 1 <= k <= MAX_ROWS_LIMIT:
        raise SchemaError(f"{where}.max_rows: must be between 1 and {MAX_ROWS_LIMIT}, got {k}")
    per = obj.get("one_row_per")
    if per is None:
        return PrivacyUnit(column, k)
    if per == "cell":
        return PrivacyUnit(column, k, one_row_per_cell=True)
    if not isinstance(per, list) or not per or not all(isinstance(n, str) for n in per):
        raise SchemaError(f'{where}.one_row_per: must be "cell" or a non-empty list of attribute names')
    for name in per:
        if name not in attribute_names:
            raise SchemaError(
                f"{where}.one_row_per: no attribute {name!r} (attributes: {', '.join(map(repr, attribute_names))})"
            )
    if len(set(per)) != len(per):
        raise SchemaError(f"{where}.one_row_per: names an attribute twice")
    if set(per) == set(attribute_names):
        return PrivacyUnit(column, k, one_row_per_cell=True)
    return PrivacyUnit(column, k, one_row_per=tuple(n for n in attribute_names if n in per))
