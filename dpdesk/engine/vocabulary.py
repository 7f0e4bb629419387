"""The words people read for dpdesk's numbers, in one place: the DP ecosystem's vocabulary.

OpenDP, Tumult, DP Wizard and the literature a requester has read say **ε** for privacy loss (a
release is ε-DP; a project's budget is a total ε), **δ** only for the δ of approximate (ε, δ)-DP, and
state an accuracy as **±a at 95 % confidence** (OpenDP: accuracy at significance α = 1 − confidence).
The paper dpdesk implements uses other letters (α for the budget, ±ε and 1 − δ for the accuracy); the
code keeps them in its variable names and formulas, which cite the paper, but nothing a person reads
does. Every front end — the command line, the app, the letters, the report — words its numbers
through these functions, so one number reads the same everywhere.

Internally a request's accuracy is ``(eps, delta)`` — half-width and miss probability — and a
privacy loss is ``alpha``; the stable JSON formats keep those field names (DESIGN §6).

>>> epsilon_text(0.5), accuracy_text(20, 0.05), terms_text("count", 20, 0.05, None)
('ε = 0.5', '±20 at 95 % confidence', '±20 at 95 %')
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

__all__ = [
    "ACCURACY",
    "CONFIDENCE",
    "EPSILON",
    "accuracy_text",
    "confidence_flag",
    "confidence_percent",
    "confidence_text",
    "delta_of_confidence",
    "epsilon_text",
    "terms_text",
]

EPSILON = "ε"  # privacy loss: a release is ε-DP, a cell's cost and the budget are in ε
ACCURACY = "accuracy ±a"  # the half-width a requester asks for
CONFIDENCE = "confidence"  # the probability the ±a window holds the truth (1 − the miss probability)


def epsilon_text(value: float, digits: int = 6) -> str:
    """A privacy loss as people read it: ``ε = 0.5``.

    >>> epsilon_text(0.123456789), epsilon_text(1.2345, 3)
    ('ε = 0.123457', 'ε = 1.23')
    """
    return f"ε = {float(value):.{digits}g}"


def confidence_text(delta: float) -> str:
    """A confidence ``1 − δ`` (δ: the miss probability) as people read it: ``95 %``, ``99.9 %``.

    >>> confidence_text(0.05), confidence_text(0.001), confidence_text(0.1637)
    ('95 %', '99.9 %', '83.63 %')
    """
    return f"{100 * (1 - float(delta)):.4g} %"


def confidence_percent(delta: float) -> float:
    """The confidence ``1 − δ`` in percent, as a number (a table sorts by it), to the digits
    :func:`confidence_text` shows.

    >>> confidence_percent(0.05), confidence_percent(0.001)
    (95.0, 99.9)
    """
    return float(f"{100 * (1 - float(delta)):.4g}")


def accuracy_text(eps: float, delta: float, *, short: bool = False) -> str:
    """An accuracy as the DP world states it: ``±a at c % confidence`` (``±a at c %`` when ``short``).

    >>> accuracy_text(20, 0.05), accuracy_text(2.5, 0.01, short=True)
    ('±20 at 95 % confidence', '±2.5 at 99 %')
    """
    text = f"±{float(eps):g} at {confidence_text(delta)}"
    return text if short else f"{text} confidence"


def terms_text(kind: str, eps: float | None, delta: float | None, alpha: float | None) -> str:
    """What a request states besides its text: its accuracy (``±50 at 95 %``) or the privacy loss it
    names (``ε = 0.5``), or ``—``. ``eps``/``delta``/``alpha`` are the stored fields (half-width, miss
    probability, per-cell privacy loss).

    >>> terms_text("count", 50, 0.05, None), terms_text("selection", None, None, 0.5)
    ('±50 at 95 %', 'ε = 0.5')
    >>> terms_text("selection", 5, 0.1, None), terms_text("posterior", None, None, None)
    ('±5 at 90 %', 'price in the text')
    """
    parts = []
    if eps is not None and delta is not None:
        parts.append(accuracy_text(eps, delta, short=True))
    elif eps is not None:
        parts.append(f"±{float(eps):g}")
    elif delta is not None:
        parts.append(f"at {confidence_text(delta)}")
    if alpha is not None:
        parts.append(f"ε = {float(alpha):g}")
    return ", ".join(parts) or ("price in the text" if kind == "posterior" else "—")


def confidence_flag(delta: float) -> str:
    """The ``--confidence`` value that stores exactly the miss probability ``delta`` (the shortest
    decimal of the float ``delta``, subtracted from 1 in decimal): what a printed command line offers.

    >>> confidence_flag(0.05), confidence_flag(0.0012345678901), delta_of_confidence(confidence_flag(0.661))
    ('0.95', '0.9987654321099', 0.661)
    """
    return str(1 - Decimal(repr(float(delta))))


def delta_of_confidence(text: str | float) -> float:
    """The miss probability of a confidence a person typed: ``0.95``, ``95%`` or ``95 %`` → ``0.05``.

    Computed in decimal, so ``0.95`` gives exactly the float ``0.05`` (not ``0.050000000000000044``)
    and a request queued with ``--confidence 0.95`` states the same δ as one queued with ``--delta 0.05``.
    A value that is no confidence strictly between 0 and 1 (0 % and 100 %) raises ``ValueError``.

    >>> delta_of_confidence("0.95"), delta_of_confidence("99.9%"), delta_of_confidence(0.9)
    (0.05, 0.001, 0.1)
    """
    raw = str(text).strip()
    percent = raw.endswith("%")
    try:
        value = Decimal(raw.rstrip("%").strip())
    except InvalidOperation:
        raise ValueError(f"confidence ({raw[:40]!r}) is not a number, e.g. 0.95 or 95%") from None
    if percent:
        value /= 100
    if not (value.is_finite() and 0 < value < 1):
        raise ValueError(
            f"confidence ({raw[:40]!r}) must lie strictly between 0 and 1 (or 0% and 100%), e.g. 0.95"
        )
    return float(1 - value)
