"""The flags that state a request's terms, in the DP ecosystem's words (:mod:`dpdesk.engine.vocabulary`).

``--accuracy A`` (the half-width ±A), ``--confidence C`` (``0.95`` or ``95%``) and ``--epsilon E`` (a
privacy loss). Until 0.2 the flags followed the paper's letters — ``--eps`` for the accuracy, ``--delta``
for the miss probability 1 − C, ``--alpha`` for the privacy loss; they still work, hidden from
``--help``, and store the same values (a confidence is kept as its miss probability δ = 1 − C, computed
exactly, so ``--confidence 0.95`` and ``--delta 0.05`` queue the same request). A flag and its former
name together are refused in one line. ``--delta-cap`` keeps its name: it is the δ of approximate DP.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

__all__ = ["add_accuracy", "add_confidence", "add_epsilon", "confidence"]


def confidence(text: str) -> float:
    """argparse type of ``--confidence``: the miss probability δ = 1 − C of a typed confidence C."""
    from dpdesk.engine.vocabulary import delta_of_confidence

    try:
        return delta_of_confidence(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _target(where: Any, exclusive: bool) -> Any:
    """A new flag and its former name are exclusive; inside a group that already is, add to it."""
    if exclusive and isinstance(where, argparse.ArgumentParser):
        return where.add_mutually_exclusive_group()
    return where


def add_accuracy(
    where: Any,
    help: str,
    *,
    metavar: str = "A",
    type: Callable[[str], Any] | None = None,
    former: bool = True,
    dest: str = "eps",
) -> None:
    """``--accuracy A`` into ``dest``; the former ``--eps`` hidden (``former=False``: none, the command
    always said ``--accuracy``)."""
    group = _target(where, former)
    group.add_argument("--accuracy", dest=dest, metavar=metavar, type=type, help=help)
    if former:
        group.add_argument("--eps", dest=dest, type=type, help=argparse.SUPPRESS)


def add_confidence(where: Any, help: str, *, default: float | None = None, numeric: bool = True) -> None:
    """``--confidence C`` into ``dest="delta"`` (as δ = 1 − C); the former ``--delta D`` hidden.
    ``default`` is the miss probability δ when neither is given."""
    group = _target(where, True)
    group.add_argument("--confidence", dest="delta", metavar="C", type=confidence, default=default, help=help)
    group.add_argument("--delta", dest="delta", type=float if numeric else None, help=argparse.SUPPRESS)


def add_epsilon(where: Any, help: str, *, type: Callable[[str], Any] | None = None) -> None:
    """``--epsilon E`` (a privacy loss) into ``dest="alpha"``; the former ``--alpha`` hidden."""
    group = _target(where, True)
    group.add_argument("--epsilon", dest="alpha", metavar="E", type=type, help=help)
    group.add_argument("--alpha", dest="alpha", type=type, help=argparse.SUPPRESS)
