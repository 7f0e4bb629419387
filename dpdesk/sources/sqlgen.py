"""The cube's ``GROUP BY``, generated once for every SQL engine (DuckDB, SQLite, PostgreSQL, Spark).

Each attribute becomes a ``CASE`` over its *declared* domain (numeric edges or categorical values, never
anything read off the data), giving the domain position or NULL when the value is out of domain or
missing. The flat C-order cell index is computed in SQL, ``COALESCE``-d to -1 for out-of-domain rows, and
grouped, so only at most ``n_cells + 1`` (cell, count) rows come back.

Safety: identifiers are always quoted (double quotes; backticks in Spark SQL; an embedded quote character
doubled); edges and declared values are always bound parameters. The only literals pasted into the text are integers computed here (domain
positions and strides).

The binning rule is the engine's (:func:`dpdesk.engine.cube.attribute_codes`): numeric bins
``[e_i, e_{i+1})`` with the last one closed; categorical values match by equality, or by text form (a
text column is compared with each declared value's text form; a numeric column with declared numbers by
equality and with declared strings by the engine's text rendering of the number).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dpdesk.engine.schema import Attribute, Schema


def quote_ident(name: str, quote: str = '"') -> str:
    """``name`` as a quoted SQL identifier (``a"b`` → ``"a""b"``; with ``quote="`"``, Spark's form)."""
    if "\x00" in name:
        raise ValueError("identifiers cannot contain NUL characters")
    return quote + name.replace(quote, quote + quote) + quote


@dataclass(frozen=True)
class Dialect:
    """How one engine spells parameters, text casts and quoted identifiers."""

    name: str
    placeholder: str  # "?" (qmark) or "$" (numbered $1, $2, ...)
    text_type: str = "TEXT"
    quote: str = '"'  # Spark SQL reads "..." as a string literal unless ANSI identifiers are on

    def ident(self, name: str) -> str:
        return quote_ident(name, self.quote)


DUCKDB = Dialect("duckdb", "?", "VARCHAR")
SQLITE = Dialect("sqlite", "?", "TEXT")
POSTGRESQL = Dialect("postgresql", "$", "TEXT")
SPARK = Dialect("spark", "?", "STRING", "`")


@dataclass
class Params:
    """The parameters of a statement being generated, in placeholder order; ``hidden`` marks the
    positions (0-based) of secrets that ``--show-sql`` must not print (the keyed order's constants)."""

    dialect: Dialect
    values: list[Any] = field(default_factory=list)
    hidden: set[int] = field(default_factory=set)

    def add(self, value: Any, *, secret: bool = False) -> str:
        self.values.append(value)
        if secret:
            self.hidden.add(len(self.values) - 1)
        return "?" if self.dialect.placeholder == "?" else f"${len(self.values)}"


@dataclass(frozen=True)
class CubeQuery:
    """A generated statement and its parameters (in placeholder order).

    ``hidden`` lists the 0-based positions of parameters that are secrets (never displayed);
    ``columns`` names the result's columns when the statement is not the plain (cell, n) count.
    """

    sql: str
    params: tuple[Any, ...]
    hidden: frozenset[int] = frozenset()
    columns: tuple[str, ...] = ("cell", "n")

    def display(self) -> str:
        """The statement followed by its parameters as SQL comments (for ``--show-sql``)."""
        lines = [self.sql.rstrip(), "-- parameters, in placeholder order:"]
        for i, p in enumerate(self.params, 1):
            shown = (
                "(a constant of the keyed order, not shown)"
                if i - 1 in self.hidden
                else json.dumps(p, ensure_ascii=False)
            )
            lines.append(f"--   {i}: {shown}")
        return "\n".join(lines)


def _numeric_case(col: str, a: Attribute, p: Params) -> str:
    e = [float(x) for x in a.edges]
    k = len(e) - 1
    parts = [f"WHEN {col} < {p.add(e[0])} THEN NULL"]
    for i in range(1, k):
        parts.append(f"WHEN {col} < {p.add(e[i])} THEN {i - 1}")
    parts.append(f"WHEN {col} <= {p.add(e[k])} THEN {k - 1}")  # the last bin is closed
    return "CASE " + " ".join(parts) + " END"


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v))


def _categorical_case(col: str, a: Attribute, column_kind: str, p: Params, dialect: Dialect) -> str:
    as_text = f"CAST({col} AS {dialect.text_type})"
    if column_kind == "text" and dialect.name == "duckdb":
        # One hashed lookup per row instead of a chain of string comparisons (about twice as fast).
        return f"list_position({p.add([str(v) for v in a.values])}, {col}) - 1"
    if column_kind == "text":
        parts = [f"WHEN {p.add(str(v))} THEN {i}" for i, v in enumerate(a.values)]
        return f"CASE {col} " + " ".join(parts) + " END"
    if column_kind == "numeric":
        parts = []
        for i, v in enumerate(a.values):
            if _is_number(v):
                parts.append(f"WHEN {col} = {p.add(float(v) if isinstance(v, float) else int(v))} THEN {i}")
            else:
                parts.append(f"WHEN {as_text} = {p.add(str(v))} THEN {i}")
        return "CASE " + " ".join(parts) + " END"
    if column_kind == "any":  # untyped (SQLite without a declared type): a cell may hold either
        parts = []
        for i, v in enumerate(a.values):
            if _is_number(v):
                num = p.add(float(v) if isinstance(v, float) else int(v))
                parts.append(f"WHEN {col} = {num} OR {as_text} = {p.add(str(v))} THEN {i}")
            else:
                parts.append(f"WHEN {as_text} = {p.add(str(v))} THEN {i}")
        return "CASE " + " ".join(parts) + " END"
    parts = [f"WHEN {p.add(str(v))} THEN {i}" for i, v in enumerate(a.values)]
    return f"CASE {as_text} " + " ".join(parts) + " END"


def attribute_code(a: Attribute, column_kind: str, p: Params, dialect: Dialect) -> str:
    """The attribute's domain position as a BIGINT expression (NULL when out of domain or missing)."""
    col = dialect.ident(a.column)
    case = (
        _numeric_case(col, a, p)
        if a.kind == "numeric"
        else _categorical_case(col, a, column_kind, p, dialect)
    )
    # BIGINT before the arithmetic: small integer types overflow (PLATFORM.md), and cubes can be big.
    return f"CAST({case} AS BIGINT)"


def cube_query(
    schema: Schema,
    column_kinds: Mapping[str, str],
    from_clause: str,
    from_params: tuple[Any, ...] = (),
    dialect: Dialect = DUCKDB,
) -> CubeQuery:
    """The ``GROUP BY`` that counts ``from_clause``'s rows into ``schema``'s cells.

    ``column_kinds`` maps each schema column to ``"numeric"``, ``"text"``, ``"other"`` (dates,
    booleans: compared by text form) or ``"any"`` (untyped; checked by the caller). ``from_clause`` is a quoted table name or a table function; its own placeholders take
    ``from_params``. The result has columns ``cell`` (C-order flat index, -1 = out of domain) and ``n``.
    """
    p = Params(dialect)
    n = len(schema.attributes)
    strides = [math.prod(schema.shape[d + 1 :]) for d in range(n)]
    terms = []
    for a, stride in zip(schema.attributes, strides):
        code = attribute_code(a, column_kinds[a.column], p, dialect)
        terms.append(code if stride == 1 else f"{code} * {stride}")
    index = "\n       + ".join(terms)
    if from_params and dialect.placeholder != "?":
        raise ValueError("a FROM clause with parameters needs a qmark dialect")
    for v in from_params:  # the FROM clause comes after the index expression in the text
        p.add(v)
    sql = (
        "SELECT cell, COUNT(*) AS n\n"
        "FROM (\n"
        f"  SELECT COALESCE({index}, -1) AS cell\n"
        f"  FROM {from_clause}\n"
        ") AS binned\n"
        "GROUP BY cell\n"
        "ORDER BY cell"
    )
    return CubeQuery(sql=sql, params=tuple(p.values))
