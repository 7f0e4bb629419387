"""The cube's statement when the schema declares measures or a privacy unit: sums and truncation in SQL.

One generated statement per build, for every SQL engine (DuckDB, SQLite, PostgreSQL, Spark), reproducing
the engine's reference rules exactly (:mod:`dpdesk.engine.measures`, :mod:`dpdesk.engine.truncation`):

- each measure's value is cast to a double, clamped to its declared bounds and summed as the integer
  ``trunc(v · 2^f)``, split into ``v >> 26`` and ``v & (2^26 − 1)`` so the sums are exact integers on
  every engine (the order of addition cannot change them);
- with a privacy unit, each row inside the domain gets the keyed order value ``o`` (integer arithmetic
  modulo ``2^31 − 1``; the key's constants are bound parameters, never shown by ``--show-sql``), and a
  window over the unit (``ROW_NUMBER() OVER (PARTITION BY unit ORDER BY o, cell, …)``) keeps a person's
  first ``max_rows`` rows — after keeping only the first row of each cell or group when one row per
  cell or group is declared.

The result has one row per cell (``-1``: out of domain, or no identifier) with the kept count ``n``,
the measures' split sums ``h<i>``, ``l<i>`` and their numbers of present values ``p<i>``, and, with a
privacy unit, ``dropped``, ``over_limit``, ``people`` and ``repeats`` (see
:class:`~dpdesk.engine.truncation.TruncationReport`), summed over cells by the caller. No row leaves
the engine. Without measures and a unit the plain ``GROUP BY`` of :mod:`dpdesk.sources.sqlgen` runs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from dpdesk.engine.measures import SPLIT_BITS, Measure
from dpdesk.engine.schema import Schema
from dpdesk.engine.truncation import (
    CANONICAL_INTEGER,
    INTEGER_LIMIT,
    MISSING_Q,
    PRIME,
    QUANTUM_OFFSET,
    OrderKey,
)
from dpdesk.sources import sqlgen
from dpdesk.sources.sqlgen import DUCKDB, CubeQuery, Dialect, Params, attribute_code

UNIT_KINDS = ("integer", "text", "any")  # "any": SQLite's untyped column, numbered by a registered function
SQLITE_UNIT_FUNCTION = "dpdesk_unit_number"  # registered on the connection by the SQLite source
_MASK = (1 << SPLIT_BITS) - 1


def _double(dialect: Dialect, col: str) -> str:
    if dialect.name == "sqlite":  # text in a numeric column is missing, as when pandas reads it
        return f"(CASE WHEN typeof({col}) IN ('integer', 'real') THEN CAST({col} AS REAL) END)"
    if dialect.name == "postgresql":
        return f"CAST({col} AS DOUBLE PRECISION)"
    return f"CAST({col} AS DOUBLE)"


def _missing(dialect: Dialect, v: str) -> str:
    """NULL or NaN: every engine here orders NaN above every number, so it must be caught first."""
    if dialect.name == "sqlite":  # SQLite stores NaN as NULL
        return f"{v} IS NULL"
    if dialect.name == "postgresql":
        return f"({v} IS NULL OR {v} = CAST('NaN' AS DOUBLE PRECISION))"
    return f"({v} IS NULL OR isnan({v}))"


def _trunc(dialect: Dialect, x: str) -> str:
    """Toward zero, as a BIGINT (the value is a whole number of at most 53 bits by then)."""
    if dialect.name in ("duckdb", "postgresql"):  # their CAST rounds to nearest
        return f"CAST(trunc({x}) AS BIGINT)"
    if dialect.name == "sqlite":
        return f"CAST({x} AS INTEGER)"
    return f"CAST({x} AS BIGINT)"  # Spark's cast truncates


def _shift(dialect: Dialect, x: str) -> str:
    if dialect.name == "spark":
        return f"shiftright({x}, {SPLIT_BITS})"
    return f"({x} >> {SPLIT_BITS})"


def _md5_60(dialect: Dialect, text: str) -> str:
    """The first 60 bits (15 hex digits) of the MD5 of ``text``'s UTF-8 bytes, as a BIGINT."""
    if dialect.name == "postgresql":
        return f"CAST(CAST(('x' || substr(md5({text}), 1, 15)) AS BIT(60)) AS BIGINT)"
    if dialect.name == "spark":
        return f"CAST(conv(substr(md5({text}), 1, 15), 16, 10) AS BIGINT)"
    return f"CAST(('0x' || substr(md5({text}), 1, 15)) AS BIGINT)"


def _is_integer_text(dialect: Dialect, text: str, p: Params) -> str:
    if dialect.name == "duckdb":
        return f"regexp_full_match({text}, {p.add(CANONICAL_INTEGER)})"
    if dialect.name == "postgresql":
        return f"{text} ~ {p.add(f'^({CANONICAL_INTEGER})$')}"
    return f"{text} RLIKE {p.add(f'^({CANONICAL_INTEGER})$')}"  # Spark


def _as_bigint(dialect: Dialect, text: str) -> str:
    if dialect.name == "duckdb":
        return f"TRY_CAST({text} AS BIGINT)"
    if dialect.name == "spark":
        return f"try_cast({text} AS BIGINT)"
    return f"CAST({text} AS BIGINT)"


def _residue(x: str) -> str:
    return f"((({x}) % {PRIME} + {PRIME}) % {PRIME})"


def unit_number(col: str, kind: str, p: Params, dialect: Dialect) -> str:
    """The identifier's number modulo ``p`` (NULL when missing): :func:`dpdesk.engine.truncation.value_number`."""
    if kind == "any" or dialect.name == "sqlite":
        return f"{SQLITE_UNIT_FUNCTION}({col})"
    if kind == "integer":
        text = f"CAST({col} AS {dialect.text_type})"
        return (
            f"CASE WHEN {col} IS NULL THEN NULL "
            f"WHEN {col} > -{INTEGER_LIMIT} AND {col} < {INTEGER_LIMIT} THEN {_residue(col)} "
            f"ELSE {_md5_60(dialect, text)} % {PRIME} END"
        )
    text = col if kind == "text" else f"CAST({col} AS {dialect.text_type})"
    return (
        f"CASE WHEN {text} IS NULL THEN NULL "
        f"WHEN {_is_integer_text(dialect, text, p)} THEN {_residue(_as_bigint(dialect, text))} "
        f"ELSE {_md5_60(dialect, text)} % {PRIME} END"
    )


def _quantised(m: Measure, p: Params, dialect: Dialect) -> str:
    """``trunc(clamp(v) · 2^f)`` as a BIGINT, NULL when the value is missing (before the null rule)."""
    v = _double(dialect, dialect.ident(m.column))
    scale = math.ldexp(1.0, m.scale_bits)
    q_low = math.trunc(math.ldexp(m.lower, m.scale_bits))
    q_high = math.trunc(math.ldexp(m.upper, m.scale_bits))
    missing = _missing(dialect, v)
    lower = p.add(float(m.lower))
    upper = p.add(float(m.upper))
    return (
        f"CASE WHEN {missing} THEN NULL WHEN {v} < {lower} THEN {q_low} WHEN {v} > {upper} THEN {q_high} "
        f"ELSE {_trunc(dialect, f'{v} * {p.add(scale)}')} END"
    )


def _after_rule(m: Measure, i: int) -> str:
    """The measure's summed integer after the null rule (NULL when a skipped value is missing)."""
    return f"COALESCE(q{i}, {m.null_quantised()})" if m.nulls == "replace" else f"q{i}"


def _order(schema: Schema, key: OrderKey, p: Params) -> str:
    """The keyed order value ``o``: :func:`dpdesk.engine.truncation.order_values`."""
    y = f"((u * {p.add(key.multiplier, secret=True)} + {p.add(key.offset, secret=True)}) % {PRIME})"
    # each value made non-negative first (a summed integer is at least -2^52), so one % gives its residue
    values = ["cell"] + [
        f"({_after_rule(m, i) if m.nulls == 'replace' else f'COALESCE(q{i}, 0)'} + {QUANTUM_OFFSET})"
        for i, m in enumerate(schema.measures)
    ]
    for v in values:
        w = f"({v} % {PRIME})"
        y = f"(((({y}) + {w}) % {PRIME}) * (({w} + {p.add(key.round1, secret=True)}) % {PRIME - 1} + 1) % {PRIME})"
    return f"(({y}) + {p.add(key.round2, secret=True)}) % {PRIME}"


_CELL_BITS = 32  # the order value and the cell share one BIGINT sort key when cells fit in 32 bits


def _tie_break(schema: Schema) -> str:
    """The window's ORDER BY: the order value ``o`` (joined with the cell into one key when the cube has
    fewer than 2^32 cells: one sort key is cheaper than two), then the measures' integers."""
    parts = ["o"] if schema.n_cells < 2**_CELL_BITS else ["o", "cell"]
    for i, m in enumerate(schema.measures):
        parts.append(_after_rule(m, i) if m.nulls == "replace" else f"COALESCE(q{i}, {MISSING_Q})")
    return ", ".join(parts)


def cube_statement(
    schema: Schema,
    column_kinds: Mapping[str, str],
    from_clause: str,
    from_params: tuple[Any, ...] = (),
    dialect: Dialect = DUCKDB,
    *,
    unit_kind: str | None = None,
    order_key: OrderKey | None = None,
) -> CubeQuery:
    """The statement that builds ``schema``'s cube from ``from_clause`` (see the module's docstring).

    ``column_kinds`` as for :func:`dpdesk.sources.sqlgen.cube_query`; ``unit_kind`` is the privacy unit
    column's kind (``"integer"``, ``"text"`` — any other type is read by its text form — or ``"any"`` on
    SQLite); ``order_key`` is required with a privacy unit.
    """
    unit = schema.unit
    if unit.rows_are_people and not schema.measures:
        return sqlgen.cube_query(schema, column_kinds, from_clause, from_params, dialect)
    if unit.column is not None and order_key is None:
        raise ValueError("a privacy unit's statement needs the order key")
    if from_params and dialect.placeholder != "?":
        raise ValueError("a FROM clause with parameters needs a qmark dialect")
    p = Params(dialect)
    n = len(schema.attributes)
    strides = [math.prod(schema.shape[d + 1 :]) for d in range(n)]
    coded = [
        f"{attribute_code(a, column_kinds[a.column], p, dialect)} AS c{d}"
        for d, a in enumerate(schema.attributes)
    ]
    if unit.column is not None:
        ucol = dialect.ident(unit.column)
        coded.append(f"{unit_number(ucol, unit_kind or 'text', p, dialect)} AS u")
        coded.append(f"{ucol} AS person")
    coded += [f"{_quantised(m, p, dialect)} AS q{i}" for i, m in enumerate(schema.measures)]
    for v in from_params:  # the FROM clause comes after the select list in the text
        p.add(v)
    index = " + ".join(f"c{d}" if s == 1 else f"c{d} * {s}" for d, s in enumerate(strides))
    cell = f"COALESCE({index}, -1)"
    sums = [(_after_rule(m, i), f"q{i}") for i, m in enumerate(schema.measures)]
    if unit.column is None:
        return _rows_statement(coded, from_clause, cell, sums, p, dialect)
    assert order_key is not None
    return _person_statement(schema, coded, from_clause, index, sums, order_key, p, dialect)


def _rows_statement(
    coded: list[str],
    from_clause: str,
    cell: str,
    sums: list[tuple[str, str]],
    p: Params,
    dialect: Dialect,
) -> CubeQuery:
    """One row is one person: count and sum every row of each cell."""
    qs = [q for _, q in sums]
    select = ["cell", "COUNT(*) AS n"]
    for i, (v, q) in enumerate(sums):
        select += [
            f"CAST(SUM({_shift(dialect, v)}) AS BIGINT) AS h{i}",
            f"CAST(SUM({v} & {_MASK}) AS BIGINT) AS l{i}",
            f"COUNT({q}) AS p{i}",
        ]
    sql = (
        "WITH coded AS (\n  SELECT " + ",\n         ".join(coded) + f"\n  FROM {from_clause}\n),\n"
        f"binned AS (\n  SELECT {cell} AS cell{''.join(', ' + q for q in qs)}\n  FROM coded\n)\n"
        "SELECT " + ",\n       ".join(select) + "\nFROM binned\nGROUP BY cell\nORDER BY cell"
    )
    columns = ("cell", "n") + tuple(c for i in range(len(sums)) for c in (f"h{i}", f"l{i}", f"p{i}"))
    return CubeQuery(sql, tuple(p.values), frozenset(p.hidden), columns)


def _person_statement(
    schema: Schema,
    coded: list[str],
    from_clause: str,
    index: str,
    sums: list[tuple[str, str]],
    order_key: OrderKey,
    p: Params,
    dialect: Dialect,
) -> CubeQuery:
    """Rows sharing the unit's column are one person: each person's rows ranked in the keyed order, the
    first k kept (one per cell or group when asked), what was dropped counted for the curator."""
    unit = schema.unit
    qs = [q for _, q in sums]
    cell = f"CASE WHEN u IS NULL THEN -1 ELSE COALESCE({index}, -1) END"
    binned_cols = [f"{cell} AS cell", ", ".join(["person", "u", *qs])]
    if unit.grouped and not unit.one_row_per_cell:
        names = unit.group_attributes(schema.names)
        axes = [schema.axis(nm) for nm in names]
        group_strides = [math.prod(schema.shape[a] for a in axes[j + 1 :]) for j in range(len(axes))]
        grp = " + ".join(f"c{a}" if s == 1 else f"c{a} * {s}" for a, s in zip(axes, group_strides))
        # out-of-domain rows get no group, so they never share a person's group with rows in the domain
        binned_cols.append(f"CASE WHEN u IS NULL OR ({index}) IS NULL THEN NULL ELSE {grp} END AS grp")
    # out-of-domain rows take the order value p, above every row inside: a person's rows inside the
    # domain are ranked first, and no separate key is needed to keep the others out of their way
    order = f"CASE WHEN cell < 0 THEN {PRIME} ELSE {_order(schema, order_key, p)} END"
    if schema.n_cells < 2**_CELL_BITS:
        order = f"({order}) * {2**_CELL_BITS} + cell"
    tie = _tie_break(schema)
    keep = f"cell, {', '.join(qs) + ', ' if qs else ''}"
    carried = ", ".join(
        ["person", "cell", *(["grp"] if unit.grouped and not unit.one_row_per_cell else []), *qs]
    )
    parts = [
        "WITH coded AS (\n  SELECT " + ",\n         ".join(coded) + f"\n  FROM {from_clause}\n)",
        "binned AS (\n  SELECT " + ", ".join(binned_cols) + "\n  FROM coded\n)",
        f"ordered AS (\n  SELECT {carried}, {order} AS o\n  FROM binned\n)",
    ]
    if unit.grouped:
        group = "cell" if unit.one_row_per_cell else "grp"
        parts.append(
            "grouped AS (\n  SELECT *, CASE WHEN cell < 0 THEN 1 ELSE ROW_NUMBER() OVER "
            f"(PARTITION BY person, {group} ORDER BY {tie}) END AS rg\n  FROM ordered\n)"
        )
        parts.append(
            f"ranked AS (\n  SELECT {keep}rg, CASE WHEN cell < 0 THEN 0 ELSE ROW_NUMBER() OVER "
            f"(PARTITION BY person ORDER BY rg, {tie}) END AS rn\n  FROM grouped\n)"
        )
    else:
        parts.append(
            f"ranked AS (\n  SELECT {keep}1 AS rg, CASE WHEN cell < 0 THEN 0 ELSE ROW_NUMBER() OVER "
            f"(PARTITION BY person ORDER BY {tie}) END AS rn\n  FROM ordered\n)"
        )
    return _kept_counts(parts, unit.max_rows, sums, p, dialect)


def _kept_counts(
    parts: list[str], k: int, sums: list[tuple[str, str]], p: Params, dialect: Dialect
) -> CubeQuery:
    """The final SELECT over the ranked rows: what each cell keeps, drops and sums."""
    kept = f"rg = 1 AND rn <= {k}"
    select = [
        "cell",
        f"CAST(SUM(CASE WHEN {kept} THEN 1 ELSE 0 END) AS BIGINT) AS n",
        f"CAST(SUM(CASE WHEN {kept} THEN 0 ELSE 1 END) AS BIGINT) AS dropped",
        f"CAST(SUM(CASE WHEN rg = 1 AND rn = {k + 1} THEN 1 ELSE 0 END) AS BIGINT) AS over_limit",
        "CAST(SUM(CASE WHEN rn = 1 THEN 1 ELSE 0 END) AS BIGINT) AS people",
        "CAST(SUM(CASE WHEN rg > 1 THEN 1 ELSE 0 END) AS BIGINT) AS repeats",
    ]
    for i, (v, q) in enumerate(sums):
        select += [
            f"CAST(SUM(CASE WHEN {kept} THEN {_shift(dialect, v)} END) AS BIGINT) AS h{i}",
            f"CAST(SUM(CASE WHEN {kept} THEN {v} & {_MASK} END) AS BIGINT) AS l{i}",
            f"CAST(SUM(CASE WHEN {kept} AND {q} IS NOT NULL THEN 1 ELSE 0 END) AS BIGINT) AS p{i}",
        ]
    sql = (
        "WITH "
        + ",\n".join(parts)[len("WITH ") :]
        + "\nSELECT "
        + ",\n       ".join(select)
        + "\nFROM ranked\nGROUP BY cell\nORDER BY cell"
    )
    columns = ("cell", "n", "dropped", "over_limit", "people", "repeats") + tuple(
        c for i in range(len(sums)) for c in (f"h{i}", f"l{i}", f"p{i}")
    )
    return CubeQuery(sql, tuple(p.values), frozenset(p.hidden), columns)


def contributions_statement(
    schema: Schema,
    column: str,
    column_kinds: Mapping[str, str],
    from_clause: str,
    from_params: tuple[Any, ...] = (),
    dialect: Dialect = DUCKDB,
) -> CubeQuery:
    """People by rows and distinct cells over the rows ``schema``'s cube counts (see
    :class:`dpdesk.engine.contributions.Contributions`): columns ``n``, ``c``, ``people``, ``outside``;
    ``n = -1`` gathers the rows without an identifier. A schema without attributes counts every row."""
    p = Params(dialect)
    coded = [
        f"{attribute_code(a, column_kinds[a.column], p, dialect)} AS c{d}"
        for d, a in enumerate(schema.attributes)
    ]
    coded.append(f"{dialect.ident(column)} AS person")
    for v in from_params:
        p.add(v)
    if schema.attributes:
        names = schema.unit.group_attributes(schema.names) if schema.unit.one_row_per else schema.names
        axes = [schema.axis(nm) for nm in names]
        strides = [math.prod(schema.shape[a] for a in axes[j + 1 :]) for j in range(len(axes))]
        everything = " + ".join(f"c{d}" for d in range(len(schema.attributes)))
        grp = " + ".join(f"c{a}" if s == 1 else f"c{a} * {s}" for a, s in zip(axes, strides))
        g = f"CASE WHEN person IS NULL OR ({everything}) IS NULL THEN -1 ELSE {grp} END"
    else:
        g = "CASE WHEN person IS NULL THEN -1 ELSE 0 END"
    sql = (
        "WITH coded AS (\n  SELECT " + ",\n         ".join(coded) + f"\n  FROM {from_clause}\n),\n"
        f"binned AS (\n  SELECT person, {g} AS g\n  FROM coded\n),\n"
        "per AS (\n  SELECT person, SUM(CASE WHEN g >= 0 THEN 1 ELSE 0 END) AS n,\n"
        "         COUNT(DISTINCT CASE WHEN g >= 0 THEN g END) AS c,\n"
        "         SUM(CASE WHEN g < 0 THEN 1 ELSE 0 END) AS outside\n"
        "  FROM binned\n  GROUP BY person\n)\n"
        "SELECT CASE WHEN person IS NULL THEN -1 ELSE n END AS n, CASE WHEN person IS NULL THEN -1 ELSE c END AS c,\n"
        "       CAST(COUNT(*) AS BIGINT) AS people, CAST(SUM(outside) AS BIGINT) AS outside\n"
        "FROM per\nGROUP BY 1, 2"
    )
    return CubeQuery(sql, tuple(p.values), frozenset(), ("n", "c", "people", "outside"))
