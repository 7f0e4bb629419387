"""Counter-offers: what the curator can offer instead when a request cannot be met as asked.

Two offers, both from public inputs only (the request, the per-cell costs, the total budget, the
curator's spend policy and the assessment's posterior): the best answer the budget and the curator's
cap allow — the narrowest ±ε a fresh answer (fused with history where history knows the query) meets at
the request's δ spending no more than the cells have left and the spend policy lets one request take
(``cap × headroom``) — and the confidence at which history answers the request's ±ε for free. For a
request the policy or the budget declines, that ±ε is wider than asked; for one that could be answered
it is the tighter answer the same budget buys. :func:`claim_offer` makes the same two offers when a
watched claim caps the α a fresh answer may spend (the largest α that passes the claim,
store/watching.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from dpdesk.engine.budget.policy import headroom

if TYPE_CHECKING:
    from dpdesk.engine.answering.assessment import Assessment
    from dpdesk.engine.mechanisms.laplace import NoiseMechanism

__all__ = ["CounterOffer", "claim_offer", "counter_offer", "eps_for_alpha"]


@dataclass(frozen=True)
class CounterOffer:
    """The best terms available now for one request."""

    eps: float | None  # narrowest ±ε a fresh answer can meet at ``delta`` (None: no budget left)
    delta: float
    alpha: float  # what that fresh answer would spend (≤ the cells' headroom and the policy's cap)
    free_confidence: float | None  # history's confidence at the request's ±ε (None: not estimable)
    free_delta: float | None  # the δ to ask for to be answered from history at that confidence
    limit: str = "budget"  # what bounds the fresh offer: "budget", "spend policy cap" or "watched claims"


def _tidy_up(x: float) -> float:
    """``x`` rounded *up* to three significant digits (a wider ε only lowers the α it needs)."""
    if x <= 0 or not math.isfinite(x):
        return x
    step = 10 ** (math.floor(math.log10(x)) - 2)
    return float(round(math.ceil(x / step - 1e-9) * step, 12))


def eps_for_alpha(noise: NoiseMechanism, sensitivity: float, alpha: float, delta: float) -> float | None:
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


def _fused_eps(assessment: Assessment, alpha: float, delta: float, alone: float) -> float:
    """The narrowest ±ε a fresh answer spending ``alpha``, fused with history's estimate, meets at δ
    (bisection on a mass that grows with ε; never wider than ``alone``, the answer without history)."""
    from dpdesk.engine.inference.fusion import fused_confidence
    from dpdesk.engine.mechanisms.base import meets

    est = assessment.inference.history_estimate
    if not (assessment.settings.fusion and est.estimable and est.variance and est.variance > 0):
        return alone
    s, noise = assessment.sensitivity, assessment.noise
    lo, hi = alone * 1e-3, alone
    if meets(fused_confidence(est, alpha, s, noise, lo), delta):
        return lo
    for _ in range(40):
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if meets(fused_confidence(est, alpha, s, noise, mid), delta) else (mid, hi)
        if hi / lo < 1.0005:
            break
    return hi


def _offer(assessment: Assessment, alpha_cap: float, limit: str) -> CounterOffer:
    req = assessment.request
    eps = eps_for_alpha(assessment.noise, assessment.sensitivity, alpha_cap, req.delta)
    alpha = 0.0
    if eps is not None:
        eps = _tidy_up(_fused_eps(assessment, alpha_cap, req.delta, eps))
        alone = assessment.noise.alpha_for(assessment.sensitivity, eps, req.delta)
        alpha = min(alone, alpha_cap)  # fused, it may cost less; the assessment of the new terms says exactly
    conf = assessment.confidence_at_eps
    free_delta = None
    if conf is not None and conf > 0:
        free_delta = _tidy_up(1.0 - conf) if conf < 1 else 1e-6
        free_delta = min(free_delta, 0.999)
    return CounterOffer(eps, float(req.delta), float(alpha), conf, free_delta, limit)


def _room(assessment: Assessment, total: float) -> tuple[float, str]:
    """The most one fresh answer may spend: the cells' headroom (a cell's room is a person's over the
    ``k`` rows they may hold in it: total / k in ε, total / k² in ρ), times the spend policy's cap."""
    measure = getattr(assessment.settings, "measure", "epsilon")  # ρ in a zCDP project
    k = assessment.pricing.rows_per_person
    share = k if measure == "epsilon" else k * k
    room, _cell = headroom(
        assessment.request.query, np.asarray(assessment.cell_costs), total / share, measure
    )
    room = room if room > 0 and math.isfinite(room) else 0.0
    policy = getattr(assessment.settings, "policy", None)
    if policy is not None and policy.cap < 1.0:
        return room * policy.cap, "spend policy cap"
    return room, "budget"


def counter_offer(assessment: Assessment, total: float) -> CounterOffer:
    """The counter-offer for ``assessment``'s request under budget ``total`` and the assessment's spend
    policy (engine values only): the best answer they allow, and history's free answer."""
    room, limit = _room(assessment, total)
    return _offer(assessment, room, limit)


def claim_offer(assessment: Assessment, largest_alpha: float | None, total: float) -> CounterOffer:
    """The counter-offer for a request a watched claim declines: a fresh answer at no more than
    ``largest_alpha`` (the largest α that passes; None: none does) nor what the budget and the spend
    policy allow under ``total``, at the ±ε that α buys at the request's δ — and history's free answer
    as in :func:`counter_offer`."""
    room, limit = _room(assessment, total)
    if largest_alpha is None or not room > 0:
        return _offer(assessment, 0.0, "watched claims")
    if float(largest_alpha) < room:
        room, limit = float(largest_alpha), "watched claims"
    return _offer(assessment, room if math.isfinite(room) else 0.0, limit)
