"""An assessment of one count request: what history says, what a fresh answer costs, and the decision.

:class:`Assessment` holds the results of the pipeline's three steps (:mod:`dpdesk.engine.answering.workflow`)
— :class:`Inference` (the estimate, posterior and :class:`~dpdesk.engine.inference.posterior.CredibleInterval`),
:class:`Pricing` (the :class:`~dpdesk.engine.inference.fusion.FusionPlan`, the spend policy's
:class:`~dpdesk.engine.budget.policy.PolicyOutcome` and the :class:`~dpdesk.engine.budget.accounting.BudgetPreview`)
and the decision — plus the :class:`~dpdesk.engine.mechanisms.base.Basis` it was computed from. It is a
:class:`~dpdesk.engine.mechanisms.base.ReleasePlan`: the store records exactly it (``record()`` and, for
*spend*, ``draw(cube, sampler)``), never deciding again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from dpdesk.engine.answering.fresh import release_fresh
from dpdesk.engine.answering.request import Request, Settings
from dpdesk.engine.budget.accounting import BudgetPreview
from dpdesk.engine.budget.policy import PolicyOutcome
from dpdesk.engine.inference.fusion import FusionPlan
from dpdesk.engine.inference.history import Estimate
from dpdesk.engine.inference.posterior import CredibleInterval, Posterior
from dpdesk.engine.mechanisms.base import Basis, Mechanism
from dpdesk.engine.mechanisms.charge import Charge
from dpdesk.engine.mechanisms.laplace import NoiseMechanism
from dpdesk.engine.mechanisms.postprocessing import INFERENCE
from dpdesk.engine.schema import Schema

__all__ = ["Assessment", "Decision", "Inference", "Pricing"]

Decision = Literal["infer", "spend", "reject"]


@dataclass(frozen=True, eq=False)
class Inference:
    """What released history says about the request's answer (no budget involved).

    ``estimate`` is the estimate served: history's BLUE, or — when a partition release kept out of the
    history puts more mass on ±ε — that release's own (``source`` is then its ledger entry and
    ``history`` history's estimate, which a fresh answer is still fused with).
    """

    estimate: Estimate
    posterior: Posterior | None = None
    credible: CredibleInterval | None = None  # the narrowest (highest-density) 1−δ interval
    confidence_at_eps: float | None = None  # posterior mass of the window an inferred answer releases
    release_estimate: float | None = None  # what "infer" releases (θ̂; under known bounds clipped into them)
    release_interval: tuple[float, float] | None = None  # [θ̂ ± ε]; under known bounds ∩ the bounds
    prior: str = "flat"  # "flat" or "bounded [L, U]"
    prior_bounds: tuple[float, float] | None = None
    interval_query: tuple[float, float] | None = None  # an interval the caller asked about, and its mass
    interval_probability: float | None = None
    source: int | None = (
        None  # ledger entry of the partition release whose estimate is served (None: history)
    )
    history: Estimate | None = None  # history's own estimate when a release's is served

    @property
    def history_estimate(self) -> Estimate:
        """History's estimate — what a fresh answer is fused with and what ``history_prefix`` counts."""
        return self.estimate if self.history is None else self.history

    @property
    def served_by(self) -> str:
        """Where the served estimate comes from, for the curator: ``history`` or ``partition release #N``."""
        return "history" if self.source is None else f"partition release #{self.source}"

    @property
    def method(self) -> str | None:
        """The posterior method that ran (``fft`` may fall back; None: no posterior)."""
        return None if self.posterior is None else self.posterior.method

    @property
    def error_bound(self) -> float:
        """Bound on the error of the posterior's probabilities (0 without a posterior)."""
        return 0.0 if self.posterior is None else float(self.posterior.error_bound)


@dataclass(frozen=True, eq=False)
class Pricing:
    """What a fresh answer would cost: Thm 5.3's α, the fused α, the spend policy, the budget after."""

    noise: NoiseMechanism  # the family a fresh answer is drawn from
    fresh_alpha: float  # Thm 5.3: the answer alone meets (ε, δ)
    spend_alpha: float  # what "spend" charges (fused and/or paced)
    needed_alpha: float  # what the request needs before the spend policy
    budget: BudgetPreview  # system cost now and after spending ``spend_alpha``
    cell_costs: np.ndarray  # the per-cell costs it was priced against (read-only)
    charge: Charge  # the fresh answer's per-cell charge at ``spend_alpha``
    fusion: FusionPlan | None = None  # the fusion search, when fusion was considered
    pacing: PolicyOutcome | None = None  # the spend policy's outcome, under a policy
    fusion_weight: float | None = None  # t: weight of the new answer in the released value (None: not fused)
    fused_confidence: float | None = None  # fused posterior mass on ±ε at ``spend_alpha``
    rows_per_person: int = 1  # k: a cell's room is a person's, divided by k (docs/person-level.md)


def _via(part: str, name: str) -> Any:
    """A read accessor of one of the pipeline's results: ``assessment.x`` is ``assessment.<part>.x``."""
    return property(lambda self: getattr(getattr(self, part), name), doc=f"``{part}.{name}``")


@dataclass(frozen=True, eq=False)
class Assessment:
    """Everything the curator sees before deciding; computed from public quantities only."""

    request: Request
    inference: Inference
    pricing: Pricing
    decision: Decision
    reason: str
    settings: Settings
    basis: Basis
    elapsed_ms: float = 0.0
    schema: Schema | None = field(default=None, repr=False)

    # -- the release plan (dpdesk.engine.mechanisms.base.ReleasePlan) ----------------------------

    @property
    def mechanism(self) -> Mechanism:
        """Inference (free) for *infer*, the noise family otherwise."""
        return INFERENCE if self.decision == "infer" else self.pricing.noise

    @property
    def request_id(self) -> str:
        return self.request.id

    @property
    def releasable(self) -> bool:
        return self.decision != "reject"

    @property
    def needs_data(self) -> bool:
        return self.decision == "spend"

    @property
    def charge(self) -> Charge:
        return self.pricing.charge if self.decision == "spend" else Charge()

    def record(self) -> dict[str, Any]:
        """The ledger payload known before any data is touched (DESIGN §4: public quantities only)."""
        q = self.request.query
        out: dict[str, Any] = {
            "query": q.to_json(),
            "query_text": q.text,
            "eps": self.request.eps,
            "delta": self.request.delta,
            "history_prefix": self.inference.history_estimate.history_size,
        }
        if self.decision == "infer":
            inf = self.inference
            assert inf.release_interval is not None and inf.credible is not None
            # θ̂ ± ε; under known bounds trimmed to them (θ̂ clipped into them)
            out.update(
                estimate=inf.release_estimate,
                interval=list(inf.release_interval),
                credible_interval=[inf.credible.low, inf.credible.high],
                confidence_at_eps=inf.confidence_at_eps,
                method=self.method,
                prior=inf.prior,
                values=[inf.release_estimate],
            )
            if inf.source is not None:
                out.update(from_release=inf.source)
        elif self.decision == "spend":
            p = self.pricing
            out.update(
                sensitivity=q.sensitivity,
                alpha=p.spend_alpha,
                family=p.noise.name,
                system_cost_after=p.budget.system_cost_after,
                policy=self.policy,
                needed_alpha=p.needed_alpha,
                fusion_weight=p.fusion_weight,
                history_estimate=self.inference.history_estimate.estimate
                if p.fusion_weight is not None
                else None,
            )
        return out

    def draw(self, cube: Any, sampler: Any, *, allow_insecure: bool = False) -> dict[str, Any]:
        """The fresh answer's payload members: raw ``answer`` ỹ (the history row), the ``released`` value
        (ỹ fused with θ̂_H when fused), its ±ε ``interval``, the ``sampler``. Empty for *infer*."""
        if self.decision != "spend":
            return {}
        fresh = release_fresh(self, cube, sampler, allow_insecure=allow_insecure)
        return {
            "answer": fresh.answer,
            "released": fresh.released,
            "interval": list(fresh.released_interval),
            "sampler": fresh.sampler,
            "values": [fresh.released],
        }

    # -- reading it: the pipeline's results under their short names --------------------------
    estimate = _via("inference", "estimate")
    posterior = _via("inference", "posterior")
    credible = _via("inference", "credible")
    confidence_at_eps = _via("inference", "confidence_at_eps")
    release_estimate = _via("inference", "release_estimate")
    release_interval = _via("inference", "release_interval")
    prior = _via("inference", "prior")
    prior_bounds = _via("inference", "prior_bounds")
    interval_query = _via("inference", "interval_query")
    interval_probability = _via("inference", "interval_probability")
    noise = _via("pricing", "noise")
    fresh_alpha = _via("pricing", "fresh_alpha")
    spend_alpha = _via("pricing", "spend_alpha")
    needed_alpha = _via("pricing", "needed_alpha")
    fusion_weight = _via("pricing", "fusion_weight")
    fused_confidence = _via("pricing", "fused_confidence")
    budget = _via("pricing", "budget")
    cell_costs = _via("pricing", "cell_costs")

    @property
    def estimable(self) -> bool:
        return self.inference.estimate.estimable

    @property
    def interval(self) -> tuple[float, float] | None:
        c = self.inference.credible
        return None if c is None else (c.low, c.high)

    @property
    def interval_confidence(self) -> float | None:
        c = self.inference.credible
        return None if c is None else c.confidence

    @property
    def family(self) -> str:
        """The registered name of :attr:`noise`."""
        return self.pricing.noise.name

    @property
    def headroom(self) -> float | None:
        """Largest α the query's cells can still pay for (None without a spend policy)."""
        return None if self.pricing.pacing is None else self.pricing.pacing.headroom

    @property
    def fusion(self) -> bool:
        """Whether fusion with history was considered."""
        return self.settings.fusion

    @property
    def policy(self) -> str:
        return "greedy" if self.settings.policy is None else self.settings.policy.describe()

    @property
    def method(self) -> str | None:
        """The posterior method that ran (None: no posterior); :attr:`requested_method` is what was asked."""
        return self.inference.method

    @property
    def requested_method(self) -> str:
        return str(self.basis.method)

    @property
    def error_bound(self) -> float | None:
        """Bound on the error of the posterior's probabilities (None: no posterior)."""
        return None if self.inference.posterior is None else self.inference.error_bound

    @property
    def sensitivity(self) -> float:
        return self.request.query.sensitivity

    @property
    def cost(self) -> float:
        """Budget this decision spends (0 for infer and reject; ``spend_alpha`` for spend)."""
        return self.pricing.spend_alpha if self.decision == "spend" else 0.0

    @property
    def fused(self) -> bool:
        """True when a fresh answer would be released fused with history."""
        return self.pricing.fusion_weight is not None

    @property
    def saving(self) -> float:
        """Budget fusion saves on a fresh answer relative to Thm 5.3 (0 without fusion)."""
        return self.pricing.fresh_alpha - self.pricing.spend_alpha

    def to_json(self, *, cell_costs: bool = True) -> dict[str, Any]:
        """The DESIGN §6 assessment object (fields that do not apply are null), plus its basis.

        Without ``cell_costs`` the per-cell vector B is left out: ``cell_costs`` is null and
        ``cell_costs_omitted`` says how many cells it would list (a 10⁶-cell cube's B is 20 MB of text).
        """
        est, b, inf = self.estimate, self.budget, self.inference
        out: dict[str, Any] = {
            "request_id": self.request.id,
            "estimable": est.estimable,
            "estimate": est.estimate,
            "std": est.std,
            "interval": list(self.interval) if self.interval else None,
            "interval_confidence": self.interval_confidence,
            "confidence_at_eps": self.confidence_at_eps,
            "eps": self.request.eps,
            "delta": self.request.delta,
            "decision": self.decision,
            "reason": self.reason,
            "sensitivity": self.sensitivity,
            "family": self.family,
            "fresh_alpha": self.fresh_alpha,
            "spend_alpha": self.spend_alpha,
            "fusion": self.fusion,
            "fusion_weight": self.fusion_weight,
            "fused_confidence": self.fused_confidence,
            "prior": inf.prior,
            "prior_bounds": list(inf.prior_bounds) if inf.prior_bounds else None,
            "release_estimate": inf.release_estimate,
            "release_interval": list(inf.release_interval) if inf.release_interval else None,
            "policy": self.policy,
            "needed_alpha": self.needed_alpha,
            "headroom": self.headroom if self.headroom is None or math.isfinite(self.headroom) else None,
            "system_cost": b.system_cost,
            "system_cost_after": b.system_cost_after,
            "remaining": b.remaining,
            "remaining_after": b.remaining_after,
            "total_budget": b.total,
            "cell_costs": np.asarray(self.cell_costs, dtype=float).tolist() if cell_costs else None,
            "history_size": est.history_size,
            "source": inf.served_by,
            "coefficients": None if est.coefficients is None else [float(a) for a in est.coefficients],
            "method": self.method,
            "method_requested": self.requested_method,
            "error_bound": self.error_bound,
            "elapsed_ms": self.elapsed_ms,
            "basis": self.basis.to_json(),
        }
        if not cell_costs:
            out["cell_costs_omitted"] = int(np.size(self.cell_costs))
        acc = self.settings.accounting
        if acc is not None:  # zCDP: the figures above are per-cell ρ; as the ε they state at the project's δ
            out |= {
                "accounting": acc.to_json(),
                "rho_spend": self.pricing.charge.largest(np.size(self.cell_costs)),
                "epsilon_total": acc.epsilon,
                "epsilon_spent": b.shown(b.system_cost),
                "epsilon_after": None if b.system_cost_after is None else b.shown(b.system_cost_after),
            }
        if inf.interval_query is not None:
            out["interval_query"] = list(inf.interval_query)
            out["interval_probability"] = inf.interval_probability
        return out
