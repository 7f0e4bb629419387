"""What the answer panel says, as text: an assessment's fields, a decided request's outcome, the badges.

Pure functions of the engine's :class:`~dpdesk.engine.answering.assessment.Assessment` and the ledger's
entries (no widgets), so the words shown for an assessment are written in one place. Every released
count is shown through :mod:`dpdesk.engine.answering.rounding`, as everywhere else.
"""

from __future__ import annotations

from dpdesk.engine.answering.rounding import format_interval, format_value
from dpdesk.engine.vocabulary import confidence_text

# a decided request's posterior fields are history's now (which includes the release), not the release's
DECIDED_LABELS = {
    "estimate": "History's estimate now",
    "interval": "History's credible interval now",
    "conf_eps": "History's confidence at ±a now",
}
# the assessment's figures: (key, label, glossary terms of the label's tooltip)
FIELDS = (
    ("estimate", "Estimate θ̂ (releasable)", ("inferred",)),
    ("prior", "Prior", ("bounds",)),
    ("interval", "Credible interval", ("credible", "coverage", "confidence_level")),
    ("conf_eps", "Confidence at ±a", ("confidence", "accuracy")),
    ("method", "Computed by", ("error_bound", "exact")),
    ("fresh", "Fresh answer would cost", ("fresh", "epsilon", "fusion")),
    ("cost", "System cost now → after", ("system_cost", "cell_cost")),
    ("status", "Status", ()),
)

DECISION_STYLE = {
    "infer": ("ANSWERABLE FROM HISTORY", "#237a36"),
    "spend": ("NEEDS A FRESH ANSWER", "#1f5fa8"),
    "reject": ("CANNOT ANSWER", "#a8321f"),
}
# an answered or rejected request shows what the ledger recorded, never a live decision
OUTCOME_STYLE = {
    "fresh": ("ANSWERED — FRESH", "#4a4a4a"),
    "inferred": ("ANSWERED FROM HISTORY", "#4a4a4a"),
    "rejected": ("REJECTED", "#7a7a7a"),
    "mean": ("ANSWERED — FRESH", "#4a4a4a"),
    "mean-inferred": ("ANSWERED FROM HISTORY", "#4a4a4a"),
}


def _num(x: float | None, digits: int = 6) -> str:
    return "—" if x is None else f"{x:.{digits}g}"


METHOD_WORDS = {
    "fft": "characteristic function, binned (fft)",
    "lattice": "exact lattice transform",
    "atoms": "exact enumeration of the noise atoms",
    "bandlimited": "characteristic function with Beurling–Selberg bounds",
    "direct": "direct convolution of the noise terms",
    "mc": "Monte Carlo, sampled: the bound holds with probability 0.999",
}


def _bound(err: float | None) -> str:
    return "" if err is None else f" ± {err:.1e}"


def method_text(a) -> str:
    """What computed the posterior, the bound it states, and what was asked for when that differs."""
    if a.method is None:
        return "— (no posterior: not estimable from history)"
    text = f"{METHOD_WORDS.get(a.method, a.method)}; error ≤ {a.error_bound:.1e}"
    if a.method != a.requested_method:
        text += f" (asked for {a.requested_method})"
    return text


def unchanged_note(a) -> str:
    """Why a fresh spend leaves the remaining budget where it is (empty when it does not)."""
    if a is None or a.spend_alpha <= 0 or a.budget.system_cost_after > a.budget.system_cost:
        return ""
    return (
        ". The remaining budget does not change: this query's cells stay at or below the most-spent cell, "
        "and the system cost is the largest per-cell cost (its own cells' costs do rise — see the heatmap)"
    )


def field_texts(a) -> dict[str, str]:
    """The answer panel's fields for assessment ``a``: estimate, prior, interval, conf_eps, method, fresh, cost."""
    est = a.estimate.estimate
    counts = a.request.query.is_integer  # a count: shown as an integer, as its release would be
    prior = "flat" if a.prior == "flat" else f"known bounds: {a.prior.removeprefix('bounded ')}"
    if a.prior != "flat" and a.release_interval is not None:
        prior += (
            f"; an inferred answer releases {format_value(a.release_estimate, counts)} in "
            f"{format_interval(*a.release_interval, counts, a.release_estimate)} (θ̂ ± {a.request.eps:g} trimmed to the bounds)"
        )
    alpha = a.spend_alpha
    fused = (
        f", fused with history; alone it would need ε = {a.fresh_alpha:.6g}" if alpha < a.fresh_alpha else ""
    )
    if a.needed_alpha is not None and alpha > a.needed_alpha:
        fused = f", raised by the spend policy from the ε = {a.needed_alpha:.6g} the request needs"
    b = a.budget
    return {
        "estimate": (
            "not estimable from history"
            if est is None
            else f"{format_value(est, counts)}   (std {_num(a.estimate.std, 4)})"
        ),
        "prior": prior,
        "interval": (
            "—"
            if a.interval is None
            else f"{format_interval(a.interval[0], a.interval[1], counts)} — confidence {a.interval_confidence:.6f}"
            f"{_bound(a.error_bound)} (asked {confidence_text(a.request.delta)})"
        ),
        "conf_eps": (
            "—"
            if a.confidence_at_eps is None
            else f"{a.confidence_at_eps:.6f}{_bound(a.error_bound)} on [θ̂−{a.request.eps:g}, θ̂+{a.request.eps:g}]"
        ),
        "method": method_text(a),
        "fresh": f"{a.noise.cost_words(alpha, 6)} ({a.noise.label} noise, sensitivity {a.sensitivity:g}{fused})",
        "cost": (
            f"{b.system_cost:.6g} → {_num(b.system_cost_after)} if spent "
            f"(total {b.total:g}, remaining after {_num(b.remaining_after)}){unchanged_note(a)}"
            if b.accounting is None
            else f"{b.words()}{unchanged_note(a)}"
        ),
    }


def person_text(rule, b, decided: bool = False) -> str:
    """On a project whose people hold up to k > 1 rows: how a row's α adds up to one person's loss, the
    system cost, now and after a fresh answer (budget preview ``b``; the line the command line's previews
    print); empty when one row is one person. ``decided``: the request is answered, only the figure now."""
    if rule.rows_are_people:
        return ""
    text = (
        "Per person: ε is a row's price in each cell it charges; a person's rows add up — the system cost, "
        f"one person's privacy loss, is {rule.how()}"
    )
    if b is None:
        return text + "."
    after = b.system_cost if b.system_cost_after is None or decided else b.system_cost_after
    acc = b.accounting
    if acc is None:
        now, then, total = f"ε = {b.system_cost:.6g}", f"{after:.6g}", f"{b.total:g}"
    else:  # per-cell ρ: one person's ρ, stated as ε at the project's δ
        now, then = f"ε = {b.shown(b.system_cost):.6g}", f"{b.shown(after):.6g}"
        total = f"{acc.epsilon:g} at δ = {acc.delta:g}"
    if decided:
        return f"{text}: {now} now, of {total}."
    return f"{text}: {now} now → {then} after a fresh answer, of {total}."


def status_text(req, entry) -> str:
    """A request's status line; ``entry`` is the ledger entry that decided it (None while pending)."""
    if req.status == "pending":
        return "pending"
    if entry is None:
        return req.status
    p = entry.payload
    if entry.kind == "fresh":
        return (
            f"answered (fresh, ε = {float(p['alpha']):.4g}): released {entry.stated()} (ledger #{entry.seq})"
        )
    if entry.kind == "inferred":
        return f"answered from history (free): released {entry.stated()} (ledger #{entry.seq})"
    return f"rejected (ledger #{entry.seq})"


def sentence(text: str) -> str:
    """``text`` ending with one full stop (a note that ends with one already gets no second)."""
    text = str(text).strip()
    return text if text.endswith((".", "!", "?", "…")) else text + "."


def _when(entry) -> str:
    return entry.time[:19].replace("T", " ") + " UTC"


def outcome_text(entry) -> str:
    """What the ledger recorded for a decided count request: the released value, when, its cost, the entry."""
    p = entry.payload
    where = f"ledger entry #{entry.seq} ({entry.hash[:12]}…)"
    if entry.kind == "rejected":
        return f"Rejected {_when(entry)}: {sentence(p.get('reason') or 'no reason given')} {where}."
    cost = f"ε = {float(p['alpha']):.4g}" if entry.kind == "fresh" else "no budget (from history)"
    value = "several values" if entry.released is None else entry.stated()
    return (
        f"Released {value} on {_when(entry)}, costing {cost}; {where}. "
        "Below: history's posterior now, which includes this release."
    )


def decided_plan_text(entry) -> str:
    """What the ledger recorded for a decided max/argmax or posterior request."""
    from dpdesk.store.report import entry_summary

    if entry.kind in ("mean", "mean-inferred"):
        from dpdesk.engine.sums.kind import entry_words

        what = entry_words(entry.payload)
        return f"{entry.kind} on {_when(entry)}: {entry_summary(entry)} → {what}; ledger entry #{entry.seq} ({entry.hash[:12]}…)"
    what = entry.payload.get("label") or ", ".join(f"{float(v):.4g}" for v in entry.payload.get("values", ()))
    return f"{entry.kind} on {_when(entry)}: {entry_summary(entry)} → {what}; ledger entry #{entry.seq} ({entry.hash[:12]}…)"
