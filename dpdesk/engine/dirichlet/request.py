"""What a posterior-of-proportions request asks, and its text form.

A request names a categorical (or binned) attribute, an optional box on the other attributes, and a
Dirichlet prior with one positive parameter per label of the attribute (Beta when there are two)::

    posterior(education | age="65-90", sex=["F", "M"]; prior=1)
    posterior(income; prior=[2, 1]; mechanism=laplace; budget=0.5)

Grammar (whitespace ignored; labels and names as in the count text form of DESIGN §6)::

    posterior := 'posterior' '(' attr [ '|' arg (',' arg)* ] ( ';' option )* ')'
    arg       := attr '=' (label | '[' label (',' label)* ']')
    option    := name '=' (number | name | string | '[' number (',' number)* ']')

Options: ``prior`` (a number for every label, or one per label; default 1), ``mechanism``
(``global``, ``smooth`` or ``laplace``), ``budget`` (α), ``delta`` (smooth only), ``within`` and
``failure`` (an accuracy target, global only), ``size`` (a total the curator declares public),
``candidates`` (cap on the candidate count). Every error is a one-line
:class:`~dpdesk.engine.errors.QueryError` naming the column.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpdesk.engine.errors import QueryError
from dpdesk.engine.queries.predicates import count
from dpdesk.engine.queries.query import Query
from dpdesk.engine.queries.text import _Parser
from dpdesk.engine.schema import Schema

__all__ = ["MECHANISM_NAMES", "PosteriorQuery", "parse_posterior"]

# text-form names of the mechanisms -> the mechanisms' own names
MECHANISM_NAMES = {"global": "exponential-global", "smooth": "exponential-smooth", "laplace": "laplace"}
_NUMBER_OPTIONS = ("budget", "delta", "within", "failure", "size", "candidates")


@dataclass(frozen=True)
class PosteriorQuery:
    """A request for ``Dir(prior + c)``, ``c`` the attribute's counts inside the box (public value).

    ``box`` maps other attributes to their selected labels (empty: the whole table). ``options`` holds
    the text form's release options (numbers and the mechanism's name), for the request to use.
    """

    schema: Schema
    attribute: str
    box: tuple[tuple[str, tuple[str, ...]], ...]
    prior: np.ndarray
    options: dict[str, Any] = field(default_factory=dict)
    text: str | None = None

    def __post_init__(self) -> None:
        attr = self.schema.attribute(self.attribute)
        if attr.size < 2:
            raise QueryError(
                f"posterior: attribute {self.attribute!r} has {attr.size} label; a posterior needs at least 2"
            )
        prior = np.array(self.prior, dtype=float).reshape(-1)
        if prior.size == 1:
            prior = np.full(attr.size, prior[0])
        if prior.size != attr.size:
            raise QueryError(
                f"posterior: prior has {prior.size} values but {self.attribute!r} has {attr.size} labels"
            )
        if not np.all(np.isfinite(prior) & (prior > 0)):
            raise QueryError(
                f"posterior: every prior parameter must be a positive number, got {prior.tolist()}"
            )
        prior.setflags(write=False)
        object.__setattr__(self, "prior", prior)
        for name, labels in self.box:
            if name == self.attribute:
                raise QueryError(f"posterior: {name!r} is the attribute itself; it cannot also be in the box")
            if not labels:
                raise QueryError(f"posterior: empty label list for box attribute {name!r}")

    @property
    def k(self) -> int:
        return int(self.prior.size)

    @property
    def labels(self) -> tuple[str, ...]:
        return self.schema.attribute(self.attribute).labels

    def box_query(self) -> Query:
        """The count of every record in the box (any label of the attribute): the cells charged."""
        return count(self.schema, 1.0, **{name: list(labels) for name, labels in self.box})

    def category_queries(self) -> list[Query]:
        """One count per label of the attribute inside the box (the Laplace baseline's rows)."""
        box = {name: list(labels) for name, labels in self.box}
        return [count(self.schema, 1.0, **box, **{self.attribute: label}) for label in self.labels]

    def counts(self, cube: Any) -> np.ndarray:
        """The attribute's counts inside the box (PRIVATE: for the mechanism's draw only)."""
        arr = np.asarray(cube.counts)
        index = [np.arange(n) for n in arr.shape]
        for name, labels in self.box:
            attr = self.schema.attribute(name)
            index[self.schema.axis(name)] = np.array([attr.position(lab) for lab in labels])
        sub = arr[np.ix_(*index)]
        axis = self.schema.axis(self.attribute)
        other = tuple(a for a in range(arr.ndim) if a != axis)
        out: np.ndarray = sub.sum(axis=other).astype(np.int64)
        out.setflags(write=False)
        return out

    def describe(self) -> str:
        box = ", ".join(f"{n}={list(l) if len(l) > 1 else l[0]!r}" for n, l in self.box)
        prior = self.prior[0] if np.all(self.prior == self.prior[0]) else self.prior.tolist()
        return f"posterior({self.attribute}{' | ' + box if box else ''}; prior={_fmt(prior)})"

    def to_json(self) -> dict[str, Any]:
        return {
            "attribute": self.attribute,
            "box": {name: list(labels) for name, labels in self.box},
            "prior": self.prior.tolist(),
        }


def _fmt(x: Any) -> str:
    if isinstance(x, list):
        return "[" + ", ".join(_fmt(v) for v in x) + "]"
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def _error(col: int, message: str) -> QueryError:
    return QueryError(f"posterior: at column {col}: {message}")


class _PosteriorParser(_Parser):
    def number(self) -> float:
        sign = -1.0 if self.at("-") else 1.0
        if self.at("-") or self.at("+"):
            self.take()
        t = self.tok
        if t.kind != "number":
            raise _error(t.col, f"expected a number but found {t.describe()}")
        self.take()
        return sign * float(t.text)

    def option(self, options: dict[str, Any]) -> None:
        t = self.tok
        if t.kind != "name":
            raise _error(t.col, f"expected an option name but found {t.describe()}")
        self.take()
        name = t.text
        if name in options:
            raise _error(t.col, f"option {name!r} appears twice")
        self.expect("=")
        if name == "prior":
            if self.at("["):
                self.take()
                values = [self.number()]
                while self.at(","):
                    self.take()
                    values.append(self.number())
                self.expect_one_of(",", "]")
                self.take()
                options[name] = values
            else:
                options[name] = [self.number()]
        elif name == "mechanism":
            v = self.take()
            if v.text not in MECHANISM_NAMES:
                raise _error(v.col, f"mechanism must be one of {', '.join(MECHANISM_NAMES)}, not {v.text!r}")
            options[name] = MECHANISM_NAMES[v.text]
        elif name in _NUMBER_OPTIONS:
            col = self.tok.col
            value = self.number()
            if not math.isfinite(value):
                raise _error(col, f"option {name!r} must be a finite number")
            options[name] = value
        else:
            allowed = ", ".join(("prior", "mechanism") + _NUMBER_OPTIONS)
            raise _error(t.col, f"unknown option {name!r} (options: {allowed})")

    def posterior(self) -> PosteriorQuery:
        t = self.tok
        if not (t.kind == "name" and t.text == "posterior"):
            raise _error(t.col, f"expected 'posterior(' but found {t.describe()}")
        self.take()
        self.expect("(")
        a = self.attribute_name()
        labels: dict[str, list[str]] = {}
        if self.at("|"):
            bar = self.take()
            if self.at(")") or self.at(";"):
                raise _error(bar.col, "empty box after '|' (name at least one attribute, or drop the '|')")
            self.args(labels)
            if a.text in labels:
                raise _error(a.col, f"{a.text!r} is the attribute itself; it cannot also be in the box")
        options: dict[str, Any] = {}
        while self.at(";"):
            self.take()
            self.option(options)
        if not self.at(")"):
            raise _error(self.tok.col, f"expected ',', ';' or ')' but found {self.tok.describe()}")
        self.take()
        if self.tok.kind != "end":
            raise _error(self.tok.col, f"expected end of request but found {self.tok.describe()}")
        prior = options.pop("prior", [1.0])
        box = tuple(sorted((name, tuple(v)) for name, v in labels.items()))
        return PosteriorQuery(self.schema, a.text, box, np.array(prior), options)


def parse_posterior(text: str, schema: Schema) -> PosteriorQuery:
    """Parse ``posterior(attribute | box; options)`` (module grammar) into a :class:`PosteriorQuery`."""
    if not isinstance(text, str) or not text.strip():
        raise QueryError('posterior: empty text (expected e.g. posterior(education | age="65-90"; prior=1))')
    try:
        q = _PosteriorParser(text, schema).posterior()
    except QueryError as exc:
        raise QueryError(str(exc).replace("query: ", "posterior: ", 1)) from None
    return PosteriorQuery(q.schema, q.attribute, q.box, q.prior, q.options, text)
