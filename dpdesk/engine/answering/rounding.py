"""How a released count is shown to people: the one rounding rule (docs/project-file.md, "Rounding").

A count — the answer to a query with integer coefficients — is an integer, but the value a release
computes is not always one: a fresh answer fused with history's estimate, or an estimate inferred
from history (a weighted sum of noisy answers, with floating-point error such as 59950.999999999985).
Rounding is post-processing, so it costs no privacy budget. The rule:

* the ledger records every value exactly as computed (``verify`` recomputes it bit for bit, and a
  fresh entry's raw noisy answer is the history row later inference reads);
* everything that shows a released count to a person — the app, the reply, the letters, the report,
  the ledger CSV's ``released`` column, the command line's text output — shows the value rounded to
  the nearest integer (halves up) and its interval as the integers inside it, via this module;
* a query with non-integer coefficients is not a count: its value is shown to six significant digits.

Why the promise survives: if the true count ``θ`` (an integer) lies in ``[v − ε, v + ε]``, it lies in
the integers of that interval (the same event, so the same probability), and it lies within
``⌊ε + ½⌋`` of ``round(v)`` — within ``ε`` itself when ``ε`` is a whole number.
"""

from __future__ import annotations

import math

from dpdesk.engine.vocabulary import accuracy_text, confidence_text  # re-exported: the one wording

__all__ = [
    "accuracy_text",
    "confidence_text",
    "count_interval",
    "format_interval",
    "format_value",
    "round_count",
    "shown_interval",
    "shown_value",
    "stated_answer",
]

# Floating-point error in a computed end point (e.g. 60033.999999999985 for 60034): an interval is only
# ever *widened* by this, which keeps its probability statement true.
_ABS_TOL = 1e-6
_REL_TOL = 1e-12


def _tol(x: float) -> float:
    return max(_ABS_TOL, _REL_TOL * abs(x))


def round_count(x: float) -> int:
    """``x`` to the nearest integer, halves up.

    >>> round_count(59950.999999999985), round_count(790.652), round_count(-2.5), round_count(2.5)
    (59951, 791, -2, 3)
    """
    return int(math.floor(float(x) + 0.5))


def count_interval(low: float, high: float, value: float | None = None) -> tuple[int, int]:
    """The integers inside ``[low, high]`` as ``(first, last)`` — an integer lies in one exactly when it
    lies in the other — widened, if need be, to hold ``round_count(value)``.

    >>> count_interval(740.652, 840.652), count_interval(59830.999999999985, 60070.999999999985)
    ((741, 840), (59831, 60071))
    >>> count_interval(10.3, 10.45, 10.4)  # no integer inside: the rounded value is shown as the interval
    (10, 10)
    """
    lo, hi = math.ceil(low - _tol(low)), math.floor(high + _tol(high))
    if value is not None:
        v = round_count(value)
        lo, hi = min(lo, v), max(hi, v)
    return int(lo), int(hi)


def shown_value(value: float, integral: bool) -> float | int:
    """The value as shown: rounded when ``integral`` (a count), else unchanged."""
    return round_count(value) if integral else float(value)


def shown_interval(
    low: float, high: float, integral: bool, value: float | None = None
) -> tuple[float, float]:
    """The interval as shown: :func:`count_interval` when ``integral``, else unchanged."""
    return count_interval(low, high, value) if integral else (float(low), float(high))


def format_value(value: float | None, integral: bool) -> str:
    """The text of a released value: ``59951`` for a count, six significant digits otherwise.

    >>> format_value(59950.999999999985, True), format_value(0.333333333, False), format_value(1234567.891, False)
    ('59951', '0.333333', '1234567.9')
    """
    if value is None:
        return "—"
    if integral:
        return str(round_count(value))
    text = f"{float(value):.6g}"
    return f"{float(value):.1f}" if "e+" in text else text  # never 1.23457e+06 for a large weighted sum


def format_interval(low: float, high: float, integral: bool, value: float | None = None) -> str:
    """``[first, last]`` of :func:`shown_interval`, each end formatted like :func:`format_value`."""
    lo, hi = shown_interval(low, high, integral, value)
    return f"[{format_value(lo, integral)}, {format_value(hi, integral)}]"


def stated_answer(
    value: float, low: float, high: float, integral: bool, eps: float | None, delta: float | None
) -> str:
    """A released answer with its one interval and the confidence it was released at — the same words in
    the app, the reply, the letters and the report: ``880 in [860, 899] (±20 at 95 % confidence)`` — a
    count's interval is the integers inside the released one (:func:`count_interval`).

    >>> stated_answer(879.6, 859.6, 899.6, True, 20, 0.05)
    '880 in [860, 899] (±20 at 95 % confidence)'
    """
    text = f"{format_value(value, integral)} in {format_interval(low, high, integral, value)}"
    if eps is not None and delta is not None:
        text += f" ({accuracy_text(eps, delta)})"
    return text
