"""Means of a measure over a box — ``mean(cost | ward="oncology")`` — and their text form.

A mean is the ratio of two linear queries over the cube's measures (docs/sums.md): the sum of the
measure's clamped values in the box, ``sum(cost | box)``, over the number of values summed there,
``count(cost | box)`` (the box's records, unless the measure skips missing values). It is not linear, so
it is asked alone::

    mean := 'mean' '(' measure ['|' arg (',' arg)*] ')'

e.g. ``mean(cost)``, ``mean(cost | ward="oncology", age=["40-64", "65+"])``. Errors name the column,
like every query's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from dpdesk.engine.errors import QueryError
from dpdesk.engine.queries.query import Query
from dpdesk.engine.queries.text import _error, _Parser, _quote, parse_query
from dpdesk.engine.schema import Schema

__all__ = ["MeanQuery", "is_mean_text", "parse_mean", "split_assumption"]

_HEAD = re.compile(r"\s*mean\s*\(")
_ASSUMING = re.compile(r"^(?P<mean>.*\))\s*assuming\s+at\s+least\s+(?P<n>\S+)\s+values?\s*$", re.S)


def is_mean_text(text: str) -> bool:
    """True when ``text`` starts like ``mean(`` (and so is not a linear query)."""
    return isinstance(text, str) and _HEAD.match(text) is not None


@dataclass(frozen=True)
class MeanQuery:
    """The mean of ``measure``'s clamped values over a box (``conditions``: attribute → chosen labels)."""

    measure: str
    conditions: tuple[tuple[str, tuple[str, ...]], ...]
    text: str

    def _box(self) -> str:
        args = []
        for name, labels in self.conditions:
            chosen = [_quote(lab) for lab in labels]
            key = name if name.isidentifier() else _quote(name)
            args.append(f"{key}={chosen[0]}" if len(chosen) == 1 else f"{key}=[{', '.join(chosen)}]")
        m = self.measure if self.measure.isidentifier() else _quote(self.measure)
        return m + (f" | {', '.join(args)}" if args else "")

    def total(self, schema: Schema) -> Query:
        """``sum(measure | box)``: the numerator, a linear query over the measures."""
        return parse_query(f"sum({self._box()})", schema)

    def size(self, schema: Schema) -> Query:
        """``count(measure | box)``: the denominator, the number of values summed in the box."""
        return parse_query(f"count({self._box()})", schema)

    def bounds(self, schema: Schema) -> tuple[float, float]:
        """``[L, U]``: every mean of the measure's clamped values lies there."""
        m = schema.measure(self.measure)
        return m.lower, m.upper


class _MeanParser(_Parser):
    def mean(self) -> MeanQuery:
        head = self.take()
        if head.kind != "name" or head.text != "mean":
            raise _error(head.col, f"expected mean(...) but found {head.describe()}")
        self.expect("(")
        m = self.measure_name()
        labels: dict[str, list[str]] = {}
        if self.at("|"):
            self.take()
            self.args(labels)
            self.expect_one_of(",", ")")
        elif not self.at(")"):
            raise _error(self.tok.col, f"expected '|' or ')' but found {self.tok.describe()}")
        self.take()
        if self.tok.kind != "end":
            raise _error(
                self.tok.col,
                f"expected end of query but found {self.tok.describe()} (a mean is asked alone: it is not linear)",
            )
        conds = tuple((n, tuple(labels[n])) for n in self.schema.names if n in labels)
        return MeanQuery(m.text, conds, "")


def parse_mean(text: str, schema: Schema) -> MeanQuery:
    """Parse ``mean(measure | …)`` (module grammar); errors name the column.

    Examples
    --------
    >>> s = Schema.from_dict({"attributes": [{"name": "ward", "kind": "categorical", "values": ["a", "b"]}],
    ...     "measures": [{"name": "cost", "bounds": [0, 5000], "nulls": "skip"}]})
    >>> q = parse_mean('mean(cost | ward="a")', s)
    >>> q.measure, q.conditions, q.total(s).text, q.size(s).text
    ('cost', (('ward', ('a',)),), 'sum(cost | ward="a")', 'count(cost | ward="a")')
    """
    if not isinstance(text, str) or not text.strip():
        raise QueryError('query: empty text (expected e.g. mean(cost | ward="oncology"))')
    q = _MeanParser(text, schema).mean()
    return MeanQuery(q.measure, q.conditions, text.strip())


def split_assumption(text: str) -> tuple[str, float | None]:
    """A mean request's text and the number of values it assumes in the box (None: none stated).

    A mean's ``±a`` holds only for boxes with enough values (:mod:`~dpdesk.engine.sums.accuracy`), so a
    request states it after the mean: ``mean(hours | sex="Female") assuming at least 200 values``.

    Examples
    --------
    >>> split_assumption('mean(hours | sex="Female") assuming at least 200 values')
    ('mean(hours | sex="Female")', 200.0)
    >>> split_assumption("mean(hours)")
    ('mean(hours)', None)
    """
    m = _ASSUMING.match(text) if isinstance(text, str) else None
    if m is None:
        return text, None
    raw = m.group("n")
    try:
        n = float(raw)
    except ValueError:
        raise QueryError(f"query: 'assuming at least {raw} values' needs a number of values") from None
    if not (n >= 1 and n < float("inf")):
        raise QueryError(f"query: 'assuming at least {raw} values' needs a number ≥ 1")
    return m.group("mean").strip(), n
