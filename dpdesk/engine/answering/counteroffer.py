"""Counter-offers: what the curator can offer instead when a request cannot be met as asked.

Two offers, both from public inputs only (the request, the per-cell costs, the total budget and the
assessment's posterior): the narrowest ±ε a fresh answer alone can meet at the request's δ within the
budget its cells have left (fusion with history can only make it cheaper), and the confidence at which
history answers the request's ±ε for free. :func:`claim_offer` makes the same two offers when a watched
claim caps the α a fresh answer may spend (the largest α that passes the claim, store/watching.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpdesk.engine.budget.policy import headroom

__all__ = ["CounterOffer", "claim_offer", "counter_offer", "eps_for_alpha"]


@dataclass(frozen=True)
class CounterOffer:
    """The best terms available now for one request."""

    eps: float | None  # narrowest ±ε a fresh answer can meet at ``delta`` (None: no budget left)
    delta: float
    alpha: float  # what that fresh answer would spend (≤ the cells' headroom)
    free_confidence: float | None  # history's confidence at the request's ±ε (None: not estimable)
    free_delta: float | None  # the δ to ask for to be answered from history at that confidence


def _tidy_up(x: float) -> float:
    """``x`` rounded *up* to three significant digits (a wider ε only lowers the α it needs)."""
    if x <= 0 or not math.isfinite(x):
        return x
    step = 10 ** (math.floor(math.log10(x)) - 2)
    return round(math.ceil(x / step - 1e-9) * step, 12)


def eps_for_alpha(noise, sensitivity: float, alpha: float, delta: float) -> float | None:
    """The narrowest ±ε (rounded up to three digits) that a fresh answer spending at most ``alpha`` meets
    at ``delta`` (Thm 5.3's α for ``noise``, alone: fusion with history can only make it cheaper);
    None when ``alpha`` buys nothing."""
    if not (alpha > 0 and math.isfinite(alpha)):
        return None
    lo, hi = 1e-9, 1.0
    while noise.alpha_for(sensitivity, hi, delta) > alpha:  # widen until α suffices
        hi *= 2.0
    for _ in range(100):  # bisection on a monotone map: α needed falls as ε widens
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if noise.alpha_for(sensitivity, mid, delta) <= alpha else (mid, hi)
    return _tidy_up(hi)


def _offer(assessment, alpha_cap: float) -> CounterOffer:
    req = assessment.request
    eps = eps_for_alpha(assessment.noise, assessment.sensitivity, alpha_cap, req.delta)
    alpha = 0.0 if eps is None else assessment.noise.alpha_for(assessment.sensitivity, eps, req.delta)
    conf = assessment.confidence_at_eps
    free_delta = None
    if conf is not None and conf > 0:
        free_delta = _tidy_up(1.0 - conf) if conf < 1 else 1e-6
        free_delta = min(free_delta, 0.999)
    return CounterOffer(eps, float(req.delta), float(alpha), conf, free_delta)


def counter_offer(assessment, total: float) -> CounterOffer:
    """The counter-offer for ``assessment``'s request under budget ``total`` (engine values only)."""
    room, _cell = headroom(assessment.request.query, np.asarray(assessment.cell_costs), total)
    return _offer(assessment, room if room > 0 and math.isfinite(room) else 0.0)


def claim_offer(assessment, largest_alpha: float | None, total: float) -> CounterOffer:
    """The counter-offer for a request a watched claim declines: a fresh answer at no more than
    ``largest_alpha`` (the largest α that passes; None: none does) nor the cells' headroom under
    ``total``, at the ±ε that α buys at the request's δ — and history's free answer as in
    :func:`counter_offer`."""
    room, _cell = headroom(assessment.request.query, np.asarray(assessment.cell_costs), total)
    cap = 0.0 if largest_alpha is None or not room > 0 else min(float(largest_alpha), float(room))
    return _offer(assessment, cap if math.isfinite(cap) else 0.0)
