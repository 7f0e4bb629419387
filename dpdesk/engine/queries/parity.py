"""Parity queries over two-label attributes (the Xiao–Xiong–Yuan seed §6) as linear counting queries.

For two-label attributes ``a_1 … a_k`` (the first declared label reads 0, the second 1), the parity
query counts the records whose bits XOR to 1: ``Σ_x [⊕_i x_{a_i} = 1]``. Its coefficient vector is
``(1 − Π_i s_i)/2`` with ``s_i = (+1, −1)`` over ``a_i``'s labels — two product terms, so it costs no
more than a count to assess, with sensitivity 1. The seed normalises by the table size; dpdesk counts.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dpdesk.engine.errors import QueryError
from dpdesk.engine.queries.query import Query, Term
from dpdesk.engine.schema import Schema

__all__ = ["parity_query", "parity_terms"]


def parity_terms(schema: Schema, attributes: Sequence[str]) -> tuple[Term, Term]:
    """The two product terms of the parity of ``attributes`` (see the module docstring)."""
    names = list(attributes)
    if not names:
        raise QueryError("query: parity needs at least one attribute")
    if len(set(names)) != len(names):
        raise QueryError(f"query: parity lists an attribute twice ({', '.join(names)})")
    for n in names:
        if n not in schema.names:
            raise QueryError(
                f"query: unknown attribute {n!r} (attributes: {', '.join(map(repr, schema.names))})"
            )
        if schema.attribute(n).size != 2:
            raise QueryError(
                f"query: parity needs two-label attributes; {n!r} has {schema.attribute(n).size} labels"
            )
    ones = tuple(np.ones(a.size) for a in schema.attributes)
    signs = tuple(np.array([1.0, -1.0]) if a.name in names else np.ones(a.size) for a in schema.attributes)
    return Term(0.5, ones), Term(-0.5, signs)


def parity_query(schema: Schema, attributes: Sequence[str]) -> Query:
    """The parity query over ``attributes``, e.g. ``parity_query(s, ["b1", "b6", "b7"])``.

    Examples
    --------
    >>> from dpdesk.engine.schema import Schema
    >>> s = Schema.from_dict({"attributes": [{"name": n, "column": n, "kind": "categorical",
    ...                                       "values": [0, 1]} for n in ("a", "b")]})
    >>> parity_query(s, ["a", "b"]).dense().tolist()   # cells 00, 01, 10, 11
    [0.0, 1.0, 1.0, 0.0]
    """
    return Query(
        schema.shape, terms=parity_terms(schema, attributes), text=f"parity({', '.join(attributes)})"
    )
