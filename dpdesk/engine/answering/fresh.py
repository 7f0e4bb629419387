"""Drawing a fresh answer: the one place the engine touches the cube.

:func:`release_fresh` hands the exact true answer (:func:`exact_answer`) of a *spend* assessment to the
injected sampler, which releases it (noise and a true value meet only there, DESIGN §4), and returns it
*unrecorded*; the store records it durably before anyone sees it — in practice through the assessment's
:meth:`~dpdesk.engine.answering.assessment.Assessment.draw`. The fused value ``t·ỹ + (1−t)·θ̂_H`` is
computed from the released ỹ and history's estimate θ̂_H, both releases already: post-processing, in floats.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dpdesk.engine.cube import Cube
from dpdesk.engine.errors import BudgetError, DpdeskError
from dpdesk.engine.inference.fusion import fuse
from dpdesk.engine.inference.history import HistoryRow
from dpdesk.engine.mechanisms.noise import NoiseSampler
from dpdesk.engine.queries.layout import Layout
from dpdesk.engine.queries.measured import exact_answer, value_vector
from dpdesk.engine.queries.query import Query

__all__ = ["FreshAnswer", "exact_answer", "release_fresh", "true_answer"]


@dataclass(frozen=True)
class FreshAnswer:
    """A noisy answer just drawn, not yet recorded. Record it durably before revealing ``answer``."""

    request_id: str
    query: Query
    alpha: float
    sensitivity: float
    family: str
    answer: float
    eps: float
    sampler: str
    released: float | None = None  # the value released: fused t·ỹ + (1−t)·θ̂_H, or ỹ without fusion
    fusion_weight: float | None = None  # t (None: no fusion)
    history_estimate: float | None = None  # θ̂_H that was fused (None: no fusion)

    def __post_init__(self) -> None:
        if self.released is None:
            object.__setattr__(self, "released", self.answer)

    @property
    def interval(self) -> tuple[float, float]:
        """``[ỹ − ε, ỹ + ε]`` around the raw noisy answer (the paper's release)."""
        return (self.answer - self.eps, self.answer + self.eps)

    @property
    def released_interval(self) -> tuple[float, float]:
        """``[released − ε, released + ε]``: the interval that meets the requirement; release this one."""
        r = float(self.released)  # type: ignore[arg-type]
        return (r - self.eps, r + self.eps)

    def history_row(self) -> HistoryRow:
        return HistoryRow(self.query, self.alpha, self.answer, self.family)


def true_answer(query: Query, cube: Cube) -> float:
    """``θ = Q·x`` in floating point — private; for tests and simulations (a release uses
    :func:`exact_answer`)."""
    if query.layout is not None:  # over the cube's measures: the vector of counts and sums
        if query.layout != Layout.of(cube.schema):
            raise DpdeskError("query reads measures this cube does not hold")
        idx, val = query.sparse()
        return float(val @ value_vector(query.layout, cube)[idx])
    if query.n_cells != cube.schema.n_cells:
        raise DpdeskError(f"query has {query.n_cells} coefficients, the cube has {cube.schema.n_cells} cells")
    if query.terms is not None and all(len(t.factors) == cube.counts.ndim for t in query.terms):
        total = 0.0
        x = cube.counts.astype(float)
        for t in query.terms:
            v = x
            for f in reversed(t.factors):  # contract the last axis each time
                v = v @ f
            total += t.weight * float(v)
        return total
    idx, val = query.sparse()
    return float(val @ cube.flat[idx])


def release_fresh(
    assessment: Any, cube: Cube, sampler: NoiseSampler, *, allow_insecure: bool = False
) -> FreshAnswer:
    """Draw the fresh noisy answer of a *spend* :class:`~dpdesk.engine.answering.assessment.Assessment`
    (α-DP for sensitivity S, scale S/α).

    Exactly what was assessed: the assessment's α, noise family, fusion weight and history estimate.
    The returned value is not recorded anywhere; the caller records it durably before showing it.
    ``allow_insecure`` must be set to use a non-secure (seeded) sampler, which only test projects do.
    """
    a = assessment
    if a.decision != "spend":
        raise BudgetError(f"request {a.request.id!r}: decision is {a.decision!r}, not 'spend'")
    if not a.budget.fits:
        raise BudgetError(f"request {a.request.id!r}: a fresh answer would exceed the total budget")
    if not getattr(sampler, "secure", False) and not allow_insecure:
        raise BudgetError(
            f"sampler {getattr(sampler, 'name', sampler)!r} is not secure; releases need the vetted sampler"
        )
    q, noise = a.request.query, a.noise
    alpha = float(a.spend_alpha)
    answer = sampler.release(noise, exact_answer(q, cube), noise.scale(q.sensitivity, alpha), q.sensitivity)
    t = a.fusion_weight
    theta_h = a.inference.history_estimate.estimate if t is not None else None
    released = fuse(theta_h, answer, t) if t is not None and theta_h is not None else answer
    return FreshAnswer(
        request_id=a.request.id,
        query=q,
        alpha=alpha,
        sensitivity=q.sensitivity,
        family=noise.name,
        answer=answer,
        eps=a.request.eps,
        sampler=sampler.name,
        released=released,
        fusion_weight=t,
        history_estimate=theta_h,
    )
