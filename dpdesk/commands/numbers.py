"""argparse types for the numbers the command line takes, checked at entry (:mod:`dpdesk.engine.limits`).

An out-of-range number is argparse's one line (``dpdesk: error: argument --table-size: …``), exit 2,
before any project is opened.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any


def _typed(check: Callable[[Any], Any], convert: Callable[[str], Any]) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        from dpdesk.engine.errors import DpdeskError

        try:
            value = convert(text)
        except (ValueError, OverflowError):
            raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a number") from None
        try:
            return check(value)
        except DpdeskError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = getattr(check, "__name__", "number")
    return parse


def _number(text: str) -> float:
    return float(text)


def _whole(text: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        return float(text)  # "1e3" is a whole number too; "0.5" is refused by the check


def table_size(text: str) -> int:
    """A declared table size: a whole number of records (:func:`~dpdesk.engine.limits.check_table_size`)."""
    from dpdesk.engine.limits import check_table_size

    return _typed(check_table_size, _whole)(text)


def alpha(text: str) -> float:
    """A per-cell budget α (:func:`~dpdesk.engine.limits.check_alpha`)."""
    from dpdesk.engine.limits import check_alpha

    return _typed(check_alpha, _number)(text)


def accuracy(text: str) -> float:
    """An accuracy ±E (:func:`~dpdesk.engine.limits.check_eps`)."""
    from dpdesk.engine.limits import check_eps

    return _typed(lambda v: check_eps(v, "accuracy"), _number)(text)


def whole(name: str, low: int, high: int) -> Callable[[str], int]:
    """A whole number in ``[low, high]`` (a row count, a seed, a size)."""

    def check(value: Any) -> int:
        from dpdesk.engine.limits import check_whole

        return check_whole(value, name, low, high)

    return _typed(check, _whole)
