"""What each posterior mechanism releases at a public table, as curves beside the posterior it aims at.

The app shows a posterior request's mechanism and the Laplace baseline (docs/dirichlet.md) side by
side, not only as expected Hellinger distances: at a table of public counts, the law of a mechanism's
released posterior is a mixture of Dirichlets (:class:`~dpdesk.engine.dirichlet.display.DirichletMixture`)
— over the candidates for the exponential mechanisms, over the clipped noisy counts for Laplace. Its
density (Beta) or its per-category bands (Dirichlet) show how far and how widely each mechanism
scatters around the target.

The counts are public: before a release, the reference table built from the prior
(:func:`~dpdesk.engine.dirichlet.accuracy.reference_counts`); after it, the pseudo-counts the released
posterior states (released parameters minus the prior, rounded) — a function of the release only.
The data never enters. The Laplace law in more than two categories is a seeded Monte Carlo sample of
public quantities, like :func:`~dpdesk.engine.dirichlet.accuracy.expected_hellinger`'s.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpdesk.engine.dirichlet.candidates import CandidateSet
from dpdesk.engine.dirichlet.display import DirichletMixture, noisy_counts_law
from dpdesk.engine.dirichlet.mechanisms import ExponentialGlobal, ExponentialSmooth, LaplaceCounts

__all__ = ["expected_release_series", "release_law", "released_series"]

COMPONENTS = 1000  # a mixture with more components is represented by this many stratified ones
_TAIL = 1e-6


def _represent(weights: np.ndarray, params: np.ndarray) -> DirichletMixture:
    """The mixture, or — past :data:`COMPONENTS` — a stratified sample of it: the components at evenly
    spaced points of the cumulative weight, each weighted by how many points fell on it (never only the
    heaviest few, which would drop a flat law's spread)."""
    w = np.asarray(weights, dtype=float)
    if w.size <= COMPONENTS:
        return DirichletMixture(w, params)
    cdf = np.cumsum(w) / w.sum()
    picks = np.minimum(np.searchsorted(cdf, (np.arange(COMPONENTS) + 0.5) / COMPONENTS), w.size - 1)
    index, hits = np.unique(picks, return_counts=True)
    return DirichletMixture(hits.astype(float), params[index])


def release_law(mechanism: Any, counts: Any, *, seed: int = 0) -> DirichletMixture:
    """The law of ``mechanism``'s released Dirichlet at the public ``counts``."""
    c = np.asarray(counts, dtype=np.int64)
    if isinstance(mechanism, (ExponentialGlobal, ExponentialSmooth)):
        return _represent(mechanism.probabilities(c), mechanism.candidates.parameters())
    if not isinstance(mechanism, LaplaceCounts):
        raise TypeError(f"no release law for {type(mechanism).__name__}")
    prior, alpha = mechanism.prior, mechanism.alpha
    if c.size == 2:  # every clipped noisy pair, exactly, within the 1e-6 tails
        reach = int(math.ceil(math.log(1 / _TAIL) / alpha))
        axes = [np.arange(max(0, int(ci) - reach), int(ci) + reach + 1) for ci in c]
        pmfs = [mechanism.marginal(int(ci), int(v[-1]))[v] for ci, v in zip(c, axes)]
        g0, g1 = np.meshgrid(*axes, indexing="ij")
        w = np.outer(*pmfs).reshape(-1)
        return _represent(w, prior + np.stack([g0.reshape(-1), g1.reshape(-1)], axis=1))
    rng = np.random.default_rng(seed)
    p = -math.expm1(-alpha)
    z = rng.geometric(p, size=(COMPONENTS, c.size)) - rng.geometric(
        p, size=(COMPONENTS, c.size)
    )  # public draws
    return DirichletMixture(np.ones(COMPONENTS), prior + np.maximum(0, c + z))


def _mechanism(plan: Any, method: str, counts: np.ndarray) -> Any:
    """``method`` at the plan's α (and δ) with the candidate set for the public total (``size`` known)."""
    if method == "laplace":
        return LaplaceCounts(plan.query.prior, plan.alpha)
    cs = CandidateSet.for_size(plan.query.prior, int(counts.sum()), plan.max_candidates)
    alpha = plan.posterior_alpha  # what is left after buying a noisy size; shown as if the size were known
    if method == "exponential-smooth":
        return ExponentialSmooth(cs, alpha, plan.delta, plan.split)
    return ExponentialGlobal(cs, alpha)


def _alternative(plan: Any) -> str:
    return "exponential-global" if plan.method == "laplace" else "laplace"


def expected_release_series(plan: Any) -> list[tuple[str, Any]]:
    """Prior, the posterior at the plan's public reference table, and what the plan's mechanism and its
    alternative (the Laplace baseline, or the global mechanism for a Laplace request) release there."""
    q = plan.query
    series: list[tuple[str, Any]] = [("prior", q.prior)]
    if plan.reference_counts is None:
        return series
    counts = np.asarray(plan.reference_counts, dtype=np.int64)
    series.append((f"posterior at a public table of {int(counts.sum()):,} (not the data)", q.prior + counts))
    for method in (plan.method, _alternative(plan)):
        mech = _mechanism(plan, method, counts)
        series.append(
            (f"{_words(method)} at ε = {plan.alpha:.3g}: its release there", release_law(mech, counts))
        )
    return series


def released_series(plan: Any, release: Any) -> list[tuple[str, Any]]:
    """Prior, the released posterior, and the alternative mechanism at the same α around the pseudo-counts
    the release states (a function of the release: the data never enters)."""
    q = plan.query
    params = np.asarray(release.parameters, dtype=float)
    counts = np.maximum(0, np.rint(params - q.prior)).astype(np.int64)
    alt = _alternative(plan)
    if plan.method == "laplace" and release.noisy_counts is not None:
        # the noise is public: what the true shares may be is the released posterior *and* the noise
        return [
            ("prior", q.prior),
            ("released posterior (leaves out the noise)", params),
            (
                "true shares: released posterior with the Laplace noise",
                noisy_counts_law(q.prior, release.noisy_counts, plan.alpha),
            ),
            (f"{_words(alt)} at the same ε around it", release_law(_mechanism(plan, alt, counts), counts)),
        ]
    return [
        ("prior", q.prior),
        ("released posterior (alone: leaves out the mechanism's randomness)", params),
        (f"{_words(alt)} at the same ε around it", release_law(_mechanism(plan, alt, counts), counts)),
    ]


def _words(method: str) -> str:
    return {
        "laplace": "Laplace baseline",
        "exponential-global": "exponential mechanism (global)",
        "exponential-smooth": "exponential mechanism (smooth)",
    }[method]
