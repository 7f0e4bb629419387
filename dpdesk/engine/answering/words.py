"""The count kind in words: what ``dpdesk assess`` prints of an assessment, and the counter-offer lines
when watched claims decline a request. The command line prints them; the app has its own panel."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from dpdesk.engine.answering.rounding import format_interval, format_value
from dpdesk.engine.answering.workflow import alpha_words

if TYPE_CHECKING:
    from dpdesk.engine.answering.assessment import Assessment
    from dpdesk.engine.answering.counteroffer import CounterOffer
    from dpdesk.engine.budget.accounting import BudgetPreview
    from dpdesk.engine.kinds.settings import Settings

__all__ = ["assessment_lines", "budget_words", "offer_lines"]


def assessment_lines(a: Assessment, declined: Sequence[str] = ()) -> list[str]:
    """An assessment in words: the request, what history says, the decision, the price and the budget."""
    r = a.request
    q = r.query.text or f"query with {len(r.query.sparse()[0])} nonzero coefficients"
    lines = [f"request {r.id}: {q}   ε = {r.eps:g}, δ = {r.delta:g}"]
    est = a.estimate
    if est.estimable:
        where = (
            f"{est.history_size} history rows, {est.form} form"
            if a.inference.source is None
            else f"from {a.inference.served_by}'s {est.history_size} counts"
        )
        counts = r.query.is_integer  # a count is shown as an integer, as its release would be
        lines.append(f"  estimate        {format_value(est.estimate, counts)}  (std {est.std:.4g}; {where})")
        lo, hi = a.interval if a.interval is not None else (float("nan"), float("nan"))
        lines.append(
            f"  {100 * (1 - r.delta):g}% interval    {format_interval(lo, hi, counts)}  "
            f"(mass {a.interval_confidence:.6f})"
        )
        lines.append(f"  confidence ±ε   {a.confidence_at_eps:.6f}")
        asked = f", asked for {a.requested_method}" if a.method != a.requested_method else ""
        lines.append(f"  computed by     {a.method} (error ≤ {a.error_bound:.1e}{asked})")
        if a.interval_query is not None:
            lines.append(
                f"  Pr(θ in [{a.interval_query[0]:g}, {a.interval_query[1]:g}])  {a.interval_probability:.6f}"
            )
        if a.prior != "flat":
            lo, hi = a.release_interval
            lines.append(
                f"  prior           {a.prior} (known bounds; released window trimmed to "
                f"{format_interval(lo, hi, counts, a.release_estimate)})"
            )
    else:
        lines.append(f"  not estimable from the {est.history_size} released answers")
        if est.history_size and r.query.text:  # issue 17: offer the zero-cost (biased) estimate from them
            lines.append(
                f"  zero-cost       a biased estimate from them, meeting no (ε, δ): "
                f"dpdesk assess PROJECT --query 'estimate({r.query.text})'"
            )
    b = a.budget
    if declined and a.decision == "spend":  # watched claims decline the fresh answer: that is the decision
        lines.append(
            f"  decision        DECLINED BY CLAIM {', '.join(declined)}: a fresh answer would spend more of "
            f"the claim's risk than it has left (without the claims: {a.reason})"
        )
    else:
        lines.append(f"  decision        {a.decision.upper()}: {a.reason}")
    fused = (
        f", fused with history (alone it would need {alpha_words(a.noise, a.fresh_alpha, 6)})"
        if a.spend_alpha < a.fresh_alpha
        else ""
    )
    lines.append(f"  fresh answer    {alpha_words(a.noise, a.spend_alpha, 6)} ({a.noise.label} noise{fused})")
    if a.headroom is not None:
        lines.append(
            f"  spend policy    {a.policy}: the request alone needs α = {a.needed_alpha:.6g}; "
            f"its cells can still pay α = {a.headroom:.6g}"
        )
    lines.append(f"  system cost     {budget_words(a.settings, b)}")
    return lines


def budget_words(settings: Settings, b: BudgetPreview) -> str:
    """The system cost now (and after, if spent) of the total, as the privacy loss ε it states: under
    zCDP the largest cell's ρ converted at the project's δ, naming the conversion."""
    acc = settings.accounting
    if acc is None:
        after = f" → {b.system_cost_after:.6g} if spent" if b.system_cost_after is not None else ""
        return f"{b.system_cost:.6g}{after}   of total {b.total:g} (remaining {b.remaining:.6g})"
    after = (
        f" → {acc.epsilon_of(b.system_cost_after):.6g} if spent" if b.system_cost_after is not None else ""
    )
    return (
        f"ε = {acc.epsilon_of(b.system_cost):.6g}{after}   of total ε = {acc.epsilon:g} at δ = {acc.delta:g} "
        f"(largest cell's ρ = {b.system_cost:.6g} of {b.total:.6g}; {acc.conversion} conversion)"
    )


def offer_lines(offer: CounterOffer, a: Assessment, path: str) -> list[str]:
    """The counter-offer lines for a request watched claims decline: each offer with the edit that
    accepts it (then ``dpdesk answer`` assesses, confirms and releases as usual)."""
    r = a.request
    lines = []
    if offer.eps is not None:
        lines.append(
            f"  counter-offer   a fresh answer at α = {offer.alpha:.4g} (the largest α that passes the claims "
            "and fits the cells' budget) "
            f"is within ±{offer.eps:g} at δ = {offer.delta:g}, not the ±{r.eps:g} asked: "
            f"dpdesk requests edit {path} --request {r.id} --eps {offer.eps:g}"
        )
    if offer.free_delta is not None:
        lines.append(
            f"  counter-offer   free from history: ±{r.eps:g} at {offer.free_confidence:.4g} confidence: "
            f"dpdesk requests edit {path} --request {r.id} --delta {offer.free_delta:g}"
        )
    return lines or [
        "  counter-offer   none: no fresh answer passes the claims and history does not estimate it"
    ]
