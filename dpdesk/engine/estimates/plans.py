"""Zero-cost estimates and synthetic tables as releases: plans the one release path records.

Both read the project's released history only — the history's noisy rows, the curator's declared
table size, the ledger head — never the data. Each is a :class:`~dpdesk.engine.mechanisms.base.ReleasePlan`
with an empty charge and ``needs_data = False``: ``Project.release(plan)`` records it (hash-chained,
with its basis) like every release, and verify re-derives its zero charge.

* :func:`plan_estimate` — the kernel-PCA shrinkage estimate of one query (seed §3) at a τ given by the
  curator or chosen by k-fold cross-validation on the history; **biased** for finite τ, so it is shown
  with the CV curve's error estimate (over queries like the history's, never a bound for this request)
  and never as meeting an (ε, δ).
* :func:`~.synthetic.plan_synthetic` (its own module) — a maximum-entropy synthetic table (seed §4): the
  fit, ``rows`` synthetic rows drawn with a recorded seed, the digest of those rows and a fit report per
  released row.

The inputs the seed assumes known are taken from public sources only (issue 17): the table size ``n``
is the curator's declared size (given, or the project's known-bounds prior) or else the history's own
unbiased estimate of the total; the prior ``p0`` of an attribute comes from its 1-way marginal when the
history determines it (released marginals), uniform otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.estimates.crossval import CVCurve, cross_validate
from dpdesk.engine.estimates.kernel import universal
from dpdesk.engine.estimates.privacy_map import SHRINKAGE_ESTIMATE
from dpdesk.engine.estimates.released import Released
from dpdesk.engine.estimates.shrinkage import ShrinkageEstimate, ShrinkageModel
from dpdesk.engine.mechanisms.base import Basis
from dpdesk.engine.mechanisms.charge import Charge
from dpdesk.engine.mechanisms.postprocessing import PostProcessing
from dpdesk.engine.queries.query import Query, Term

__all__ = [
    "EstimatePlan",
    "HistoryInputs",
    "history_inputs",
    "marginal_prior",
    "plan_estimate",
    "public_table_size",
    "recompute_estimate",
]

# Cross-validation folds (the seed's 5).
FOLDS = 5
# A floor for an attribute's prior share read off noisy marginals: noise can make a share ≤ 0.
_PRIOR_FLOOR = 1e-3


def _num(x: float) -> float | str:
    return x if math.isfinite(x) else ("inf" if x > 0 else "nan")


def _marginal_query(shape: tuple[int, ...], axis: int, value: int) -> Query:
    factors = tuple(np.ones(k) for k in shape)
    f = np.zeros(shape[axis])
    f[value] = 1.0
    return Query(shape, terms=(Term(1.0, factors[:axis] + (f,) + factors[axis + 1 :]),))


def marginal_prior(
    history: Any, names: Sequence[str]
) -> tuple[tuple[np.ndarray, ...] | None, tuple[str, ...]]:
    """The prior ``p0`` from released 1-way marginals (seed §2), and the attributes it used.

    An attribute's factor is its marginal's unbiased estimate from history, normalised (shares floored
    at a small positive value: a noisy share can be negative) when history determines every label's
    count; uniform otherwise. ``(None, ())`` when history determines no marginal.
    """
    shape = tuple(history.shape)
    factors, used = [], []
    for d, k in enumerate(shape):
        est = [history.estimate(_marginal_query(shape, d, v)) for v in range(k)] if len(history) else []
        if est and all(e.estimable for e in est):
            share = np.maximum(np.array([float(e.estimate) for e in est]), 0.0)
            total = float(share.sum())
            share = share / total if total > 0 else np.full(k, 1.0 / k)
            share = np.maximum(share, _PRIOR_FLOOR / k)
            factors.append(share / share.sum())
            used.append(names[d])
        else:
            factors.append(np.full(k, 1.0 / k))
    return (tuple(factors), tuple(used)) if used else (None, ())


def public_table_size(history: Any, given: float | None, declared: float | None) -> tuple[float | None, str]:
    """The table size ``n`` the seed's universal query needs, from public sources only, and where from.

    ``given`` (the curator, now) wins, then ``declared`` (the project's known-bounds prior), then the
    history's unbiased estimate of the total count when history determines it; else ``(None, ...)``.
    """
    for value, source in ((given, "given by the curator"), (declared, "the project's declared table size")):
        if value is not None:
            if not (math.isfinite(value) and value > 0):
                raise DpdeskError(f"table size ({value!r}) must be a positive number")
            return float(value), source
    if len(history):
        e = history.estimate(universal(tuple(history.shape)))
        if e.estimable and float(e.estimate) > 0:
            return float(e.estimate), "estimated from the released history (its unbiased total)"
    return None, "unknown"


@dataclass(frozen=True)
class HistoryInputs:
    """What both plans read, taken from one moment of the ledger: the released rows, ``n``, ``p0``, the basis."""

    released: Released
    table_size: float | None
    size_source: str
    prior: tuple[np.ndarray, ...] | None
    prior_attributes: tuple[str, ...]
    basis: Basis
    left_out: int = 0  # releases the ledger view keeps out of History (answered from their own structure)


def history_inputs(
    history: Any,
    names: Sequence[str],
    basis: Basis,
    *,
    table_size: float | None = None,
    declared_size: float | None = None,
    left_out: int = 0,
) -> HistoryInputs:
    """Copy what the plans need out of ``history`` (quick; the caller may hold the history's lock)."""
    history = history.counts()  # the estimates model counts (a history over measures: its count rows)
    if len(history) == 0:
        raise DpdeskError("the history has no released answers yet: a zero-cost estimate needs released rows")
    n, source = public_table_size(history, table_size, declared_size)
    prior, used = marginal_prior(history, names)
    return HistoryInputs(Released.from_history(history), n, source, prior, used, basis, int(left_out))


def _prior_line(attributes: tuple[str, ...]) -> str:
    if attributes:
        return f"prior p0 from released 1-way marginals of: {', '.join(attributes)}"
    # p0 is not free (the seed spends budget on it): offer the priced release rather than reading the data
    return (
        "prior p0: uniform — history determines no 1-way marginal; releasing them (priced and ledgered: "
        "dpdesk release publish PROJECT --marginals 1 --alpha A) gives an informed p0"
    )


def _query_json(query: Query) -> dict[str, Any] | None:
    """The query as recorded (sparse JSON), unless its support is too large to list."""
    return query.to_json() if query.support_size() <= 1_000_000 else None


ERROR_CONFIDENCE = 0.95  # the confidence an estimate's error statement is made at


@dataclass(frozen=True)
class EstimatePlan:
    """A zero-cost, biased kernel-PCA estimate of one query, ready to be recorded (module docstring)."""

    query: Query
    text: str
    estimate: ShrinkageEstimate
    tau_source: str  # "given" or "cross-validation"
    cv: CVCurve | None
    unbiased: Any  # the history's own Estimate (BLUE) of the query, estimable or not
    table_size: float | None
    size_source: str
    prior_attributes: tuple[str, ...]
    history_rows: int
    basis: Basis
    left_out: int = 0
    mechanism: PostProcessing = SHRINKAGE_ESTIMATE
    request_id: str | None = None
    releasable: bool = True
    reason: str = "a zero-cost estimate from released answers (post-processing, biased)"
    needs_data: bool = False
    charge: Charge = field(default_factory=Charge)

    @property
    def value(self) -> float:
        return self.estimate.value

    @property
    def tau(self) -> float:
        return self.estimate.tau

    @property
    def biased(self) -> bool:
        """Every finite τ shrinks; at τ = ∞ only a query history does not determine is still biased."""
        return math.isfinite(self.tau) or not self.estimate.estimable

    def record(self) -> dict[str, Any]:
        return {
            "query": _query_json(self.query),
            "text": self.text,
            "estimate": self.value,
            "values": [self.value],
            "description": f"{'biased' if self.biased else 'unbiased'} zero-cost estimate of {self.text} at τ = "
            f"{'∞' if not math.isfinite(self.tau) else format(self.tau, '.4g')}",
            "tau": _num(self.tau),
            "tau_source": self.tau_source,
            "noise_std": self.estimate.noise_std,
            "distance": self.estimate.distance,
            "biased": self.biased,
            "table_size": self.table_size,
            "table_size_source": self.size_source,
            "prior_attributes": list(self.prior_attributes),
            "history_prefix": self.history_rows,
            "cv": None if self.cv is None else self.cv.to_json(),
        }

    def draw(self, cube: Any, sampler: Any, *, allow_insecure: bool = False) -> dict[str, Any]:
        return {}  # post-processing: nothing is drawn, the data is never read

    def to_json(self) -> dict[str, Any]:
        out = self.record()
        out.update(
            kind=self.mechanism.kind,
            mechanism=self.mechanism.name,
            alpha=0.0,
            unbiased_estimable=bool(self.unbiased.estimable),
            unbiased=None if not self.unbiased.estimable else float(self.unbiased.estimate),
        )
        stated = self.error_statement()
        out["error"] = (
            None
            if stated is None
            else {"half_width": stated[0], "confidence": ERROR_CONFIDENCE, "text": stated[1]}
        )
        return out

    def error_statement(self, confidence: float = ERROR_CONFIDENCE) -> tuple[float, str] | None:
        """An error bound that holds for *this* query, or None when none can be given.

        Where history determines the query, its unbiased estimate ``û`` (variance ``v``) lies within
        ``√(v/(1 − c))`` of the truth with probability ≥ ``c`` (Chebyshev: any noise law), and the shrunk
        estimate differs from ``û`` by a known amount (both are computed from released values). Their sum
        bounds the error at confidence ``c``. Where history does not determine the query nothing bounds
        its bias: None. Returns ``(half-width, words)``.
        """
        if not self.unbiased.estimable:
            return None
        u, v = float(self.unbiased.estimate), float(self.unbiased.variance)
        shift = abs(self.value - u)
        half = shift + math.sqrt(max(v, 0.0) / (1.0 - confidence))
        how = "Chebyshev's bound on history's unbiased estimate" + (
            f" plus the shrinkage's shift of {shift:.3g}" if shift > 0 else ""
        )
        return half, f"±{half:.3g} at {100 * confidence:g} % confidence ({how})"

    def lines(self) -> list[str]:
        """The preview the curator reads before recording it: the estimate with the error statement that
        holds for this query, or a plain warning that there is none — never a number that reads like its
        error but is not (the noise it carries, the cross-validation's error over other queries)."""
        e = self.estimate
        out = [
            f"zero-cost estimate of {self.text} from {self.history_rows} released answers (kernel-PCA shrinkage)"
        ]
        tau = "∞" if not math.isfinite(e.tau) else f"{e.tau:.4g}"
        stated = self.error_statement()
        if stated is None:
            out.append(
                f"estimate {e.value:.6g} at shrinkage τ = {tau} ({self.tau_source}); BIASED — it meets no "
                "accuracy requirement and is not a confidence statement"
            )
            out.append(
                "NO ERROR BOUND: history does not determine this query, so nothing limits how far this "
                "estimate is from the true answer — it can be off by more than the answer itself. Use it as "
                "a guess only; for an answer with an accuracy, assess the request (a fresh answer)."
            )
        else:
            kind = "BIASED (shrunk towards the prior)" if self.biased else "history's unbiased estimate"
            out.append(
                f"estimate {e.value:.6g} at shrinkage τ = {tau} ({self.tau_source}); {kind}; it meets no "
                "request's accuracy by itself (assess the request for that)"
            )
            out.append(f"error: within {stated[1]} — this bound holds for this query")
            if self.biased:
                out.append(
                    f"history answers this query without bias: {float(self.unbiased.estimate):.6g} — prefer a "
                    "count request"
                )
        if self.cv is not None:
            out.append(
                f"τ chosen by {self.cv.k}-fold cross-validation on the {self.cv.m} released rows (how well "
                "other queries are fitted; it says nothing of this estimate's error)"
            )
            if self.prior_attributes:  # the seed releases p0 separately; here it comes from the same answers
                out.append(
                    "caution: p0 is read from the same released answers the folds hold out, so that choice "
                    "is optimistic"
                )
        n = "none (the history estimates the total)" if self.table_size is None else f"{self.table_size:.6g}"
        out.append(f"table size: {n} — {self.size_source}")
        out.append(_prior_line(self.prior_attributes))
        if self.left_out:
            out.append(
                f"not used: {self.left_out} large release(s) the ledger answers from their own structure"
            )
        out.append("privacy cost: none (post-processing of released answers; recorded in the ledger)")
        return out


def plan_estimate(
    inputs: HistoryInputs,
    query: Query,
    unbiased: Any,
    *,
    text: str | None = None,
    tau: float | None = None,
    progress: Callable[[float], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> EstimatePlan:
    """The kernel-PCA estimate of ``query`` from the released rows (public inputs only), as a release plan.

    ``unbiased`` is the history's own estimate of the query (shown beside it). ``tau`` None chooses τ by
    5-fold cross-validation on the history (its RMSE estimate is shown); ``math.inf`` asks for the
    unbiased estimate, which exists only where history determines the query.
    """
    if tau is not None and not tau > 0:
        raise DpdeskError(f"tau ({tau!r}) must be a positive number (inf: the unbiased estimate)")
    released = inputs.released
    model = ShrinkageModel.fit(
        released, table_size=inputs.table_size, prior=inputs.prior, cancelled=cancelled
    )
    if progress is not None:
        progress(0.3)
    cv = None
    if tau is None:
        if len(released) < 2 * FOLDS:
            raise DpdeskError(
                f"choosing τ by {FOLDS}-fold cross-validation needs at least {2 * FOLDS} released "
                f"answers, the history has {len(released)}: give τ"
            )
        cv = cross_validate(
            model,
            k=FOLDS,
            cancelled=cancelled,
            progress=None if progress is None else (lambda f: progress(0.3 + 0.6 * f)),
        )
        tau = cv.best_tau
    if progress is not None:
        progress(0.9)
    est = model.estimate(query, tau)
    return EstimatePlan(
        query,
        text or query.describe(),
        est,
        "given" if cv is None else "cross-validation",
        cv,
        unbiased,
        inputs.table_size,
        inputs.size_source,
        inputs.prior_attributes,
        len(released),
        inputs.basis,
        inputs.left_out,
    )


def recompute_estimate(payload: Any, history: Any, names: Sequence[str]) -> float | None:
    """The value a recorded estimate entry must hold, re-derived from ``history`` (the rows before it).

    Uses the recorded query, τ and table size, and the prior rebuilt from history as :func:`marginal_prior`
    does; None when the entry did not record its query (a support too large to list).
    """
    from dpdesk.engine.queries.query import query_from_json

    if payload.get("query") is None:
        return None
    history = history.counts()
    shape = tuple(history.shape)
    query = query_from_json(payload["query"], int(math.prod(shape)), shape)
    tau = math.inf if payload["tau"] == "inf" else float(payload["tau"])
    size = payload.get("table_size")
    prior, _ = marginal_prior(history, names)
    model = ShrinkageModel.fit(
        Released.from_history(history), table_size=None if size is None else float(size), prior=prior
    )
    return model.estimate(query, tau).value
