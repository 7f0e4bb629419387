"""Plan the release for a batch of pending requests: the cheapest measurements after which every request
of the batch that the budget can cover is answerable from history at its own (ε, δ).

For each candidate :class:`~dpdesk.engine.planning.strategies.Strategy` (rows with relative budgets, so
that releasing them at scale ``t`` raises cell ``j``'s cost by ``t·P_j``):

1. *search* — for each request, the BLUE from the strategy's rows alone at ``t = 1`` and its exact
   posterior; scaling every row's budget by ``t`` divides every noise scale by ``t``, so the request is
   met from ``t_i = w_i / ε_i`` on, with ``w_i`` its narrowest ``1 − δ_i`` half-width at ``t = 1``
   (exact for continuous Laplace noise; the check below settles the rest);
2. *choose ``t``* — the largest ``t`` the hard total allows (and, under a spend policy, at most ``cap``
   of it, at least ``floor``: the batch is paced like one purchase) covers every request with
   ``t_i ≤ t``; ``t`` is the largest such ``t_i``: no more than needed;
3. *check* — the history as it would be after the release (the released rows plus the strategy's at
   ``t``) is asked, request by request, whether it meets (ε, δ) with the engine's own test
   (:func:`~dpdesk.engine.answering.workflow.answerable`, the exact posterior less its error bound).
   Only requests that pass are *planned*.

The same check is made for answering the batch one by one under today's rules (Fig. 4 with fusion and
the spend policy, in queue order): that is a candidate too, so the chosen plan — most requests answered,
then the smallest system cost — is never worse than one by one. Everything is public: the requests,
their (ε, δ), the history's rows (their queries and budgets; not their values), the per-cell costs and
the settings. No released value and no data is read.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from dpdesk.engine.answering.request import Request, Settings
from dpdesk.engine.answering.workflow import assess
from dpdesk.engine.errors import Cancelled, DpdeskError
from dpdesk.engine.inference.history import History, HistoryRow
from dpdesk.engine.mechanisms.laplace import NoiseMechanism
from dpdesk.engine.mechanisms.registry import check_method, family_for, noise_family
from dpdesk.engine.planning.checks import FREE_LIMIT, Checker, uncovered
from dpdesk.engine.planning.plan import BatchPlan, Candidate, Measurement, PlannedRequest, costs_after
from dpdesk.engine.planning.strategies import Strategy, candidate_strategies
from dpdesk.engine.planning.topup import beats as _beats
from dpdesk.engine.planning.topup import confirm as _confirm
from dpdesk.engine.planning.topup import misses as _misses
from dpdesk.engine.planning.topup import probe as _probe
from dpdesk.engine.planning.topup import settled as _settled
from dpdesk.engine.planning.topup import top_up as _top_up
from dpdesk.engine.queries.query import Query

__all__ = ["needed_scales", "plan_batch"]

_BUMPS = 4  # times t is raised by 3% when the exact check finds a targeted request short
_EXACT = 2  # strategies given the exact check (the most promising by the search; 1 for large batches)
_MARGIN = 1.3  # requests whose searched need is within this factor of the scale are checked exactly too
# (requests answered, system cost after, per-cell costs after) of a candidate's rows
Score = tuple[int, float, np.ndarray]
# each pending request's confidence at ±ε less the error bound where the rows meet it, else None
Confidences = list[float | None]
# the search's pick for a strategy: (s, t, targeted, system-cost rise, t limit, requests to check exactly)
Guess = tuple[Strategy, float, np.ndarray, float, float, np.ndarray]
NoiseFor = Callable[[Query], NoiseMechanism]  # the noise family a row on a query is answered with

_LOWER_TRY = 60  # batches up to this size also try the exact check a little below the search's scale


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


def _joint(
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


def plan_batch(
    history: History,
    requests: Sequence[Request],
    settings: Settings | float,
    *,
    cell_costs: np.ndarray | None = None,
    family: Any = None,
    ordered: Sequence[bool] | None = None,
    method: str = "fft",
    releases: Sequence[tuple[int, Any]] = (),
    strategies: Sequence[Strategy] | None = None,
    progress: Callable[[float], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> BatchPlan:
    """Plan the release that answers the most of ``requests`` at the smallest rise of the system cost.

    Parameters
    ----------
    history, cell_costs
        What has been released (rows: queries and budgets) and the ledger's per-cell costs (default:
        the history's own).
    requests
        The batch, in queue order (one-by-one answering follows it); each with its own (ε, δ).
    settings
        The curator's rules (total budget, spend policy, fusion); a number is the total budget.
    family
        Noise family of the measurements (default: the registry's preferred family for each row).
    ordered
        Per axis, whether its positions are ordered (numeric bins): range trees are tried on those.
    method
        Posterior method of the exact check (``mc`` is replaced by ``fft``: a plan must be reproducible).
    strategies
        Candidate strategies (default: :func:`~dpdesk.engine.planning.strategies.candidate_strategies`).

    Returns
    -------
    BatchPlan
        Measurements (possibly none), each request's status, the candidates tried and the one-by-one
        fallback. Nothing is drawn and no data is read.
    """
    t0 = time.perf_counter()
    if not isinstance(settings, Settings):
        settings = Settings(settings)
    check_method(method)
    method = "fft" if method == "mc" else method
    if not requests:
        raise DpdeskError("a batch plan needs at least one pending request")
    ids = [r.id for r in requests]
    if len(set(ids)) != len(ids):
        raise DpdeskError(
            "a batch lists request " + repr(next(i for i in ids if ids.count(i) > 1)) + " twice"
        )
    shape = history.shape
    costs0 = np.asarray(history.cell_costs if cell_costs is None else cell_costs, dtype=float)
    total = settings.total_budget
    sys0 = float(costs0.max()) if costs0.size else 0.0
    report = progress or (lambda f: None)

    def fam(q: Query) -> NoiseMechanism:
        return noise_family(family) if family is not None else family_for(q)

    # alone: each request against today's history (today's rules)
    alone: list[float | None] = []
    alone_alpha: list[float | None] = []  # what it spends on its cells alone (the system cost may not move)
    now_ok: list[bool] = []
    for k, r in enumerate(requests):
        if cancelled is not None and cancelled():
            raise Cancelled("batch planning cancelled")
        a = assess(
            history,
            r,
            settings,
            cell_costs=costs0,
            method=method,
            family=family,
            releases=releases,
            decision_only=True,
        )
        now_ok.append(a.decision == "infer")
        alone.append(
            0.0
            if a.decision == "infer"
            else (float(a.budget.system_cost_after or 0.0) - sys0 if a.decision == "spend" else None)
        )
        alone_alpha.append(
            0.0 if a.decision == "infer" else (float(a.spend_alpha) if a.decision == "spend" else None)
        )
        report(0.25 * (k + 1) / len(requests))
    pending = [r for r, ok in zip(requests, now_ok) if not ok]
    checker = Checker(history, method, releases, cancelled)

    # today's rules, request after request (placeholder values: decisions do not read them)
    seq_hist = History(shape, rows=list(history.rows))
    seq_costs = costs0.copy()
    seq_rows: list[Measurement] = []
    seq_ok: list[bool] = []
    seq_margin: list[float] = []  # how far each cleared its (ε, δ) at its turn: the closest are checked first
    seq_row_of: dict[int, int] = {}  # pending index -> its own measurement in seq_rows
    for k, r in enumerate(pending):
        a = assess(
            seq_hist,
            r,
            settings,
            cell_costs=seq_costs,
            method=method,
            family=family,
            releases=releases,
            decision_only=True,
        )
        seq_ok.append(a.decision != "reject")
        seq_margin.append(_margin(a))
        if a.decision == "spend":
            m = Measurement(r.query, float(a.spend_alpha), a.noise.name)
            seq_row_of[k] = len(seq_rows)
            seq_rows.append(m)
            seq_hist.append(HistoryRow(m.query, m.alpha, 0.0, m.family))
            seq_costs = seq_costs + m.charge.dense(seq_costs.size)
    # one by one answers at most the requests it did not refuse at their turn (only those are checked on
    # its final history): that bound and its cost decide whether its own exact check is needed at all
    obo_bound = sum(seq_ok)
    obo_cost = float(seq_costs.max()) if seq_costs.size else 0.0
    obo_conf: list[float | None] | None = None
    report(0.5)

    def score(rows: Sequence[Measurement], conf: Confidences) -> Score:
        after = costs_after(costs0, rows)
        return sum(c is not None for c in conf), (float(after.max()) if after.size else 0.0), after

    checked: list[tuple[Score, str, list[Measurement], Confidences | None]] = []
    if pending:
        if strategies is None:
            weights = [fam(r.query).alpha_for(r.query.sensitivity, r.eps, r.delta) for r in pending]
            strategies = candidate_strategies([r.query for r in pending], weights, ordered=ordered)
        room = total - costs0
        guesses = [g for g in (_predict(s, pending, room, settings) for s in strategies) if g is not None]
        joint = _joint(pending, room, settings, fam)
        if joint is not None:
            guesses.append(joint)
        # the exact check (a history with the rows, every request's exact posterior) for the most
        # promising strategies by the search's reckoning, and only if they may beat one by one
        guesses.sort(key=lambda g: (-int(g[2].sum()), g[3]))
        exact = _EXACT if len(pending) <= _LOWER_TRY else 1
        tried: set[int] = set()

        def check_beating(n_ref: int, cost_ref: float, ties: bool = False) -> None:
            for k, g in enumerate(guesses):
                if len(tried) >= exact:
                    return
                n_g = int(g[2].sum())
                if k in tried or not (
                    _beats(n_g, _rise(g, costs0), n_ref, cost_ref) or (ties and n_g >= n_ref)
                ):
                    continue
                tried.add(k)
                s, t, target, _cost, t_lim, maybe = g
                rows, conf = _exact(
                    s, t, target, t_lim, pending, checker, fam, maybe, lower=len(pending) <= _LOWER_TRY
                )
                checked.append((score(rows, conf), s.name, rows, conf))
                report(0.5 + 0.4 * len(tried) / exact)

        # strategies the search expects to answer as many as one by one could at most are checked first:
        # one by one's own check then stops as soon as it cannot beat them
        check_beating(obo_bound, obo_cost, ties=True)
        top = max((c[0] for c in checked), key=lambda sc: (sc[0], -sc[1]), default=None)
        if top is None or not _beats(top[0], top[1], obo_bound, obo_cost):
            # one by one may still win (a tie goes to it): it keeps at least `need` requests or loses
            need = top[0] + (1 if obo_cost > top[1] else 0) if top is not None else 0
            order = np.argsort(seq_margin)
            obo_conf, complete = checker.checked(
                seq_hist, pending, seq_ok, order=order, allowed_misses=obo_bound - need
            )
            short = [
                k
                for k in _misses(obo_conf, seq_ok, order, None if complete else obo_bound - need)
                if k in seq_row_of
            ]
            bound = None  # set when one by one's topped-up rows are left unchecked: what they answer at most
            if short and not complete:
                # more short than one by one can afford: if raising their own rows does not meet enough of
                # them, one by one has lost whatever the rest of its history answers
                probe = _probe(seq_rows, seq_row_of, short, pending, checker, costs0, total)
                if probe is not None:
                    p_costs = costs_after(costs0, probe[0])
                    p_cost, p_bound = float(p_costs.max()), obo_bound - probe[1]
                    if _settled(top, p_bound, p_cost, len(tried) >= exact):
                        seq_rows, seq_costs, obo_cost, bound, short = probe[0], p_costs, p_cost, p_bound, []
            if (
                short
            ):  # borderline fused answers: their own rows raised a little until the final history meets them
                seq_rows, obo_conf, last, hist = _top_up(
                    seq_rows, seq_row_of, seq_ok, short, obo_conf, pending, checker, costs0, total
                )
                seq_costs = costs_after(costs0, seq_rows)
                obo_cost = float(seq_costs.max()) if seq_costs.size else 0.0
                if hist is not None:
                    assert last is not None  # a step was taken: its check and its history come together
                    # the last raise's check asked its requests of these very rows: its misses are misses
                    bound = obo_bound - sum(1 for k in np.flatnonzero(last) if obo_conf[k] is None)
                    if not _settled(top, bound, obo_cost, len(tried) >= exact):
                        obo_conf, complete, bound = (
                            _confirm(obo_conf, last, hist, seq_ok, pending, checker),
                            True,
                            None,
                        )
            if (
                bound is not None
            ):  # a checked strategy beats even that bound: the full check could not change the plan
                obo_bound, obo_conf = bound, None
            elif complete:
                check_beating(sum(c is not None for c in obo_conf), obo_cost)
            else:
                obo_bound, obo_conf = need - 1, None
    if obo_conf is None and not pending:
        obo_conf = []
    report(0.9)
    obo_score = score(seq_rows, obo_conf) if obo_conf is not None else (obo_bound, obo_cost, seq_costs)
    results = [(obo_score, "one by one", seq_rows, obo_conf)] + checked
    cands = tuple(
        Candidate(name, sc[0], sc[1], len(rows), conf is not None) for sc, name, rows, conf in results
    )
    (best_n, _best_cost, after), name, rows, conf = max(
        (r for r in results if r[3] is not None), key=lambda r: (r[0][0], -r[0][1], r[1] == "one by one")
    )
    if best_n == 0:
        name, rows, after = "none", [], costs0.copy()
    final = checker.history_with(rows)
    assert conf is not None  # only checked candidates compete
    by_id = {r.id: c for r, c in zip(pending, conf)} if best_n else {}
    out: list[PlannedRequest] = []
    n_uncovered = sum(1 for r, ok in zip(requests, now_ok) if not ok and by_id.get(r.id) is None)
    for r, ok, al, aa in zip(requests, now_ok, alone, alone_alpha):
        if ok:
            out.append(
                PlannedRequest(
                    r, "answerable", al, None, reason="answerable from history now (costs 0)", alone_alpha=aa
                )
            )
            continue
        c = by_id.get(r.id)
        if c is not None:
            out.append(
                PlannedRequest(
                    r,
                    "planned",
                    al,
                    c,
                    reason=f"answerable from history after the plan ({name})",
                    alone_alpha=aa,
                )
            )
            continue
        out.append(
            replace(
                uncovered(r, al, final, after, total, fam, method, releases, free=n_uncovered <= FREE_LIMIT),
                alone_alpha=aa,
            )
        )
    after.setflags(write=False)
    return BatchPlan(
        name,
        tuple(rows),
        tuple(out),
        total,
        sys0,
        float(after.max()) if after.size else 0.0,
        cands[0],
        cands,
        after,
        (time.perf_counter() - t0) * 1000.0,
    )


def _predict(s: Strategy, pending: Sequence[Request], room: np.ndarray, settings: Settings) -> Guess | None:
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


def _margin(a: Any) -> float:
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


def _rise(guess: Guess, costs0: np.ndarray) -> float:
    """The system cost after a guessed strategy at its scale."""
    s, t = guess[0], guess[1]
    return float(np.max(costs0 + t * s.profile))


def _exact(
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
