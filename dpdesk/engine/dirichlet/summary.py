"""The words of a posterior preview and of a posterior release, shared by the CLI and the app.

Every line is built from public values only: the request, the assessment (charge, candidate set,
data-free guarantee, expected accuracies at a public reference table, budget figures) or the recorded
release. Each figure says what it is — data-free bound, reference-table expectation, or released value
— so a reader never takes one for another.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpdesk.engine.dirichlet.display import noisy_counts_bands, proportion_bands
from dpdesk.engine.dirichlet.plan import PosteriorAssessment, PosteriorRelease
from dpdesk.engine.dirichlet.request import MECHANISM_NAMES, PosteriorQuery

__all__ = ["SHORT_NAMES", "dirichlet_text", "preview_lines", "release_lines", "share_bands", "shares_text"]

# the mechanisms' own names -> their text-form names (global, smooth, laplace)
SHORT_NAMES = {v: k for k, v in MECHANISM_NAMES.items()}


def dirichlet_text(parameters: Any) -> str:
    """``Beta(a, b)`` for two categories, ``Dir(a, b, c, …)`` otherwise."""
    a = np.asarray(parameters, dtype=float)
    return f"{'Beta' if a.size == 2 else 'Dir'}({', '.join(f'{v:.4g}' for v in a)})"


def _request_line(q: PosteriorQuery) -> str:
    box = "; ".join(f"{n} in {{{', '.join(labels)}}}" for n, labels in q.box) or "the whole table"
    return (
        f"posterior of the shares of {q.attribute} ({q.k} categories: {', '.join(q.labels)}) "
        f"among {box}; prior {dirichlet_text(q.prior)}"
    )


def preview_lines(a: PosteriorAssessment) -> list[str]:
    """What a curator reads before confirming: request, cost, guarantee, reference accuracies, budget."""
    q = a.query
    n_box = int(q.box_query().support_size())
    lines = [_request_line(q)]
    cost = f"cost: {a.mechanism.label}: α = {a.alpha:.4g}"
    if a.delta:
        cost += f", δ = {a.delta:.3g}"
    lines.append(cost + f" on each of the box's {n_box} cells")
    if a.target is not None:
        lines.append(
            f"  α chosen for: within {a.target[0]:g} (Hellinger) of the nearest candidate with "
            f"probability ≥ {1 - a.target[1]:g}"
        )
    if a.method == "laplace":
        lines.append(
            f"  every one of the {q.k} counts gets discrete Laplace noise of scale {1 / a.alpha:.4g}; "
            "negative noisy counts are clipped at 0 before the conjugate update; the noisy counts are released too"
        )
    elif a.candidates is not None:
        lines.append(
            f"  size {a.size} declared public by the curator; {a.candidates.count:,} candidate posteriors"
        )
    else:
        lines.append(
            f"  size not public: α = {a.size_alpha:.4g} of it buys the box's noisy total first (released too); "
            f"then at most {a.max_candidates:,} candidates around it"
        )
    if a.chosen_by:
        lines.append(f"mechanism chosen by expected accuracy: {a.chosen_by}")
    g = a.guarantee
    if g and g.get("within_at_0.9", 1.0) < 1.0:
        lines.append(
            f"guarantee (data-free, any table): with probability ≥ 0.9 the released posterior is within "
            f"Hellinger distance {g['within_at_0.9']:.3g} of the nearest candidate's (0: the truth itself; "
            "1: nothing alike)"
        )
    elif g:
        lines.append(
            f"no useful data-free guarantee at this budget (it would need α ≥ {g['alpha_for_0.5']:.3g} to "
            "promise a distance below 0.5 with probability 0.9): judge it by the expected accuracy below"
        )
    elif a.method == "exponential-smooth":
        lines.append(
            "guarantee: (α, δ)-DP (docs/dirichlet.md §4); its accuracy depends on the data, so none is promised"
        )
    else:
        lines.append(
            "guarantee: α-DP; its accuracy depends on the data (clipping, the posterior's shape), so none is promised"
        )
    if a.reference:
        m = sum(a.reference_counts or ())
        ref = " · ".join(
            f"{SHORT_NAMES.get(k, k)} {v:.3g}" for k, v in sorted(a.reference.items(), key=lambda kv: kv[1])
        )
        lines.append(
            f"expected Hellinger distance at a reference table of {m:,} records split as the prior "
            f"(public inputs only, not the data): {ref}"
        )
    else:
        lines.append(
            "no reference table: declare a public size, or give a reference size, to compare expected accuracies"
        )
    b = a.budget
    if b is not None and b.system_cost_after is not None:
        lines.append(
            f"budget: system cost {b.system_cost:.4g} → {b.system_cost_after:.4g} of {b.total:g} "
            f"(remaining after {b.remaining_after:.4g})"
            if b.accounting is None
            else f"budget: system cost {b.words()}"
        )
    if a.delta_after is not None:
        lines.append(f"δ: the largest per-cell δ after would be {a.delta_after:.3g}")
    lines.append("releasable" if a.releasable else f"NOT releasable: {a.reason}")
    return lines


def share_bands(
    parameters: Any, method: str, prior: Any, noisy_counts: Any, alpha: float, level: float = 0.95
) -> tuple[Any, str]:
    """Each share's band as a curator should read it, and what it is.

    A Laplace release's noise is public (its scale ``1/α``), so the band is that of the true shares given
    the noisy counts — the released posterior *and* the noise (:func:`noisy_counts_law`). An exponential
    mechanism's choice cannot be undone that way: its band is the released posterior's alone, and says so.
    """
    if method == "laplace" and noisy_counts is not None:
        return noisy_counts_bands(prior, noisy_counts, alpha, level), (
            f"{100 * level:g} % band including the Laplace noise"
        )
    return proportion_bands(np.asarray(parameters, dtype=float), level), (
        f"{100 * level:g} % band of the released posterior alone — it leaves out the exponential "
        "mechanism's randomness, so the true share can lie outside it"
    )


def shares_text(
    labels: Any, parameters: Any, method: str, prior: Any, noisy_counts: Any, alpha: float
) -> str:
    """One line of shares and bands, as the letter gives them: ``A 0.715 (0.684–0.745), B … (95 % band …)``."""
    bands, what = share_bands(parameters, method, prior, noisy_counts, alpha)
    shares = ", ".join(
        f"{lab} {m:.3f} ({lo:.3f}–{hi:.3f})"
        for lab, m, lo, hi in zip(labels, bands.mean, bands.low, bands.high)
    )
    return f"shares {shares}; {what}"


def release_lines(release: PosteriorRelease, query: PosteriorQuery, level: float = 0.95) -> list[str]:
    """The released posterior: its parameters, each share's mean and band (including the noise where it
    can: see :func:`share_bands`), what else was released."""
    lines = [f"released posterior {dirichlet_text(release.parameters)}"]
    method = str(release.details.get("method", "")) if release.details else ""
    if release.noisy_counts is not None:
        method = "laplace"
    alpha = float(release.details.get("alpha", 0.0)) if release.details else 0.0
    bands, what = share_bands(release.parameters, method, query.prior, release.noisy_counts, alpha, level)
    lines.append(f"  each share with its {what}:")
    for lab, m, lo, hi in zip(query.labels, bands.mean, bands.low, bands.high):
        lines.append(f"  {lab}: share {m:.3f}  ({lo:.3f} – {hi:.3f})")
    if release.noisy_size is not None:
        lines.append(f"  noisy total of the box (released first): {release.noisy_size:g}")
    if release.noisy_counts is not None:
        lines.append(
            f"  noisy counts (released; clipped at 0 for the update): {', '.join(f'{v:g}' for v in release.noisy_counts)}"
        )
    return lines
