"""The tokenizer of the text form of queries (:mod:`dpdesk.engine.queries.text`): numbers, names, quoted
strings and punctuation, each with its 1-based column, and the one-line error naming a column."""

from __future__ import annotations

import re
from dataclasses import dataclass

from dpdesk.engine.errors import QueryError

__all__ = ["tokenize"]

_NUMBER = re.compile(r"(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)
_DIGITS = frozenset("0123456789")
_PUNCT = set("()[],=+-*|;")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r"}


@dataclass(frozen=True)
class _Token:
    kind: str  # "number", "name", "string", "punct", "end"
    text: str  # source text (numbers, names, punctuation) or decoded value (strings)
    col: int  # 1-based column of the first character

    def describe(self) -> str:
        if self.kind == "end":
            return "end of query"
        if self.kind == "string":
            return f"string {self.text!r}"
        if self.kind == "number":
            return f"number {self.text}"
        return repr(self.text)


def _error(col: int, message: str) -> QueryError:
    return QueryError(f"query: at column {col}: {message}")


def tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif c in _PUNCT:
            tokens.append(_Token("punct", c, i + 1))
            i += 1
        elif c in "'\"":
            start, i, chars = i, i + 1, []
            while True:
                if i >= n:
                    raise _error(start + 1, f"unterminated string (no closing {c})")
                ch = text[i]
                if ch == "\\":
                    if i + 1 >= n:
                        raise _error(start + 1, f"unterminated string (no closing {c})")
                    chars.append(_ESCAPES.get(text[i + 1], text[i + 1]))
                    i += 2
                elif ch == c:
                    i += 1
                    break
                else:
                    chars.append(ch)
                    i += 1
            tokens.append(_Token("string", "".join(chars), start + 1))
        elif c in _DIGITS or (c == "." and i + 1 < n and text[i + 1] in _DIGITS):
            m = _NUMBER.match(text, i)
            assert m is not None
            tokens.append(_Token("number", m.group(), i + 1))
            i = m.end()
        elif c.isalpha() or c == "_":
            start = i
            while i < n and (text[i].isalnum() or text[i] == "_"):
                i += 1
            tokens.append(_Token("name", text[start:i], start + 1))
        else:
            raise _error(i + 1, f"unexpected character {c!r}")
    tokens.append(_Token("end", "", n + 1))
    return tokens
