"""The text form of queries (DESIGN §6): tokenizer, recursive-descent parser and formatter, and
:func:`query_from_input`, which reads a query in either form a user writes (text or JSON coefficients).

Grammar (whitespace between tokens is ignored)::

    query   := sum END
    sum     := product (('+' | '-') product)*
    product := unary ('*' unary)*
    unary   := ('-' | '+') unary | primary
    primary := NUMBER | 'count' '(' [arg (',' arg)*] ')' | 'parity' '(' attr (',' attr)* ')' | '(' sum ')'
             | 'sum' '(' measure ['|' arg (',' arg)*] ')' | 'count' '(' measure ['|' arg (',' arg)*] ')'
    arg     := (NAME | STRING) '=' (label | '[' label (',' label)* ']')
    measure := NAME | STRING
    attr    := NAME | STRING
    label   := STRING | NUMBER | NAME

Strings take single or double quotes; a backslash escapes the next character (``\\n``, ``\\t`` and
``\\r`` give control characters). The result must be linear: a sum of weighted counts, with no
constant terms and no product of two counts. ``parity(a, b, …)`` over two-label attributes counts the
records whose second labels ("1") are an odd number among those attributes (seed §6; see
:mod:`dpdesk.engine.queries.parity`). Over a schema's measures (docs/sums.md), ``sum(cost | ward="x")``
sums a measure's clamped values over a box and ``count(cost | ward="x")`` counts the values summed (the
records, unless missing values are skipped); a query naming either is a query over the measures'
:class:`~dpdesk.engine.queries.layout.Layout`, e.g. ``sum(cost | ward="oncology") - 2*count(ward="oncology")``.
``mean(…)`` is a ratio, not a linear query: it is read by :mod:`dpdesk.engine.sums.query`. Every error is a :class:`QueryError` with the 1-based
column where the problem is, e.g. ``query: at column 14: expected ')' but found ','``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpdesk.engine.errors import DpdeskError, QueryError
from dpdesk.engine.jsontext import parse_json
from dpdesk.engine.limits import check_weights
from dpdesk.engine.queries.layout import BlockKind, Layout
from dpdesk.engine.queries.measured import product_form_over
from dpdesk.engine.queries.predicates import count, predicate_term
from dpdesk.engine.queries.query import Query, Term, query_from_json
from dpdesk.engine.queries.tokens import _error as _error
from dpdesk.engine.queries.tokens import _Token, tokenize
from dpdesk.engine.schema import Attribute, Schema

# Parentheses and signs nest at most this deep: the parser recurses once per level, and no query a
# person writes comes near it (a text nested thousands deep would otherwise exhaust Python's stack).
MAX_DEPTH = 100


@dataclass(frozen=True)
class Measured:
    """``sum(measure | box)`` (``kind="sum"``) or ``count(measure | box)`` (``kind="values"``) as parsed."""

    kind: BlockKind
    measure: str
    labels: dict[str, list[str]]


# A parsed value: a plain number (a weight) or a linear combination of predicate terms (labels by
# attribute), of ready product terms (parity) or of a measure's sums or value counts over a box.
_Linear = list[
    tuple[float, "dict[str, list[str]] | tuple[Term, ...] | Measured", int]
]  # (weight, what, column)


class _Parser:
    def __init__(self, text: str, schema: Schema) -> None:
        self.tokens = tokenize(text)
        self.pos = 0
        self.schema = schema
        self.depth = 0

    def deeper(self, t: _Token) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _error(t.col, f"the query nests parentheses or signs more than {MAX_DEPTH} deep")

    @property
    def tok(self) -> _Token:
        return self.tokens[self.pos]

    def take(self) -> _Token:
        t = self.tokens[self.pos]
        self.pos += 1
        return t

    def at(self, punct: str) -> bool:
        return self.tok.kind == "punct" and self.tok.text == punct

    def expect(self, punct: str) -> _Token:
        if not self.at(punct):
            raise _error(self.tok.col, f"expected {punct!r} but found {self.tok.describe()}")
        return self.take()

    def expect_one_of(self, sep: str, close: str) -> None:
        if not self.at(close):
            raise _error(self.tok.col, f"expected {sep!r} or {close!r} but found {self.tok.describe()}")

    # sum := product (('+' | '-') product)*
    def sum(self) -> float | _Linear:
        first = self.tok
        acc = self.product()
        while self.at("+") or self.at("-"):
            op = self.take()
            rhs_tok = self.tok
            rhs = self.product()
            if isinstance(acc, float):
                raise _error(first.col, "a constant term does not change a query; remove it")
            if isinstance(rhs, float):
                raise _error(rhs_tok.col, "a constant term does not change a query; remove it")
            sign = -1.0 if op.text == "-" else 1.0
            acc = acc + [(sign * w, labels, col) for w, labels, col in rhs]
        return acc

    # product := unary ('*' unary)*
    def product(self) -> float | _Linear:
        acc = self.unary()
        while self.at("*"):
            star = self.take()
            rhs = self.unary()
            if isinstance(acc, float) and isinstance(rhs, float):
                acc = self._finite(acc * rhs, star.col)
            elif isinstance(acc, float) and not isinstance(rhs, float):
                acc = [(self._finite(acc * w, star.col), labels, col) for w, labels, col in rhs]
            elif isinstance(rhs, float) and not isinstance(acc, float):
                acc = [(self._finite(rhs * w, star.col), labels, col) for w, labels, col in acc]
            else:
                raise _error(star.col, "cannot multiply two counts or sums (the query would not be linear)")
        return acc

    # unary := ('-' | '+') unary | primary
    def unary(self) -> float | _Linear:
        if self.at("-") or self.at("+"):
            self.deeper(self.tok)
            sign = -1.0 if self.take().text == "-" else 1.0
            v = self.unary()
            self.depth -= 1
            if isinstance(v, float):
                return sign * v
            return [(sign * w, labels, col) for w, labels, col in v]
        return self.primary()

    def primary(self) -> float | _Linear:
        t = self.tok
        if t.kind == "number":
            self.take()
            return self._finite(float(t.text), t.col)
        if self.at("("):
            self.deeper(self.take())
            v = self.sum()
            self.expect(")")
            self.depth -= 1
            return v
        if t.kind == "name" and t.text == "count":
            return self.count_call()
        if t.kind == "name" and t.text == "sum":
            return self.measure_call("sum")
        if t.kind == "name" and t.text == "parity":
            return self.parity_call()
        if t.kind == "name" and t.text == "mean":
            raise _error(
                t.col,
                "mean(...) is a ratio of two estimates, not a linear query: ask for it alone, e.g. mean(cost)",
            )
        raise _error(t.col, f"expected count(...), a number or '(' but found {t.describe()}")

    def measure_name(self) -> _Token:
        """The measure a sum(...) or count(measure | ...) reads (a name or quoted string the schema declares)."""
        t = self.tok
        if t.kind not in ("name", "string"):
            raise _error(t.col, f"expected a measure's name but found {t.describe()}")
        self.take()
        known = [m.name for m in self.schema.measures]
        if t.text not in known:
            if not known:
                raise _error(t.col, f"{t.text!r} is not a measure: the schema declares no measures to sum")
            what = "an attribute, not a measure" if t.text in self.schema.names else "not a measure"
            raise _error(t.col, f"{t.text!r} is {what} (measures: {', '.join(map(repr, known))})")
        return t

    def measure_call(self, kind: BlockKind) -> _Linear:
        """``sum(m | box)`` or ``count(m | box)`` once the head (and, for count, nothing else) is read."""
        start = self.take() if kind == "sum" else self.tokens[self.pos - 2]
        if kind == "sum":
            self.expect("(")
        m = self.measure_name()
        labels: dict[str, list[str]] = {}
        if self.at("|"):
            self.take()
            self.args(labels)
            self.expect_one_of(",", ")")
        elif not self.at(")"):
            raise _error(self.tok.col, f"expected '|' or ')' but found {self.tok.describe()}")
        self.expect(")")
        return [(1.0, Measured(kind, m.text, labels), start.col)]

    def parity_call(self) -> _Linear:
        from dpdesk.engine.queries.parity import parity_terms

        start = self.take()
        self.expect("(")
        names: list[str] = []
        while True:
            t = self.tok
            if t.kind not in ("name", "string"):
                raise _error(t.col, f"expected an attribute name but found {t.describe()}")
            self.take()
            names.append(t.text)
            if not self.at(","):
                break
            self.take()
        self.expect_one_of(",", ")")
        self.expect(")")
        try:
            terms = parity_terms(self.schema, names)
        except QueryError as e:
            raise _error(start.col, str(e).removeprefix("query: ")) from None
        return [(1.0, terms, start.col)]

    def count_call(self) -> _Linear:
        start = self.take()
        self.expect("(")
        nxt = self.tokens[self.pos + 1] if self.tok.kind in ("name", "string") else None
        if nxt is not None and nxt.kind == "punct" and nxt.text == "|":
            return self.measure_call("values")  # count(measure | box): the values summed
        if nxt is not None and nxt.kind == "punct" and nxt.text == ")":
            if any(m.name == self.tok.text for m in self.schema.measures):
                return self.measure_call("values")
        labels: dict[str, list[str]] = {}
        if not self.at(")"):
            self.args(labels)
            self.expect_one_of(",", ")")
        self.expect(")")
        return [(1.0, labels, start.col)]

    def args(self, labels: dict[str, list[str]]) -> None:
        """``arg (',' arg)*``: the conditions of a count, or the box of max/argmax/posterior."""
        self.arg(labels)
        while self.at(","):
            self.take()
            self.arg(labels)

    def attribute_name(self) -> _Token:
        """The attribute a max/argmax/posterior asks about (a name or quoted string in the schema)."""
        t = self.tok
        if t.kind not in ("name", "string"):
            raise _error(t.col, f"expected an attribute name but found {t.describe()}")
        self.take()
        if t.text not in self.schema.names:
            raise _error(
                t.col, f"unknown attribute {t.text!r} (attributes: {', '.join(map(repr, self.schema.names))})"
            )
        return t

    def arg(self, labels: dict[str, list[str]]) -> None:
        t = self.tok
        if t.kind not in ("name", "string"):
            raise _error(t.col, f"expected an attribute name but found {t.describe()}")
        self.take()
        if t.text not in self.schema.names:
            raise _error(
                t.col,
                f"unknown attribute {t.text!r} (attributes: {', '.join(map(repr, self.schema.names))})",
            )
        if t.text in labels:
            raise _error(t.col, f"attribute {t.text!r} appears twice in one count(...)")
        self.expect("=")
        attr = self.schema.attribute(t.text)
        chosen: list[str] = []
        if self.at("["):
            open_tok = self.take()
            if self.at("]"):
                raise _error(open_tok.col, f"empty label list for attribute {t.text!r}")
            chosen.append(self.label(attr))
            while self.at(","):
                self.take()
                chosen.append(self.label(attr))
            self.expect_one_of(",", "]")
            self.take()
        else:
            chosen.append(self.label(attr))
        labels[t.text] = chosen

    def label(self, attr: Attribute) -> str:
        t = self.tok
        if t.kind not in ("string", "number", "name"):
            raise _error(
                t.col, f"expected a label for {attr.name!r} (a quoted string) but found {t.describe()}"
            )
        self.take()
        if t.text not in attr.labels:
            raise _error(
                t.col,
                f"attribute {attr.name!r} has no label {t.text!r} (labels: {', '.join(map(repr, attr.labels))})",
            )
        return t.text

    @staticmethod
    def _finite(x: float, col: int) -> float:
        if not math.isfinite(x):
            raise _error(col, f"weight {x!r} is not a finite number")
        return x


def parse_query(text: str, schema: Schema) -> Query:
    """Parse the DESIGN §6 text form, e.g. ``2*count(income=">50K") - count(age="0-30")``, into a
    product-form :class:`Query` (see the module grammar).

    Errors are :class:`~dpdesk.engine.errors.QueryError` naming the 1-based column and what was expected.
    """
    if not isinstance(text, str):
        raise QueryError(f"query: text must be a string, got {type(text).__name__}")
    if not text.strip():
        raise QueryError('query: empty text (expected e.g. count(age="0-30"))')
    p = _Parser(text, schema)
    value = p.sum()
    if p.tok.kind != "end":
        raise _error(p.tok.col, f"expected '+', '-', '*' or end of query but found {p.tok.describe()}")
    if isinstance(value, float):
        raise _error(1, "the query is a constant; expected at least one count(...)")
    layout = Layout.of(schema) if any(isinstance(what, Measured) for _, what, _ in value) else None
    terms: list[Term] = []
    for w, labels, col in value:
        terms.extend(_terms(schema, layout, w, labels, col))
    shape = schema.shape if layout is None else layout.shape
    try:
        return Query(shape, terms=tuple(terms), text=text.strip(), layout=layout)
    except QueryError as e:
        raise QueryError(f"{e} in {text.strip()!r}") from None


def _terms(
    schema: Schema,
    layout: Layout | None,
    w: float,
    what: dict[str, list[str]] | tuple[Term, ...] | Measured,
    col: int,
) -> list[Term]:
    """The product terms of one parsed ``weight · what``; over measures, each with its block factor first."""
    if isinstance(what, tuple):  # ready product terms (parity)
        made = [Term(w * t.weight, t.factors) for t in what]
    else:
        labels = what.labels if isinstance(what, Measured) else what
        try:
            made = [predicate_term(schema, w, labels)]
        except QueryError as e:  # attribute and label names were checked above; keep the column anyway
            raise _error(col, str(e).removeprefix("query: ")) from None
    if layout is None:
        return made
    block = np.zeros(len(layout.blocks))
    block[layout.index(what.kind, what.measure) if isinstance(what, Measured) else 0] = 1.0
    return [Term(t.weight, (block,) + t.factors) for t in made]


def query_from_input(
    raw: Any,
    n_cells: int,
    shape: Sequence[int] | None = None,
    schema: Schema | None = None,
    where: str | None = None,
) -> Query:
    """A query as a user gives it: the DESIGN §6 text form (needs ``schema``), or JSON coefficients — a
    dense list or ``{"indices", "values"}``, as text or already decoded. ``where`` prefixes errors."""

    def located(exc: QueryError) -> QueryError:
        return QueryError(f"{where}: {exc}") if where else exc

    try:
        if isinstance(raw, str):
            stripped = raw.strip()
            if stripped[:1] in ("[", "{"):
                raw = parse_json(stripped, "query", QueryError)
            elif schema is None:
                raise QueryError("a text query needs a schema")
            else:
                raw = parse_query(stripped, schema)
        layout = Layout.of(schema) if schema is not None else None
        q = raw if isinstance(raw, Query) else query_from_json(raw, n_cells, shape, layout)
        check_entered(q)
        return q
    except QueryError as exc:
        raise located(exc) from None


def check_entered(q: Query) -> None:
    """A query a person typed has every nonzero coefficient within :mod:`dpdesk.engine.limits`' range
    (a stored query is read as it was stored: this is checked where queries enter, not where they are read)."""
    if q.terms is not None:
        # a term's smallest nonzero coefficient is its weight times each factor's smallest nonzero entry
        smallest = min(
            abs(t.weight) * math.prod(float(np.min(np.abs(f[f != 0]))) for f in t.factors) for t in q.terms
        )
        largest = q.sensitivity if q.layout is None else float(np.max(np.abs(q.sparse()[1])))
        values = np.array([largest, smallest])
    else:
        values = np.asarray(q.values)
    try:
        check_weights(values, "query")
    except DpdeskError as exc:
        raise QueryError(str(exc)) from None


def _quote(label: str) -> str:
    return '"' + label.replace("\\", "\\\\").replace('"', '\\"') + '"'


def format_terms(terms: tuple[Term, ...], schema: Schema, layout: Layout | None = None) -> str | None:
    """Text form of product-form terms whose factors are 0/1 label indicators, else None; with a
    ``layout``, terms over the measures' vector (their first factor weighs the blocks)."""
    parts: list[str] = []
    for t in terms:
        factors = t.factors if layout is None else t.factors[1:]
        args = []
        for attr, f in zip(schema.attributes, factors):
            if not np.all((f == 0) | (f == 1)):
                return None
            if np.all(f == 1):
                continue
            chosen = [_quote(attr.labels[i]) for i in np.flatnonzero(f)]
            name = attr.name if attr.name.isidentifier() else _quote(attr.name)
            args.append(f"{name}={chosen[0]}" if len(chosen) == 1 else f"{name}=[{', '.join(chosen)}]")
        box = ", ".join(args)
        if layout is None:
            pieces = [(t.weight, f"count({box})")]
        else:
            pieces = [
                (t.weight * float(w), _measured_call(layout, b, box)) for b, w in enumerate(t.factors[0]) if w
            ]
        for w, body in pieces:
            mag = abs(w)
            coef = "" if mag == 1 else f"{int(mag) if mag.is_integer() else repr(mag)}*"
            if not parts:
                parts.append(("-" if w < 0 else "") + coef + body)
            else:
                parts.append(f" {'-' if w < 0 else '+'} {coef}{body}")
    return "".join(parts)


def _measured_call(layout: Layout, block: int, box: str) -> str:
    b = layout.blocks[block]
    if b.kind == "count":
        return f"count({box})"
    m = str(b.measure) if str(b.measure).isidentifier() else _quote(str(b.measure))
    return f"{'sum' if b.kind == 'sum' else 'count'}({m}{' | ' + box if box else ''})"


def describe_query(query: Query, schema: Schema, max_cells: int = 3) -> str:
    """A readable description of any query, never a list of cell indices.

    Product form and sparse queries that cover a box of labels with one weight read as the text form
    (``count(age=["17-24","25-34"])``); other sparse queries name their first ``max_cells`` cells by
    their labels and collapse the rest (``2 weights on 360 cells: age=17-24, sex=Female, …; … +357 more``).
    """
    if query.layout is not None:  # over measures: its product form, else its text, else a summary
        pf = product_form_over(query)
        text = format_terms(pf.terms, schema, query.layout) if pf.terms is not None else None
        return text or query.describe()
    if query.terms is not None:
        text = format_terms(query.terms, schema)
        if text is not None:
            return text
        return f"weighted count over {query.support_size()} of {query.n_cells} cells"
    idx = np.asarray(query.indices)
    vals = np.asarray(query.values, dtype=float)
    if idx.size == 0:
        return "count of nothing (all weights 0)"
    coords = np.unravel_index(idx, schema.shape)
    used = [np.unique(c) for c in coords]
    if np.all(vals == vals[0]) and idx.size == int(np.prod([u.size for u in used])):
        chosen = {
            a.name: [a.labels[int(i)] for i in u]
            for a, u, n in zip(schema.attributes, used, schema.shape)
            if u.size < n
        }
        terms = count(schema, float(vals[0]), **chosen).terms
        text = None if terms is None else format_terms(terms, schema)
        if text is not None:
            return text
    weights = np.unique(vals)
    head = "; ".join(schema.describe_cell(int(i)) for i in idx[:max_cells])
    more = f"; … +{idx.size - max_cells} more" if idx.size > max_cells else ""
    what = f"weight {weights[0]:g}" if weights.size == 1 else f"{weights.size} weights"
    return f"{what} on {idx.size} cells: {head}{more}"
