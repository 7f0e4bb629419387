"""Counter-offers: what the curator can offer instead when a request cannot be met as asked.

Two offers, both from public inputs only (the request, the per-cell costs, the total budget and the
assessment's posterior): the narrowest ±ε a fresh answer alone can meet at the request's δ within the
budget its cells have left (fusion with history can only make it cheaper), and the confidence at which
history answers the request's ±ε for free.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpdesk.engine.budget.policy import headroom

__all__ = ["CounterOffer", "counter_offer"]


@dataclass(frozen=True)
class CounterOffer:
    """The best terms available now for one request."""

    eps: float | None          # narrowest ±ε a fresh answer can meet at ``delta`` (None: no budget left)
    delta: float
    alpha: float               # what that fresh answer would spend (≤ the cells' headroom)
    free_confidence: float | None  # history's confidence at the request's ±ε (None: not estimable)
    free_delta: float | None   # the δ to ask for to be answered from history at that confidence


def _tidy_up(x: float) -> float:
    """``x`` rounded *up* to three significant digits (a wider ε only lowers the α it needs)."""
    if x <= 0 or not math.isfinite(x):
        return x
    step = 10 ** (math.floor(math.log10(x)) - 2)
    return round(math.ceil(x / step - 1e-9) * step, 12)


def counter_offer(assessment, total: float) -> CounterOffer:
    """The counter-offer for ``assessment``'s request under budget ``total`` (engine values only)."""
    req = assessment.request
    q, noise, s = req.query, assessment.noise, assessment.sensitivity
    room, _cell = headroom(q, np.asarray(assessment.cell_costs), total)
    eps = None
    alpha = 0.0
    if room > 0 and math.isfinite(room):
        lo, hi = 1e-9, 1.0
        while noise.alpha_for(s, hi, req.delta) > room:  # widen until the budget suffices
            hi *= 2.0
        for _ in range(100):  # bisection on a monotone map: α needed falls as ε widens
            mid = math.sqrt(lo * hi)
            lo, hi = (lo, mid) if noise.alpha_for(s, mid, req.delta) <= room else (mid, hi)
        eps = _tidy_up(hi)
        alpha = noise.alpha_for(s, eps, req.delta)
    conf = assessment.confidence_at_eps
    free_delta = None
    if conf is not None and conf > 0:
        free_delta = _tidy_up(1.0 - conf) if conf < 1 else 1e-6
        free_delta = min(free_delta, 0.999)
    return CounterOffer(eps, float(req.delta), float(alpha), conf, free_delta)
