"""A watched claim ``C: θ ∈ [L₀, U₀]`` about a linear query θ, and what history says of it now.

A claim is chosen by the curator from public knowledge or policy, never from the data: a claim picked
because a cell *is* small, and releases declined because of it, would tell the world the cell is small.
:func:`read_claim` computes ``Pr(C | released)`` with the engine's flat-prior posterior (paper §4–§5);
when history does not pin θ down (not estimable) there is no such number, and the reading says so and
counts as the worst case: a flat prior ignores that counts are non-negative, so "not estimable" does
not mean "nothing known" (history ``[1, 1] ≈ 0`` makes both cells small). The reasoning is in
docs/claims.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.inference.history import History
from dpdesk.engine.inference.posterior import Posterior, posterior
from dpdesk.engine.queries.query import Query

__all__ = ["Claim", "ClaimError", "ClaimReading", "claim_mass", "read_claim"]


class ClaimError(DpdeskError):
    """A watched claim is malformed (interval, threshold or risk budget)."""


def _number(name: str, value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ClaimError(f"{where}: {name} ({value!r}) must be a finite number")
    return float(value)


def _fraction(name: str, value: object, where: str) -> float:
    v = _number(name, value, where)
    if not 0.0 < v < 1.0:
        raise ClaimError(f"{where}: {name} ({value!r}) must lie strictly between 0 and 1")
    return v


@dataclass(frozen=True)
class Claim:
    """``C: low ≤ θ ≤ high`` for ``θ = query·x``, watched with a threshold and a risk budget.

    Parameters
    ----------
    query : Query
        The linear query θ.
    low, high : float or None
        ``L₀`` and ``U₀``; one of them may be None (an open side), not both.
    threshold : float
        τ in (0, 1): ``Pr(C) ≥ τ`` is what must not happen.
    risk : float
        The risk budget in (0, 1): the largest probability, over the whole stream of releases and at
        any true θ inside the claim, that ``Pr(C)`` crosses τ because of a release.
    name : str
        A label for messages (e.g. the query's text form).

    Examples
    --------
    >>> from dpdesk.engine.queries.query import query_from_vector
    >>> Claim(query_from_vector([0, 1], (2,)), None, 3, threshold=0.8, risk=0.05).describe()
    'θ ≤ 3 (τ = 0.8, risk 0.05)'
    """

    query: Query
    low: float | None
    high: float | None
    threshold: float
    risk: float
    name: str = "claim"

    def __post_init__(self) -> None:
        where = self.name
        if not isinstance(self.query, Query):
            raise ClaimError(f"{where}: the claim needs a query")
        if self.low is None and self.high is None:
            raise ClaimError(f"{where}: give L₀, U₀ or both (both sides open claims nothing)")
        low = None if self.low is None else _number("L₀", self.low, where)
        high = None if self.high is None else _number("U₀", self.high, where)
        if low is not None and high is not None and low > high:
            raise ClaimError(f"{where}: L₀ ({low:g}) is greater than U₀ ({high:g})")
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)
        object.__setattr__(self, "threshold", _fraction("threshold τ", self.threshold, where))
        object.__setattr__(self, "risk", _fraction("risk budget", self.risk, where))

    @property
    def lower(self) -> float:
        """``L₀``, −∞ for an open side."""
        return -math.inf if self.low is None else self.low

    @property
    def upper(self) -> float:
        """``U₀``, +∞ for an open side."""
        return math.inf if self.high is None else self.high

    def describe(self) -> str:
        if self.low is None:
            side = f"θ ≤ {self.high:g}"
        elif self.high is None:
            side = f"θ ≥ {self.low:g}"
        else:
            side = f"{self.low:g} ≤ θ ≤ {self.high:g}"
        return f"{side} (τ = {self.threshold:g}, risk {self.risk:g})"


def claim_mass(post: Posterior, center: float, low: float, high: float) -> float:
    """``Pr(low ≤ θ ≤ high)`` when the posterior shape ``post`` (centred at 0) is moved to ``center``.

    ``post`` is the law of ``θ − θ̂`` (symmetric), so ``θ = center + Z`` and the claim holds when
    ``Z ∈ [low − center, high − center]``; infinite ends are open sides.
    """
    a, b = low - center, high - center
    if b < a:
        return 0.0
    hi = post.total if math.isinf(b) else post.cdf(b)
    lo = 0.0 if math.isinf(a) else post.prob_less(a)
    return max(0.0, hi - lo)


@dataclass(frozen=True)
class ClaimReading:
    """What the released history says about a claim now.

    Attributes
    ----------
    estimable : bool
        Whether history pins θ down (paper Thm 3.1). When False, ``probability`` is None and the
        reading counts as the worst case (``worst_case`` is True).
    probability : float or None
        ``Pr(C | released)`` under the flat prior.
    estimate, std : float or None
        θ̂ and its posterior standard deviation.
    over_threshold : bool
        ``probability ≥ τ``, or the worst case.
    """

    claim: Claim
    estimable: bool
    probability: float | None
    estimate: float | None = None
    std: float | None = None

    @property
    def worst_case(self) -> bool:
        return not self.estimable

    @property
    def over_threshold(self) -> bool:
        return self.worst_case or (self.probability is not None and self.probability >= self.claim.threshold)

    def describe(self) -> str:
        if not self.estimable:
            return (
                f"{self.claim.name}: θ is not estimable from what was released; treated as the worst case "
                "(a flat prior ignores that counts are non-negative)"
            )
        word = "at or over" if self.over_threshold else "under"
        return f"{self.claim.name}: Pr(C) = {self.probability:.4f}, {word} τ = {self.claim.threshold:g}"


def read_claim(history: History, claim: Claim, *, method: str = "fft") -> ClaimReading:
    """``Pr(C | released)`` from ``history`` (public: released rows only), or "not estimable".

    Examples
    --------
    >>> from dpdesk.engine.inference.history import HistoryRow
    >>> from dpdesk.engine.queries.query import query_from_vector
    >>> q = query_from_vector([0, 1], (2,))
    >>> h = History((2,), [HistoryRow(query_from_vector([1, 1], (2,)), 1.0, 2.0)])
    >>> read_claim(h, Claim(q, None, 3, 0.8, 0.05)).estimable
    False
    """
    est = history.estimate(claim.query)
    if not est.estimable:
        return ClaimReading(claim, False, None)
    assert est.estimate is not None and est.coefficients is not None and est.noise_scales is not None
    shape = posterior(0.0, est.coefficients, est.noise_scales, list(est.families), method=method)
    p = claim_mass(shape, est.estimate, claim.lower, claim.upper)
    return ClaimReading(claim, True, min(1.0, p), est.estimate, est.std)
