"""Placeholder examples made from the open project's own attributes (never the demo's names).

A curator with a table of ``region`` and ``visits`` sees ``count(region="north", visits="0 to <10")``,
not ``count(age="65-90")``: the example is one they could type.
"""

from __future__ import annotations

import json
from typing import Any


def _pick(schema: Any, n: int) -> list[tuple[str, str]]:
    """``(name, label)`` for the first ``n`` attributes, each with its second label (its first if alone)."""
    out = []
    for a in list(schema.attributes)[:n]:
        labels = list(a.labels)
        out.append((a.name, labels[min(1, len(labels) - 1)]))
    return out


def _cond(name: str, label: str) -> str:
    return f"{name}={json.dumps(label, ensure_ascii=False)}"


def count_example(schema: Any) -> str:
    """``count(a="x", b="y")`` over the schema's first two attributes."""
    return f"count({', '.join(_cond(n, lab) for n, lab in _pick(schema, 2))})"


def box_example(schema: Any, skip: str | None = None) -> str:
    """A box over one attribute other than ``skip``: ``b="y"``."""
    for n, lab in _pick(schema, len(schema.attributes)):
        if n != skip:
            return _cond(n, lab)
    return ""


def selection_example(schema: Any) -> str:
    """``max(numeric)   argmax(categorical | other="y")`` as the schema allows."""
    attrs = list(schema.attributes)
    numeric = next((a.name for a in attrs if a.kind == "numeric"), attrs[0].name)
    other = next((a.name for a in attrs if a.name != numeric), numeric)
    box = box_example(schema, skip=other)
    return f"max({numeric})   argmax({other}{' | ' + box if box else ''})"
