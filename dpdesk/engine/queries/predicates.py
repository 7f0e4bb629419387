"""Predicate queries: ``weight · count(attribute in labels, …)`` over a schema's cube, in product form."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from dpdesk.engine.errors import QueryError, SchemaError
from dpdesk.engine.queries.query import Query, Term
from dpdesk.engine.schema import Schema

__all__ = ["count", "predicate_term"]


def count(schema: Schema, /, weight: float = 1.0, **labels: str | Sequence[str]) -> Query:
    """``weight · count(attribute in labels, …)``: the product-form predicate query.

    Attributes not named are unrestricted. A label list selects any of its labels.

    Examples
    --------
    >>> schema = Schema.from_dict({"attributes": [
    ...     {"name": "age", "kind": "numeric", "edges": [0, 30, 150], "labels": ["0-30", "30-150"]},
    ...     {"name": "income", "kind": "categorical", "values": ["<=50K", ">50K"]}]})
    >>> count(schema, 2, income=">50K").dense().tolist()
    [0.0, 2.0, 0.0, 2.0]
    """
    if (
        isinstance(weight, bool)
        or not isinstance(weight, (int, float, np.number))
        or not math.isfinite(weight)
    ):
        raise QueryError(f"query: weight must be a finite number, got {weight!r}")
    selected = {}
    for name, chosen in labels.items():
        chosen_list = [chosen] if isinstance(chosen, str) else list(chosen)
        selected[name] = chosen_list
    return Query(schema.shape, terms=(predicate_term(schema, float(weight), selected),))


def predicate_term(schema: Schema, weight: float, selected: Mapping[str, Iterable[str]]) -> Term:
    """The term for ``weight · count(name in labels, …)``; errors are plain (the caller adds where)."""
    factors = [np.ones(s) for s in schema.shape]
    for name, chosen in selected.items():
        try:
            axis = schema.axis(name)
            attr = schema.attributes[axis]
            positions = [attr.position(lab) for lab in chosen]
        except SchemaError as e:
            raise QueryError(f"query: {e}") from None
        if not positions:
            raise QueryError(f"query: empty label list for attribute '{name}'")
        f = np.zeros(attr.size)
        f[positions] = 1.0
        factors[axis] = f
    return Term(weight, tuple(factors))
