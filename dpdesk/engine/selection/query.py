"""Selection queries — ``max`` and ``argmax`` — and their text form.

``max(A | conditions)`` asks for the largest label of the ordered (numeric) attribute ``A`` that
records inside the box hold; ``argmax(A | conditions)`` for the label of ``A`` with the most records
in the box. The box is a conjunction of label sets over other attributes, written like ``count``'s
arguments::

    selection := ('max' | 'argmax') '(' attr ['|' arg (',' arg)*] ')'
    arg       := (NAME | STRING) '=' (label | '[' label (',' label)* ']')

e.g. ``max(age)``, ``argmax(education | sex="Female")``, ``max(age | sex="Male", income=[">50K"])``.

Neither is a linear query: they are answered by a selection mechanism
(:mod:`dpdesk.engine.selection.mechanism`) over the candidate labels, with a *utility* per candidate
whose value changes by at most 1 when one record is added or removed:

- argmax: the candidate's count in the box (all utilities move the same way: monotonic);
- max: ``u(r) = −N_{>r} − [N_{≥r} = 0]`` with ``N_{>r}`` the box's records above ``r``. The true
  maximum is its unique best candidate (utility 0); a candidate above it scores −1, one below it minus
  the number of records above. Adding a record at ``v`` lowers ``u(r)`` by 1 for ``r < v`` (or leaves
  it) and raises ``u(v)`` by at most 1: sensitivity 1, not monotonic.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import numpy as np

from dpdesk.engine.errors import QueryError
from dpdesk.engine.queries.text import _error, _Parser
from dpdesk.engine.schema import Schema

__all__ = ["SelectionQuery", "is_selection_text", "parse_selection"]

_HEAD = re.compile(r"\s*(max|argmax)\s*\(")


def is_selection_text(text: str) -> bool:
    """True when ``text`` starts like ``max(`` or ``argmax(`` (and so is not a linear query)."""
    return isinstance(text, str) and _HEAD.match(text) is not None


@dataclass(frozen=True)
class SelectionQuery:
    """``kind`` over ``attribute`` restricted to a box (``conditions``: attribute → chosen labels)."""

    kind: Literal["max", "argmax"]
    attribute: str
    conditions: tuple[tuple[str, tuple[str, ...]], ...]
    text: str

    @property
    def monotonic(self) -> bool:
        """Whether every utility moves the same way when a record is added (argmax) or not (max)."""
        return self.kind == "argmax"

    def candidates(self, schema: Schema) -> tuple[str, ...]:
        """The labels the answer is chosen from: the attribute's whole declared domain."""
        return schema.attribute(self.attribute).labels

    def box(self, schema: Schema) -> np.ndarray:
        """Boolean cube mask of the cells whose records can change the answer (the box, every label of ``attribute``)."""
        mask = np.ones(schema.shape, dtype=bool)
        chosen = dict(self.conditions)
        for d, a in enumerate(schema.attributes):
            if a.name in chosen:
                keep = np.zeros(a.size, dtype=bool)
                keep[[a.labels.index(lab) for lab in chosen[a.name]]] = True
                shape = [1] * len(schema.shape)
                shape[d] = a.size
                mask &= keep.reshape(shape)
        return mask

    def box_counts(self, counts: np.ndarray, schema: Schema) -> np.ndarray:
        """Private: records in the box per label of ``attribute``."""
        axis = schema.axis(self.attribute)
        inside = np.where(self.box(schema), counts, 0)
        return np.asarray(inside.sum(axis=tuple(d for d in range(inside.ndim) if d != axis)).astype(np.int64))

    def utilities(self, counts: np.ndarray, schema: Schema) -> np.ndarray:
        """Private: each candidate's utility (sensitivity 1; see the module docstring)."""
        return utilities_from_label_counts(self.kind, self.box_counts(counts, schema))


def utilities_from_label_counts(kind: str, c: np.ndarray) -> np.ndarray:
    """The utility of every candidate from the box's count per label (in the attribute's order)."""
    c = np.asarray(c, dtype=np.int64)
    if kind == "argmax":
        return c.astype(float)
    above = np.concatenate([np.cumsum(c[::-1])[::-1][1:], [0]])  # N_{>r}
    at_or_above = above + c  # N_{≥r}
    return np.asarray(-(above + (at_or_above == 0)).astype(float))


class _SelectionParser(_Parser):
    def selection(self) -> SelectionQuery:
        head = self.take()
        if head.kind != "name" or head.text not in ("max", "argmax"):
            raise _error(head.col, f"expected max(...) or argmax(...) but found {head.describe()}")
        self.expect("(")
        t = self.attribute_name()
        attr = self.schema.attribute(t.text)
        if head.text == "max" and attr.kind != "numeric":
            raise _error(
                t.col, f"max needs an ordered (numeric) attribute; {t.text!r} is categorical (use argmax)"
            )
        labels: dict[str, list[str]] = {}
        if self.at("|"):
            self.take()
            self.args(labels)
        if t.text in labels:
            raise _error(t.col, f"attribute {t.text!r} is both the one asked about and a condition")
        self.expect_one_of(",", ")") if labels else None
        if not self.at(")"):
            raise _error(self.tok.col, f"expected '|' or ')' but found {self.tok.describe()}")
        self.take()
        if self.tok.kind != "end":
            raise _error(self.tok.col, f"expected end of query but found {self.tok.describe()}")
        conds = tuple((n, tuple(labels[n])) for n in self.schema.names if n in labels)
        return SelectionQuery(head.text, t.text, conds, "")  # type: ignore[arg-type]


def parse_selection(text: str, schema: Schema) -> SelectionQuery:
    """Parse ``max(A | …)`` / ``argmax(A | …)`` (module grammar); errors name the column.

    Examples
    --------
    >>> s = Schema.from_dict({"attributes": [
    ...     {"name": "age", "column": "age", "kind": "numeric", "edges": [0, 30, 60, 90]},
    ...     {"name": "sex", "column": "sex", "kind": "categorical", "values": ["Female", "Male"]}]})
    >>> q = parse_selection('argmax(age | sex="Female")', s)
    >>> q.kind, q.attribute, q.conditions
    ('argmax', 'age', (('sex', ('Female',)),))
    """
    if not isinstance(text, str) or not text.strip():
        raise QueryError('query: empty text (expected e.g. max(age) or argmax(education | sex="Female"))')
    q = _SelectionParser(text, schema).selection()
    return SelectionQuery(q.kind, q.attribute, q.conditions, text.strip())
