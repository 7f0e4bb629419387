"""The search of a batch plan (:mod:`.planner`): for each candidate strategy, the scale ``t`` at which its
rows alone would meet each request (the BLUE from the rows and a safe ratio of half-width to standard
deviation), the requests it targets within the total, the joint guess over all requests, and the exact
check of a guess with the engine's own posterior (raised a little while a targeted request falls short).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dpdesk.engine.answering.request import Request, Settings
from dpdesk.engine.mechanisms.laplace import NoiseMechanism
from dpdesk.engine.planning.checks import Checker
from dpdesk.engine.planning.plan import Measurement
from dpdesk.engine.planning.strategies import Strategy
from dpdesk.engine.queries.query import Query

__all__ = ["EXACT", "LOWER_TRY", "exact_check", "joint", "margin", "needed_scales", "predict", "rise"]

_BUMPS = 4  # times t is raised by 3% when the exact check finds a targeted request short
EXACT = 2  # strategies given the exact check (the most promising by the search; 1 for large batches)
_MARGIN = 1.3  # requests whose searched need is within this factor of the scale are checked exactly too
LOWER_TRY = 60  # batches up to this size also try the exact check a little below the search's scale
# (requests answered, system cost after, per-cell costs after) of a candidate's rows
Score = tuple[int, float, np.ndarray]
# each pending request's confidence at ±ε less the error bound where the rows meet it, else None
Confidences = list[float | None]
# the search's pick for a strategy: (s, t, targeted, system-cost rise, t limit, requests to check exactly)
Guess = tuple[Strategy, float, np.ndarray, float, float, np.ndarray]
NoiseFor = Callable[[Query], NoiseMechanism]  # the noise family a row on a query is answered with


def _kappa(delta: float) -> float:
    """A safe ratio of the narrowest ``1 − δ`` half-width to the standard deviation for the search.

    One Laplace term has ``w/σ = ln(1/δ)/√2``; many terms tend to the normal's ``z_{1−δ/2}``; the search
    takes the larger (the exact check then settles every request with the engine's posterior).
    """
    z = math.sqrt(2.0) * _erfinv(1.0 - delta)
    return max(z, math.log(1.0 / delta) / math.sqrt(2.0))


def _erfinv(y: float) -> float:
    lo, hi = 0.0, 10.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if math.erf(mid) < y else (lo, mid)
    return 0.5 * (lo + hi)


def _dense(queries: Sequence[Query], cols: np.ndarray) -> np.ndarray:
    """The queries' coefficients on the cells ``cols`` (sorted), one row each."""
    out = np.zeros((len(queries), cols.size))
    for i, q in enumerate(queries):
        idx, vals = q.sparse()
        out[i, np.searchsorted(cols, idx)] = vals
    return out


def _deviations(rows: np.ndarray, precision: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """The BLUE's standard deviation of each target (rows of ``targets``) from the measured ``rows`` whose
    noise scales are ``1/precision`` (Laplace noise: variance 2b²); inf where the rows cannot estimate it.
    Everything is over the same columns (the cells involved)."""
    z = rows * precision[:, None]
    _u, sv, vt = np.linalg.svd(z, full_matrices=False)
    keep = sv > sv.max() * 1e-10
    sv, vt = sv[keep], vt[keep]
    coord = targets @ vt.T
    resid = np.linalg.norm(targets - coord @ vt, axis=1)
    sd: np.ndarray = np.sqrt(2.0 * np.sum((coord / sv) ** 2, axis=1))
    sd[resid > 1e-8 * np.maximum(1.0, np.linalg.norm(targets, axis=1))] = np.inf
    return sd


def needed_scales(strategy: Strategy, requests: Sequence[Request]) -> np.ndarray:
    """``t_i`` per request for the strategy's rows alone (inf where the rows cannot estimate it).

    At scale ``t`` row ``i``'s noise scale is ``S_i/(t·w_i)``: the BLUE's standard deviation falls as
    ``1/t``, so request ``i`` is met (by the search's reckoning) from ``t_i = κ(δ_i)·σ_i(1)/ε_i`` on.
    """
    cols = np.unique(np.concatenate([q.sparse()[0] for q in strategy.rows]))
    inside = np.zeros(strategy.profile.size, dtype=bool)
    inside[cols] = True
    ok = np.array([bool(inside[r.query.sparse()[0]].all()) for r in requests])
    out = np.full(len(requests), np.inf)
    if not ok.any():
        return out
    sens = np.array([q.sensitivity for q in strategy.rows])
    sub = [r for r, k in zip(requests, ok) if k]
    sd = _deviations(
        _dense(strategy.rows, cols), strategy.weights / sens, _dense([r.query for r in sub], cols)
    )
    out[ok] = np.array([_kappa(r.delta) for r in sub]) * sd / np.array([r.eps for r in sub])
    return out


def joint(
    pending: Sequence[Request], room: np.ndarray, settings: Settings, fam: NoiseFor, rounds: int = 8
) -> Guess | None:
    """The requests' own queries with jointly chosen α's: each row's α follows its request's slack until
    every targeted request is just met; while the plan does not fit, the dearest requests on the cells
    that overflow make way."""
    qs = [r.query for r in pending]
    cols = np.unique(np.concatenate([q.sparse()[0] for q in qs]))
    mat = _dense(qs, cols)
    share = np.abs(mat) / np.array([q.sensitivity for q in qs])[:, None]  # charge per unit α, per cell
    sens = np.array([q.sensitivity for q in qs])
    alpha = np.array([fam(q).alpha_for(q.sensitivity, r.eps, r.delta) for q, r in zip(qs, pending)])
    kappa = np.array([_kappa(r.delta) for r in pending])
    eps = np.array([r.eps for r in pending])
    policy = settings.policy
    cap = 1.0 if policy is None else policy.cap
    limit = cap * np.maximum(room[cols], 0.0) * (1 - 1e-9)
    keep = np.ones(len(pending), dtype=bool)
    # the requests' matrix once: R = U Σ Vᵀ; with row precisions P the BLUE's variance of request i is
    # 2 sᵢᵀ (Σ Uᵀ P² U Σ)⁺ sᵢ with sᵢ = Σ uᵢ — an r×r problem per round instead of an SVD
    u, sv, _vt = np.linalg.svd(mat, full_matrices=False)
    rank = sv > sv.max() * 1e-10
    us = u[:, rank] * sv[rank]  # rows sᵢ

    def deviations(idx: np.ndarray, prec: np.ndarray) -> np.ndarray:
        m = (us[idx] * (prec**2)[:, None]).T @ us[idx]
        w, v = np.linalg.eigh(m)
        good = w > w.max() * 1e-12
        proj = us[idx] @ v[:, good]
        return np.asarray(np.sqrt(2.0 * np.sum(proj**2 / w[good], axis=1)))

    while keep.any():
        idx = np.flatnonzero(keep)
        for _ in range(rounds):
            ratio = kappa[idx] * deviations(idx, alpha[idx] / sens[idx]) / eps[idx]
            if not np.all(np.isfinite(ratio)) or np.all(np.abs(ratio - 1.0) < 0.02):
                break
            alpha[idx] = alpha[idx] * np.clip(ratio, 0.1, 10.0) ** 0.7
        prof = alpha[idx] @ share[idx]
        over = prof > limit
        if not over.any():
            live = idx[alpha[idx] > 1e-6 * alpha[idx].max()]  # rows the others make redundant are left out
            s = Strategy.build("requests (joint α)", [qs[i] for i in live], alpha[live])
            target = keep.copy()
            used = s.profile > 0
            t_lim = float(np.min(cap * np.maximum(room[used], 0.0) / s.profile[used])) * (1 - 1e-9)
            return s, float(prof.max()), target, float(np.max(prof - room[cols])), t_lim, target
        # on the cell that overflows most, drop the dearest requests until it would fit
        c = int(np.argmax(prof / np.maximum(limit, 1e-300)))
        load = alpha[idx] * share[idx][:, c]
        need = prof[c] - limit[c]
        dropped = 0
        for k in np.argsort(-load):
            if need <= 0 or not load[k] > 0:
                break
            keep[idx[k]] = False
            need -= load[k]
            dropped += 1
        if not dropped:  # nothing on that cell to give way (cannot happen with finite α): stop
            return None
    return None


def predict(s: Strategy, pending: Sequence[Request], room: np.ndarray, settings: Settings) -> Guess | None:
    """The search's pick for a strategy: ``(s, t, targeted requests, system-cost rise, t limit)`` or None."""
    used = s.profile > 0
    if not used.any():
        return None
    t_max = float(np.min(np.maximum(room[used], 0.0) / s.profile[used]))
    policy = settings.policy
    t_lim = t_max * (1.0 - 1e-9) if policy is None else policy.cap * t_max * (1.0 - 1e-9)
    t_floor = 0.0 if policy is None else policy.floor * t_max * (1.0 - 1e-9)
    need = needed_scales(s, pending)
    target = need <= t_lim
    if not target.any() or t_lim <= 0:
        return None
    t = min(max(float(need[target].max()), t_floor), t_lim)
    # the search's κ overstates the need by up to ~13 %: the exact check also asks those just beyond
    return s, t, target, float(np.max(-room + t * s.profile)), t_lim, need <= t * _MARGIN


def margin(a: Any) -> float:
    """How far an assessment cleared its (ε, δ): its confidence at ±ε (history's, the fused answer's or the
    fresh answer's) less ``1 − δ``; −inf when refused."""
    r: Request = a.request
    if a.decision == "infer":
        return float(a.inference.confidence_at_eps - a.inference.error_bound) - (1.0 - r.delta)
    if a.decision != "spend":
        return -math.inf
    p = a.pricing
    conf = (
        p.fused_confidence
        if p.fused_confidence is not None
        else 1.0 - p.noise.tail(r.query.sensitivity / p.spend_alpha, r.eps)
    )
    return float(conf) - (1.0 - r.delta)


def rise(guess: Guess, costs0: np.ndarray) -> float:
    """The system cost after a guessed strategy at its scale."""
    s, t = guess[0], guess[1]
    return float(np.max(costs0 + t * s.profile))


def exact_check(
    s: Strategy,
    t: float,
    target: np.ndarray,
    t_lim: float,
    pending: Sequence[Request],
    checker: Checker,
    fam: NoiseFor,
    maybe: np.ndarray,
    lower: bool = True,
) -> tuple[list[Measurement], Confidences]:
    """The strategy's rows at scale ``t`` (raised a little while a targeted request falls short of the exact
    check, lowered once while none does) and the exact check's confidences."""

    def at(scale: float) -> tuple[list[Measurement], Confidences, np.ndarray]:
        rows = [Measurement(q, float(w) * scale, fam(q).name) for q, w in zip(s.rows, s.weights)]
        conf = checker.confidences(checker.history_with(rows), pending, maybe | target)
        return rows, conf, np.array([c is not None for c in conf])

    rows, conf, got = at(t)
    for _ in range(_BUMPS):
        if got[target].all() or t >= t_lim:
            break
        t = min(t * 1.03, t_lim)
        r2, c2, g2 = at(t)
        if g2.sum() >= got.sum():
            rows, conf, got = r2, c2, g2
    if lower and got[target].all():
        # the search's κ is conservative: try once a little lower, keep it if it answers as many
        r2, c2, g2 = at(t * 0.92)
        if g2.sum() >= got.sum():
            rows, conf = r2, c2
    return rows, conf
