"""The answering workflow of paper Fig. 4 as a pipeline: infer → price → decide.

:func:`assess` looks only at public quantities — the released history, the per-cell costs, the
request's accuracy requirement and the curator's :class:`~dpdesk.engine.answering.request.Settings` —
never at the data, and draws no noise. Its three steps are public functions:

1. :func:`infer` — what history says: the BLUE, its posterior, the credible interval and the mass of
   the window an inferred answer would release;
2. :func:`price` — what a fresh answer costs: Thm 5.3's α, the smaller α of a fresh answer fused with
   history (:func:`~dpdesk.engine.inference.fusion.plan_fusion`), the spend policy's pacing, and the
   budget before and after;
3. :func:`decide` — *infer* if the inference meets (ε, δ), else *spend* if the budget allows, else
   *reject*, with a one-line reason.

The result is an immutable :class:`~dpdesk.engine.answering.assessment.Assessment` that records what
it was computed from (ledger head, settings, method, seed) and that the store releases as it is.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from dpdesk.engine.answering.assessment import Assessment, Decision, Inference, Pricing
from dpdesk.engine.answering.request import Request, Settings
from dpdesk.engine.budget.accounting import preview
from dpdesk.engine.budget.person import ROW_RULE, PersonRule, person_rule
from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.inference.fusion import FusionPlan, fused_confidence, fusion_weight, plan_fusion
from dpdesk.engine.inference.history import History
from dpdesk.engine.inference.posterior import Posterior, posterior
from dpdesk.engine.inference.prior import BoundedPrior, clip_estimate, clip_interval
from dpdesk.engine.inference.structured import best_answer, prefer
from dpdesk.engine.mechanisms.base import Basis, meets
from dpdesk.engine.mechanisms.laplace import NoiseMechanism
from dpdesk.engine.mechanisms.noise import NoiseFamily
from dpdesk.engine.mechanisms.registry import check_method, family_for, noise_family
from dpdesk.engine.schema import Schema

__all__ = ["Request", "Settings", "answerable", "assess", "decide", "infer", "price"]


def _fmt(x: float) -> str:
    return f"{x:.4g}"


def infer(
    history: History,
    request: Request,
    prior: BoundedPrior | None = None,
    *,
    method: str = "fft",
    seed: int | None = None,
    interval: tuple[float, float] | None = None,
    releases: Sequence[tuple[int, Any]] = (),
    progress: Callable[[float], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
    decision_only: bool = False,
) -> Inference:
    """What ``history`` says about the request's answer (paper §3–§4), with ``prior`` if declared.

    The released window is ``[θ̂ − ε, θ̂ + ε]``; its mass is computed to the posterior's stated
    ``error_bound`` (a lower bound off the grid). Under ``BoundedPrior(N)`` the released window, the
    credible interval and θ̂ are trimmed to the query's bounds: the truth lies within them, so trimming
    keeps the coverage at every fixed table (:mod:`dpdesk.engine.inference.prior`); the confidence and
    the decision stay the flat prior's.

    ``releases`` are partition releases kept out of the history (with their ledger entries): when one
    of them estimates the query with more flat-prior mass on ±ε than history does, its estimate and
    exact law are served instead (:mod:`dpdesk.engine.inference.structured`; the choice reads laws only).

    ``decision_only=True`` leaves out what only the curator's view needs: the credible interval
    (``None``) and the drawing of a posterior read from a bracketed law (its bins); every probability a
    decision reads is the same. A batch plan checks hundreds of requests this way.
    """
    q = request.query
    est = history.estimate(q)
    bounds = prior.bounds(q) if prior is not None else None
    described = "flat" if prior is None else prior.describe(q)
    flat: Posterior | None = None
    if est.estimable:
        assert est.estimate is not None and est.coefficients is not None and est.noise_scales is not None
        flat = posterior(
            est.estimate,
            est.coefficients,
            est.noise_scales,
            list(est.families),
            method=method,
            rng=seed,
            progress=progress,
            cancelled=cancelled,
            align=request.eps,
            draw=not decision_only,
        )
    served, source = est, None
    if releases:
        answer = best_answer(releases, q, request.eps)
        if prefer(None if flat is None else flat.central_mass(request.eps), answer):
            assert answer is not None
            served, flat, source = answer.estimate, answer.posterior, answer.source
    if flat is None:
        return Inference(est, prior=described, prior_bounds=bounds, interval_query=interval)
    assert served.estimate is not None
    post = flat
    conf = post.central_mass(request.eps)
    release_est, release_iv, credible_iv = _windows(served.estimate, post, request, bounds, decision_only)
    return Inference(
        served,
        post,
        credible_iv,
        conf,
        release_est,
        release_iv,
        described,
        bounds,
        interval,
        post.prob_between(*interval) if interval is not None else None,
        source,
        est if source is not None else None,
    )


def _windows(
    estimate: float, post: Posterior, request: Request, bounds: Any, decision_only: bool
) -> tuple[float, tuple[float, float], Any]:
    """The released estimate and window ``θ̂ ± ε`` and the credible interval (None for decisions only),
    trimmed to the prior's bounds when it has some: the truth lies within them, so trimming a window to
    them keeps its coverage."""
    release_iv, release_est = (estimate - request.eps, estimate + request.eps), estimate
    credible_iv = None if decision_only else post.interval(request.delta)
    if bounds is not None:
        release_iv, release_est = clip_interval(*release_iv, bounds), clip_estimate(release_est, bounds)
        if credible_iv is not None:
            trimmed = clip_interval(credible_iv.low, credible_iv.high, bounds)
            credible_iv = replace(credible_iv, **dict(zip(("low", "high"), trimmed)))
    return release_est, release_iv, credible_iv


def answerable(inference: Inference, request: Request) -> bool:
    """Whether history meets (ε, δ): the confidence at ε, less the posterior's error bound, is ≥ 1 − δ."""
    conf = inference.confidence_at_eps
    return conf is not None and meets(conf - inference.error_bound, request.delta)


def price(
    inference: Inference,
    request: Request,
    settings: Settings,
    cell_costs: np.ndarray,
    *,
    family: NoiseFamily | None = None,
    method: str = "fft",
    rule: PersonRule = ROW_RULE,
) -> Pricing:
    """What a fresh answer to ``request`` costs given history's ``inference`` and the ``cell_costs``.

    Thm 5.3's α for the noise family; with ``settings.fusion`` the smallest α whose answer fused with
    history's BLUE meets (ε, δ) (never above Thm 5.3's); under ``settings.policy`` at least ``floor`` of
    the query's headroom (kept fused when the fused posterior still meets (ε, δ) at the raised α).
    The budget figures are one person's loss under ``rule`` (:mod:`~dpdesk.engine.budget.person`); the
    policy's headroom is a cell's room in ``total / k`` (a person's ``k`` rows in one cell), which never
    lets a person pass the total.
    """
    q, est = request.query, inference.history_estimate  # fresh answers fuse with history's BLUE
    noise = family_for(q, settings.measure) if family is None else noise_family(family)
    alpha = noise.alpha_for(q.sensitivity, request.eps, request.delta)
    # the α search evaluates many posteriors and must be deterministic: Monte Carlo is not used for it
    search = "fft" if method == "mc" else method
    plan: FusionPlan | None = None
    spend, weight, fconf = alpha, None, None
    infer_ok = answerable(inference, request)
    if settings.fusion and est.estimable and not infer_ok:
        # public quantities only: history's A, scales, families and the requirement (flat prior always)
        plan = plan_fusion(est, q.sensitivity, request.eps, request.delta, noise, method=search)
        spend = min(plan.alpha, alpha)
        if plan.fused and spend < alpha:
            weight, fconf = plan.weight, plan.confidence
    needed = spend
    paced = None
    if settings.policy is not None and not infer_ok and settings.accounting is None:  # (α headroom: pure ε)
        paced = settings.policy.apply(q, spend, cell_costs, settings.total_budget / rule.k)
        if paced.raised:
            raised: float | None = paced.alpha
            w_r = c_r = None
            if settings.fusion and est.estimable and est.variance:
                # fusing is the BLUE; keep it when its posterior still meets (ε, δ) at the raised α
                c = fused_confidence(est, paced.alpha, q.sensitivity, noise, request.eps, method=search)
                if meets(c, request.delta):
                    w_r, c_r = (
                        fusion_weight(est.variance, noise.variance(noise.scale(q.sensitivity, paced.alpha))),
                        c,
                    )
            if w_r is None and paced.alpha < alpha:
                # a plain answer meets (ε, δ) alone only from Thm 5.3's α; if that does not fit, keep the plan
                raised = alpha if alpha <= paced.headroom else None
            if raised is not None:
                spend, weight, fconf = raised, w_r, c_r
    charge = noise.charge_for(q, spend)
    return Pricing(
        noise,
        alpha,
        spend,
        needed,
        preview(cell_costs, settings.total_budget, charge, settings.accounting, rule),
        cell_costs,
        charge,
        plan,
        paced,
        weight,
        fconf,
        rule.k,
    )


def decide(
    inference: Inference, pricing: Pricing, request: Request, settings: Settings, schema: Schema | None = None
) -> tuple[Decision, str]:
    """Paper Fig. 4: *infer* when history meets (ε, δ), else *spend* when the budget (and the spend
    policy) allow, else *reject* naming the cell that would overflow. Returns the decision and why."""
    conf, delta, eps = inference.confidence_at_eps, request.delta, request.eps
    b, paced = pricing.budget, pricing.pacing

    note = _bound_note(inference.error_bound)
    if answerable(inference, request):
        return "infer", (
            f"answerable from {inference.served_by} — costs 0 (confidence {conf:.4f}{note} ≥ "
            f"{1 - delta:.4f} at ±{_fmt(eps)})"
        )
    needed, spend, fused = pricing.needed_alpha, pricing.spend_alpha, pricing.fusion_weight is not None
    if paced is not None and paced.declined and b.fits:
        assert settings.policy is not None
        return "reject", (
            f"declined by the spend policy — needs ε = {_fmt(needed)}, {needed / paced.headroom:.0%} of what "
            f"its cells can still pay (ε ≤ {_fmt(paced.headroom)}, limited by "
            f"{_tightest(request, pricing.cell_costs, settings.total_budget, paced, schema)}); the policy declines "
            f"requests over {settings.policy.cap:.0%}"
        )
    if b.fits:
        why = (
            "not estimable from history"
            if not inference.estimate.estimable
            else f"{inference.served_by} reaches only {conf:.4f}{note} < {1 - delta:.4f} at ±{_fmt(eps)}"
        )
        if paced is not None and spend > needed:
            assert settings.policy is not None
            cost = (
                f"costs ε = {_fmt(spend)} (spend policy: at least {settings.policy.floor:.0%} of the headroom "
                f"{_fmt(paced.headroom)}; the request alone needs {_fmt(needed)}{', fused with history' if fused else ''})"
            )
        elif fused:
            cost = (
                f"costs {alpha_words(pricing.noise, spend)} instead of "
                f"{alpha_words(pricing.noise, pricing.fresh_alpha)} thanks to history"
            )
        else:
            cost = f"costs {alpha_words(pricing.noise, pricing.fresh_alpha)}"
        return "spend", (
            f"needs a fresh answer — {cost}; system cost "
            f"{_fmt(settings.shown(b.system_cost))} → {_fmt(settings.shown(b.system_cost_after or 0.0))} ({why})"
        )
    cheaper = f" even at {alpha_words(pricing.noise, spend)} (fused with history)" if fused else ""
    over = _overflowing(b, settings.total_budget, schema)
    return "reject", (
        f"cannot answer — would exceed the total budget {over}{cheaper} "
        f"({_fmt(settings.shown(b.system_cost_after or 0.0))} > {_fmt(settings.total_shown)}"
        f"{'' if settings.accounting is None else f' at δ = {settings.accounting.delta:g}'})"
    )


def alpha_words(noise: NoiseMechanism, alpha: float, digits: int = 4) -> str:
    """What a fresh answer at ``alpha`` costs, in its family's measure: ``α = 0.3`` (pure ε) or
    ``ρ = 0.045`` (Gaussian noise, ``ρ = α²/2`` where ``|Q_j| = S``)."""
    return noise.cost_words(alpha, digits)


def _name_cells(cells: np.ndarray, schema: Schema | None) -> str:
    """Cells named together: ``cell X``, ``all N cells of count(...)`` when they form a box of labels,
    or ``N cells: X; Y; Z; … +k more``."""
    if cells.size == 1 or schema is None:
        first = schema.describe_cell(int(cells[0])) if schema is not None else f"#{int(cells[0])}"
        return f"cell {first}" + (f" and {cells.size - 1} more cells" if cells.size > 1 else "")
    from dpdesk.engine.queries.query import query_from_json
    from dpdesk.engine.queries.text import describe_query

    picked = query_from_json(
        {"indices": cells.tolist(), "values": [1] * cells.size}, schema.n_cells, schema.shape
    )
    text = describe_query(picked, schema)
    if text.startswith("weight 1 on "):  # no box of labels: its cells, the first few named
        return text.removeprefix("weight 1 on ")
    return f"all {cells.size} cells of {text}"


def _overflowing(b: Any, total: float, schema: Schema | None) -> str:
    """Where a release would overspend: every cell whose cost would pass the total, named together —
    never one cell picked among equals (a first request's cells all tie) — and the one that passes
    furthest when it is alone."""
    after = b.cell_costs_after
    cells = np.flatnonzero(after > total) if after is not None else np.array([], dtype=np.int64)
    if cells.size == 0:
        return f"in cell {schema.describe_cell(b.limiting_cell) if schema is not None else f'#{b.limiting_cell}'}"
    out = f"in {_name_cells(cells, schema)}"
    top = after[cells]
    if cells.size > 1 and schema is not None and np.count_nonzero(top == top.max()) == 1:
        out += f", most in cell {schema.describe_cell(int(cells[np.argmax(top)]))}"
    return out


def _tightest(
    request: Request, cell_costs: np.ndarray, total: float, paced: Any, schema: Schema | None
) -> str:
    """The cells whose room limits a request's headroom (``policy.headroom``), every tied one named."""
    from dpdesk.engine.queries.algebra import abs_dense

    q = request.query
    share = abs_dense(q) / q.sensitivity
    touched = np.flatnonzero(share > 0)
    room = np.maximum(total - np.asarray(cell_costs, dtype=float)[touched], 0.0) / share[touched]
    tied = touched[room <= room.min() * (1 + 1e-9) + 1e-15]
    return _name_cells(tied, schema) if tied.size else f"cell #{paced.limiting_cell}"


def _bound_note(err: float) -> str:
    """`` ± bound`` when the error bound shows at four decimals, else nothing."""
    return f" ± {err:.1e}" if err >= 5e-5 else ""


def _seed(method: str, seed: int | None) -> int | None:
    """Monte Carlo's seed, drawn when not given (recorded: the assessment can be reproduced); None for
    the other methods."""
    check_method(method)
    if method != "mc":
        return None
    if seed is not None:
        return seed
    entropy = np.random.SeedSequence().entropy  # an int when the sequence draws it itself
    assert isinstance(entropy, int)
    return entropy


def _interval(interval: tuple[float, float] | None) -> tuple[float, float] | None:
    if interval is None:
        return None
    lo, hi = float(interval[0]), float(interval[1])
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
        raise DpdeskError(f"interval [{interval[0]}, {interval[1]}] must be finite with L ≤ U")
    return (lo, hi)


def assess(
    history: History,
    request: Request,
    settings: Settings | float,
    *,
    method: str = "fft",
    seed: int | None = None,
    family: NoiseFamily | None = None,
    interval: tuple[float, float] | None = None,
    cell_costs: np.ndarray | None = None,
    head: tuple[int, str] | None = None,
    schema: Schema | None = None,
    releases: Sequence[tuple[int, Any]] = (),
    progress: Callable[[float], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
    decision_only: bool = False,
    rule: PersonRule | None = None,
) -> Assessment:
    """Assess ``request`` against ``history`` (paper Fig. 4, DESIGN §1–§2): infer → price → decide.

    Parameters
    ----------
    settings : Settings or float
        The curator's rules; a number is the total budget with the defaults (greedy spending, flat
        prior, fusion).
    method, seed
        Posterior method (see :data:`~dpdesk.engine.mechanisms.registry.POSTERIOR_METHODS`) and, for
        ``mc``, the seed of its randomness (drawn and recorded when not given; not privacy-relevant).
    family
        Noise family of a fresh answer (default: the registry's preferred family for the query).
    interval
        Also report the posterior mass of ``[L, U]``.
    cell_costs, head
        The ledger's per-cell costs (default: the history's own) and its head ``(seq, hash)``, which the
        assessment records so that a release is refused once the ledger moved.
    schema
        Names cells in the reasons. ``progress``/``cancelled`` drive long posteriors.
    rule
        How per-cell costs add up to one person's loss (default: the schema's privacy unit's; one row is
        one person without a schema).
    releases
        Partition releases kept out of ``history`` (too many rows), each with its ledger entry: the
        better-placed of history's and their estimates is served (see :func:`infer`).
    decision_only
        True leaves the inference's credible interval and drawing out (see :func:`infer`): for callers
        that read only the decision and the price (the batch planner), never for one to be released.

    Nothing here reads the data or draws privacy noise.
    """
    t0 = time.perf_counter()
    if not isinstance(settings, Settings):
        settings = Settings(settings)
    seed = _seed(method, seed)
    interval = _interval(interval)
    costs = history.cell_costs if cell_costs is None else cell_costs
    inference = infer(
        history,
        request,
        settings.prior,
        method=method,
        seed=seed,
        interval=interval,
        releases=releases,
        progress=progress,
        cancelled=cancelled,
        decision_only=decision_only,
    )
    if rule is None:
        rule = person_rule(schema) if schema is not None else ROW_RULE
    pricing = price(inference, request, settings, costs, family=family, method=method, rule=rule)
    decision, reason = decide(inference, pricing, request, settings, schema)
    seq, head_hash = head if head is not None else (0, None)
    basis = Basis(head_hash, seq, settings.to_json(), method, seed)
    ms = (time.perf_counter() - t0) * 1000.0
    return Assessment(request, inference, pricing, decision, reason, settings, basis, ms, schema)
