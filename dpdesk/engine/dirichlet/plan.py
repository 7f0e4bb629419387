"""Assess a posterior-of-proportions request from public inputs, then draw exactly what was assessed.

:func:`assess_posterior` reads only public inputs — the request (attribute, box, prior), the chosen
mechanism, the budget or accuracy target, a size the curator declares public, the candidate cap —
and fixes the charge every cell of the box pays, the candidate set when the size is public, the
global mechanism's guarantee and, at a reference table built from public inputs, each mechanism's
expected accuracy. :func:`draw_posterior` then reads the cube once and draws with the vetted sampler;
it re-decides nothing. When no size is public, the draw first releases the box's noisy total with a
share of the budget and builds the candidate set from it (docs/dirichlet.md §3).

:class:`PosteriorAssessment` is a release plan in the sense of
:class:`dpdesk.engine.mechanisms.base.ReleasePlan`: its ``record()`` and ``draw()`` together are the
ledger payload that :mod:`dpdesk.engine.dirichlet.privacy_map` re-derives the charge and rows from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from dpdesk.engine.budget.accounting import BudgetPreview, preview
from dpdesk.engine.budget.mode import ZcdpAccounting
from dpdesk.engine.budget.person import ROW_RULE, PersonRule
from dpdesk.engine.dirichlet.accuracy import (
    alpha_for_target,
    expected_bound,
    reference_counts,
    tail_bound,
    within_at,
)
from dpdesk.engine.dirichlet.candidates import DEFAULT_MAX_CANDIDATES, CandidateSet
from dpdesk.engine.dirichlet.choice import (
    DEFAULT_SIZE_SHARE,
    choose_mechanism,
    make_mechanism,
    reference_accuracy,
)
from dpdesk.engine.dirichlet.mechanisms import (
    LaplaceCounts,
    NoisySize,
    PosteriorSampler,
)
from dpdesk.engine.dirichlet.privacy_map import POSTERIOR_MECHANISMS
from dpdesk.engine.dirichlet.request import PosteriorQuery
from dpdesk.engine.errors import BudgetError, DpdeskError
from dpdesk.engine.mechanisms.base import Basis, Mechanism
from dpdesk.engine.mechanisms.charge import Charge, ChargeTerm

__all__ = [
    "METHODS",
    "PosteriorAssessment",
    "PosteriorRelease",
    "assess_posterior",
    "assess_request",
    "draw_posterior",
]

METHODS = ("exponential-global", "exponential-smooth", "laplace")


@dataclass(frozen=True)
class PosteriorAssessment:
    """A priced posterior release, computed from public inputs only (a ``ReleasePlan``).

    ``method`` is the mechanism (``exponential-global``, ``exponential-smooth`` or ``laplace``);
    ``alpha`` and ``delta`` are what every cell of the box pays, ``size_alpha`` of ``alpha`` buying the
    noisy size (0 when ``size`` is public or the method is ``laplace``). ``guarantee`` holds the global
    mechanism's data-free bounds; ``reference`` the expected Hellinger distance of each mechanism at
    ``reference_counts`` (a public table, never the data). ``budget`` (and ``delta_after``, the largest
    per-cell δ after the release) exist when the caller passed the ledger's current costs.
    """

    query: PosteriorQuery
    method: str
    alpha: float
    delta: float
    size_alpha: float
    size: int | None
    max_candidates: int
    split: float
    target: tuple[float, float] | None
    candidates: CandidateSet | None
    guarantee: dict[str, float] = field(default_factory=dict)
    reference_counts: tuple[int, ...] | None = None
    reference: dict[str, float] = field(default_factory=dict)
    request_id: str | None = None
    basis: Basis = field(default_factory=Basis)
    budget: BudgetPreview | None = None
    delta_after: float | None = None
    releasable: bool = True
    reason: str = ""
    chosen_by: str = ""  # why this mechanism, when the request did not name one

    needs_data = True

    @property
    def mechanism(self) -> Mechanism:
        """The registered mechanism whose privacy map prices this release (its name goes in the ledger)."""
        return next(m for m in POSTERIOR_MECHANISMS if m.name == f"posterior-{self.method}")

    @property
    def charge(self) -> Charge:
        """``alpha`` on every cell of the box (its count has 0/1 coefficients), and ``delta``."""
        return Charge((ChargeTerm(self.alpha, self.query.box_query()),), self.delta)

    @property
    def posterior_alpha(self) -> float:
        return self.alpha - self.size_alpha

    def noisy_rows(self) -> tuple[tuple[Any, float, str], ...]:
        """The noisy linear answers this release will add to history, ``(query, α, family)``, known before
        the draw: the mechanism's privacy map on the planned payload with placeholder values (the rows'
        queries, α and family never depend on the values drawn). Watched claims are checked on them in
        the preview, exactly as the release path checks the recorded payload."""
        payload = self.record()
        if self.method == "laplace":
            payload["noisy_counts"] = [0.0] * self.query.k
        elif self.candidates is None:
            payload["noisy_size"] = 0.0
        payload["values"] = [1.0] * self.query.k
        rows = self.mechanism.contribution(payload, self.query.schema.shape).rows
        return tuple((r.query, r.alpha, r.family) for r in rows)

    def record(self) -> dict[str, Any]:
        """The ledger members fixed before the data is read: request, box, mechanism parameters, α, δ."""
        out: dict[str, Any] = {
            "request": self.query.to_json(),
            "text": self.query.text or self.query.describe(),
            "query": self.query.box_query().to_json(),
            "axis": self.query.schema.axis(self.query.attribute),
            "method": self.method,
            "alpha": self.alpha,
            "delta": self.delta,
            "size_alpha": self.size_alpha,
            "size": self.size,
            "max_candidates": self.max_candidates,
        }
        if self.method == "exponential-smooth":
            out["split"] = self.split
        if self.target is not None:
            out["target"] = {"within": self.target[0], "failure": self.target[1]}
        return out

    def to_json(self) -> dict[str, Any]:
        """The preview as plain JSON: what :meth:`record` holds, the guarantee, the reference accuracies,
        the budget before and after, the largest per-cell δ after, and whether it may be released."""
        out = self.record()
        out.update(
            mechanism=self.mechanism.name,
            label=self.mechanism.label,
            guarantee=dict(self.guarantee),
            reference_counts=None if self.reference_counts is None else list(self.reference_counts),
            reference=dict(self.reference),
            cells=int(self.query.box_query().support_size()),
            releasable=self.releasable,
            reason=self.reason,
            delta_after=self.delta_after,
            chosen_by=self.chosen_by or None,
        )
        if self.candidates is not None:
            out["candidates"] = self.candidates.to_json()
        b = self.budget
        if b is not None:
            out["budget"] = {
                "total": b.total,
                "system_cost": b.system_cost,
                "system_cost_after": b.system_cost_after,
                "remaining_after": b.remaining_after,
            }
        return out

    def draw(self, cube: Any, sampler: PosteriorSampler, *, allow_insecure: bool = False) -> dict[str, Any]:
        """The released members, drawn from the cube with ``sampler`` (see :func:`draw_posterior`)."""
        if not self.releasable:
            raise BudgetError(f"posterior release refused: {self.reason}")
        if not getattr(sampler, "secure", False) and not allow_insecure:
            raise BudgetError(
                f"sampler {getattr(sampler, 'name', sampler)!r} is not secure; releases need the vetted sampler"
            )
        out = draw_posterior(self, cube, sampler).to_json()
        out["values"] = out.pop("parameters")
        return out


@dataclass(frozen=True)
class PosteriorRelease:
    """The released Dirichlet parameters and what else the release made public."""

    parameters: np.ndarray  # k positive floats, read-only
    noisy_size: float | None = None  # the box total with noise (before clipping at 0)
    noisy_counts: tuple[float, ...] | None = None  # Laplace baseline: each count with noise (unclipped)
    candidates: CandidateSet | None = None
    details: dict[str, Any] = field(default_factory=dict)  # the mechanism's public description

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"parameters": self.parameters.tolist(), "details": self.details}
        if self.noisy_size is not None:
            out["noisy_size"] = self.noisy_size
        if self.noisy_counts is not None:
            out["noisy_counts"] = list(self.noisy_counts)
        return out

    @classmethod
    def from_payload(cls, payload: Any) -> PosteriorRelease:
        """The release a recorded ledger payload holds (``values`` are the Dirichlet parameters)."""
        params = np.array(payload["values"], dtype=float)
        params.setflags(write=False)
        counts = payload.get("noisy_counts")
        details = dict(payload.get("details") or {})
        cs = details.get("candidates")
        candidates = None if cs is None else CandidateSet(np.array(cs["prior"]), cs["size"], cs["resolution"])
        return cls(
            params, payload.get("noisy_size"), None if counts is None else tuple(counts), candidates, details
        )


def _number(
    value: Any, what: str, *, low: float = 0.0, high: float = math.inf, open_low: bool = True
) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value > high or value < low or (open_low and value == low):
        bounds = f"{'(' if open_low else '['}{low:g}, {high:g}{']' if math.isfinite(high) else ')'}"
        raise DpdeskError(f"{what} ({value!r}) must be a number in {bounds}")
    return float(value)


def _chosen(
    query: PosteriorQuery,
    within: float | None,
    failure: float | None,
    delta: float,
    budget: float | None,
    size: int | None,
    reference_size: int | None,
    max_candidates: int,
) -> tuple[str, str]:
    """The mechanism of a request that names none, and why: an accuracy target is the global mechanism's,
    a δ the smooth one's; else :func:`~.choice.choose_mechanism` compares them."""
    if within is not None or failure is not None:
        return "exponential-global", "the exponential mechanism (global): an accuracy target is its"
    if delta:
        return "exponential-smooth", "the exponential mechanism (smooth): a δ was given"
    return choose_mechanism(
        query,
        budget=budget if isinstance(budget, (int, float)) and budget > 0 else None,
        size=size if isinstance(size, int) and not isinstance(size, bool) else None,
        reference_size=reference_size,
        max_candidates=max_candidates if isinstance(max_candidates, int) else DEFAULT_MAX_CANDIDATES,
    )


def _target(
    mechanism: str, within: float | None, failure: float | None, budget: float | None
) -> tuple[float, float] | None:
    """The checked accuracy target ``(distance, failure probability)``, or None when a budget is given."""
    if within is not None or failure is not None:
        if mechanism != "exponential-global":
            raise DpdeskError("an accuracy target sets the budget of the global-sensitivity mechanism only")
        if budget is not None:
            raise DpdeskError("give a budget or an accuracy target, not both")
        return (
            _number(within, "accuracy target: distance", high=1.0),
            _number(failure, "accuracy target: failure probability", high=1.0),
        )
    if budget is None:
        raise DpdeskError(
            "a posterior request needs a budget (or, for the global mechanism, an accuracy target)"
        )
    return None


def _delta(mechanism: str, delta: float) -> float:
    """The checked δ: the smooth-sensitivity mechanism's, below 1; any other mechanism takes none."""
    if mechanism == "exponential-smooth":
        delta = _number(delta, "delta", high=1.0)
        if delta >= 1:
            raise DpdeskError(f"delta ({delta}) must be below 1")
    elif delta:
        raise DpdeskError(f"delta ({delta}) applies to the smooth-sensitivity mechanism only")
    return delta


def _sized(
    query: PosteriorQuery, mechanism: str, size: int | None, size_share: float, max_candidates: int
) -> tuple[int | None, float, CandidateSet | None]:
    """The checked public size, the budget's share for a noisy size (none when the size is public or the
    mechanism is Laplace's) and, with a public size, the candidate set."""
    if size is not None and (isinstance(size, bool) or not float(size).is_integer() or size < 0):
        raise DpdeskError(f"size ({size!r}) must be a non-negative whole number")
    size = None if size is None else int(size)
    share = 0.0 if size is not None or mechanism == "laplace" else _number(size_share, "size share", high=1.0)
    if share >= 1:
        raise DpdeskError(f"size share ({size_share}) must be below 1")
    if not (isinstance(max_candidates, int) and max_candidates >= query.k):
        raise DpdeskError(f"max_candidates ({max_candidates!r}) must be a whole number of at least {query.k}")
    if size is None or mechanism == "laplace":
        return size, share, None
    return size, share, CandidateSet.for_size(query.prior, size, max_candidates)


def _guarantee(
    query: PosteriorQuery, mechanism: str, posterior_alpha: float, n_bound: int, share: float
) -> dict[str, float]:
    """The global mechanism's stated guarantee (none for the others)."""
    if mechanism != "exponential-global":
        return {}
    return {
        "n_candidates": float(n_bound),
        "expected_excess": expected_bound(query.prior, posterior_alpha, n_bound),
        "within_0.1": 1 - tail_bound(query.prior, posterior_alpha, n_bound, 0.1),
        # what a curator can use: the distance reached with probability 0.9, and the budget that would
        # bring it to 0.5
        "within_at_0.9": within_at(query.prior, posterior_alpha, n_bound, 0.1),
        "alpha_for_0.5": alpha_for_target(query.prior, n_bound, 0.5, 0.1) / (1 - share),
    }


def _alphas(
    query: PosteriorQuery,
    n_bound: int,
    target: tuple[float, float] | None,
    budget: float | None,
    share: float,
) -> tuple[float, float]:
    if target is not None:
        posterior_alpha = alpha_for_target(query.prior, n_bound, *target)
        alpha = posterior_alpha / (1 - share)
    else:
        alpha = _number(budget, "budget")
        posterior_alpha = alpha * (1 - share)
    return alpha, posterior_alpha


def assess_posterior(
    query: PosteriorQuery,
    *,
    mechanism: str | None = None,
    budget: float | None = None,
    delta: float = 0.0,
    within: float | None = None,
    failure: float | None = None,
    size: int | None = None,
    size_share: float = DEFAULT_SIZE_SHARE,
    max_candidates: int = DEFAULT_MAX_CANDIDATES,
    split: float = 0.5,
    reference_size: int | None = None,
    request_id: str | None = None,
    basis: Basis | None = None,
    cell_costs: np.ndarray | None = None,
    total_budget: float | None = None,
    cell_deltas: np.ndarray | None = None,
    delta_cap: float | None = None,
    accounting: ZcdpAccounting | None = None,
    rule: PersonRule = ROW_RULE,
) -> PosteriorAssessment:
    """Price a posterior release from public inputs (see the module docstring); raises DpdeskError.

    In a zCDP project (``accounting``: costs and total in ρ) the release is priced through its ε: ``α²/2``
    per cell of its box (Bun–Steinke Prop. 1.4; the smooth mechanism's δ still adds up against the
    project's δ cap, approximate zCDP).

    With the ledger's per-cell costs and the total budget (and per-cell δ and the project's δ cap),
    the assessment says whether the release fits; a release that does not is not ``releasable``.
    ``rule`` adds the per-cell α and δ up to one person's (:mod:`dpdesk.engine.budget.person`).
    ``mechanism`` None chooses it (:func:`choose_mechanism`; an accuracy target is the global
    mechanism's, δ the smooth one's).
    """
    chosen_by = ""
    if mechanism is None:
        mechanism, chosen_by = _chosen(
            query, within, failure, delta, budget, size, reference_size, max_candidates
        )
    if mechanism not in METHODS:
        raise DpdeskError(f"mechanism ({mechanism!r}) must be one of {', '.join(METHODS)}")
    target = _target(mechanism, within, failure, budget)
    delta = _delta(mechanism, delta)
    size, share, cs = _sized(query, mechanism, size, size_share, max_candidates)
    n_bound = cs.count if cs is not None else max_candidates  # N ≤ the cap whatever the noisy size
    alpha, posterior_alpha = _alphas(query, n_bound, target, budget, share)
    if mechanism == "exponential-smooth":
        split = _number(split, "split", high=1.0)
        make_mechanism(
            mechanism, cs or CandidateSet.for_size(query.prior, 0), posterior_alpha, delta, split
        )  # validates
    guarantee = _guarantee(query, mechanism, posterior_alpha, n_bound, share)
    ref_size = size if size is not None else reference_size
    ref, ref_counts = {}, None
    if ref_size is not None:
        ref_counts = reference_counts(query.prior, int(ref_size))
        ref = reference_accuracy(
            query, mechanism, ref_counts, size is not None, alpha, share, delta, max_candidates, split
        )
    delta = delta if mechanism == "exponential-smooth" else 0.0
    plan = PosteriorAssessment(
        query,
        mechanism,
        alpha,
        delta,
        alpha * share,
        size,
        max_candidates,
        split,
        target,
        cs,
        guarantee,
        None if ref_counts is None else tuple(int(v) for v in ref_counts),
        ref,
        request_id,
        basis or Basis(),
        chosen_by=chosen_by,
    )
    return _priced(plan, cell_costs, total_budget, cell_deltas, delta_cap, accounting, rule)


def assess_request(query: PosteriorQuery, **public: Any) -> PosteriorAssessment:
    """:func:`assess_posterior` with the options the request's text form states (mechanism, budget,
    delta, within, failure, size, candidates); ``public`` adds what the project knows (ledger costs,
    caps, basis, request id, a reference size). An option given both ways is an error."""
    o = query.options
    kw: dict[str, Any] = {
        k: o[k] for k in ("mechanism", "budget", "delta", "within", "failure", "size") if k in o
    }
    if "candidates" in o:
        n = o["candidates"]
        if not float(n).is_integer():
            raise DpdeskError(f"candidates ({n:g}) must be a whole number")
        kw["max_candidates"] = int(n)
    both = sorted(set(kw) & set(public))
    if both:
        raise DpdeskError(f"{', '.join(both)}: given in the request text and again outside it")
    return assess_posterior(query, **kw, **public)


def _priced(
    plan: PosteriorAssessment,
    cell_costs: np.ndarray | None,
    total: float | None,
    cell_deltas: np.ndarray | None,
    delta_cap: float | None,
    accounting: ZcdpAccounting | None = None,
    rule: PersonRule = ROW_RULE,
) -> PosteriorAssessment:
    """Attach the budget preview and the δ check; refuse (``releasable=False``) what does not fit."""
    n_box = int(plan.query.box_query().support_size())
    reason = (
        f"{plan.mechanism.label}: ε = {plan.alpha:.4g}"
        + (f", δ = {plan.delta:.3g}" if plan.delta else "")
        + f" on each of the box's {n_box} cells"
    )
    budget, delta_after, ok = None, None, True
    if cell_costs is not None and total is not None:
        budget = preview(np.asarray(cell_costs, dtype=float), float(total), plan.charge, accounting, rule)
        if not budget.fits:
            raised = "the most-charged cell" if rule.rows_are_people else "one person's privacy loss"
            ok, reason = (
                False,
                (
                    f"it would raise {raised} to {budget.system_cost_after:.4g}, above the total budget {total:.4g}"
                    if accounting is None
                    else f"it would raise {raised} to ε = "
                    f"{budget.shown(budget.system_cost_after):.4g}, above the total ε = {accounting.epsilon:g} "
                    f"at δ = {accounting.delta:g}"
                ),
            )
    if plan.delta and cell_deltas is not None:
        after = np.asarray(cell_deltas, dtype=float) + plan.delta * plan.query.box_query().dense()
        if rule.rows_are_people or cell_costs is None:
            delta_after = float(after.max())
        else:
            costs_after = np.asarray(cell_costs, dtype=float) + plan.charge.dense(after.size)
            delta_after = rule.delta(costs_after, after)
        if ok and delta_cap is not None and delta_after > delta_cap:
            ok, reason = (
                False,
                f"it would raise a cell's δ to {delta_after:.3g}, above the project's cap {delta_cap:.3g}",
            )
    return replace(plan, budget=budget, delta_after=delta_after, releasable=ok, reason=reason)


def draw_posterior(assessment: PosteriorAssessment, cube: Any, sampler: PosteriorSampler) -> PosteriorRelease:
    """Read the box's counts and release exactly the assessed mechanism with ``sampler``."""
    a = assessment
    counts = a.query.counts(cube)
    if a.method == "laplace":
        mech = LaplaceCounts(a.query.prior, a.alpha)
        noisy = tuple(sampler.release("discrete_laplace", int(c), 1.0 / a.alpha, 1) for c in counts)
        params = a.query.prior + np.maximum(0.0, np.array(noisy))
        params.setflags(write=False)
        return PosteriorRelease(params, noisy_counts=noisy, details=mech.describe())
    noisy_size = None
    cs = a.candidates
    if cs is None:
        size = NoisySize(a.size_alpha)
        noisy_size = sampler.release("discrete_laplace", int(counts.sum()), 1.0 / size.alpha, 1)
        cs = CandidateSet.for_size(a.query.prior, int(max(0.0, noisy_size)), a.max_candidates)
    mech = make_mechanism(a.method, cs, a.posterior_alpha, a.delta, a.split)
    return PosteriorRelease(mech.release(counts, sampler), noisy_size, None, cs, mech.describe())
