"""The ranges of the numbers dpdesk accepts from people, and why each range is what it is.

The engine computes in IEEE doubles, whose integers are exact up to 2⁵³. A count's true value is at most
the table size times its largest coefficient, a noise scale is the sensitivity over α, and every
posterior, lattice and grid the engine builds is sized from those numbers: an input far outside them
(a coefficient of 1e308, a table of 0.5 records, α = 1e-300) makes the arithmetic overflow or lose its
exactness, or makes a grid or a search grow without end. So every number a curator or a requester
types is checked once, where it enters (a request, a claim, a command-line option), against the ranges
here; out of range is one line naming the number and its range, nothing written.

===================  ==============================  ==================================================
input                range                           why
===================  ==============================  ==================================================
query coefficient    0, or 10⁻⁶ ≤ |w| ≤ 10⁶           with a table of ≤ 9·10⁹ records every answer stays
                                                     an exact double (≤ 2⁵³); the ratio of two
                                                     coefficients (≤ 10¹²) bounds the lattices
table size           a whole number 1 … 9 007 199 254  records are counted; 2⁵³ / 10⁶
ε (an accuracy)      10⁻⁹ ≤ ε ≤ 10¹⁵                  a half-width beyond any exact answer means nothing
α (a budget)         10⁻⁹ ≤ α ≤ 10⁶                   the noise scale S/α stays ≤ 10¹⁵ (an exact double)
rows, sizes          whole numbers, bounded per use   work proportional to them is bounded up front
===================  ==============================  ==================================================
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpdesk.engine.errors import DpdeskError

__all__ = [
    "EXACT",
    "MAX_ALPHA",
    "MAX_EPS",
    "MAX_TABLE_SIZE",
    "MAX_WEIGHT",
    "MIN_ALPHA",
    "MIN_EPS",
    "MIN_WEIGHT",
    "check_alpha",
    "check_eps",
    "check_number",
    "check_table_size",
    "check_weights",
    "check_whole",
]

EXACT = 2**53  # doubles hold every integer up to here exactly
MAX_WEIGHT = 1e6
MIN_WEIGHT = 1e-6
MAX_TABLE_SIZE = int(EXACT // MAX_WEIGHT)  # 9 007 199 254 records
MIN_EPS, MAX_EPS = 1e-9, 1e15
MIN_ALPHA, MAX_ALPHA = 1e-9, 1e6


def _as_float(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise DpdeskError(f"{name} ({value!r}) must be a number")
    try:
        x = float(value)
    except OverflowError:  # a Python integer of hundreds of digits
        raise DpdeskError(f"{name} ({str(value)[:20]}…) must be a finite number") from None
    if not math.isfinite(x):
        raise DpdeskError(f"{name} ({value!r}) must be a finite number")
    return x


def check_number(value: Any, name: str, low: float, high: float) -> float:
    """``value`` as a float when ``low ≤ value ≤ high``, else a one-line :class:`DpdeskError` naming it."""
    x = _as_float(value, name)
    if not low <= x <= high:
        raise DpdeskError(f"{name} ({x:g}) must be between {low:g} and {high:g}")
    return x


def check_whole(value: Any, name: str, low: int, high: int) -> int:
    """``value`` as an int when it is a whole number in ``[low, high]`` (a row count, a size)."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        x: int | float = int(value)
    else:
        x = _as_float(value, name)
        if not x.is_integer():
            raise DpdeskError(f"{name} ({x:g}) must be a whole number")
    if not low <= x <= high:
        shown = str(value) if len(str(value)) <= 20 else f"{str(value)[:12]}… ({len(str(value))} digits)"
        raise DpdeskError(f"{name} ({shown}) must be a whole number from {low:,} to {high:,}")
    return int(x)


def check_table_size(value: Any, name: str = "table size") -> int:
    """A declared table size: a whole number of records, 1 … :data:`MAX_TABLE_SIZE`."""
    return check_whole(value, name, 1, MAX_TABLE_SIZE)


def check_eps(value: Any, name: str = "eps") -> float:
    """An accuracy (a half-width ε): :data:`MIN_EPS` … :data:`MAX_EPS`."""
    x = _as_float(value, name)
    if x <= 0:
        raise DpdeskError(f"{name} ({value!r}) must be a positive finite number")
    return check_number(x, name, MIN_EPS, MAX_EPS)


def check_alpha(value: Any, name: str = "epsilon") -> float:
    """A privacy loss ε (the paper's α): :data:`MIN_ALPHA` … :data:`MAX_ALPHA`."""
    x = _as_float(value, name)
    if x <= 0:
        raise DpdeskError(f"{name} ({value!r}) must be a positive finite number")
    return check_number(x, name, MIN_ALPHA, MAX_ALPHA)


def check_weights(values: np.ndarray, where: str = "query") -> None:
    """Every nonzero coefficient of a query a person typed lies in ``[MIN_WEIGHT, MAX_WEIGHT]`` in magnitude."""
    mags = np.abs(np.asarray(values, dtype=float))
    mags = mags[mags != 0]
    if not mags.size:
        return
    big, small = float(mags.max()), float(mags.min())
    if big > MAX_WEIGHT:
        raise DpdeskError(
            f"{where}: coefficient {big:g} is larger than {MAX_WEIGHT:g} in magnitude (dpdesk keeps every "
            "answer an exact number; scale the query down)"
        )
    if small < MIN_WEIGHT:
        raise DpdeskError(
            f"{where}: coefficient {small:g} is smaller than {MIN_WEIGHT:g} in magnitude (dpdesk keeps every "
            "answer an exact number; scale the query up)"
        )
