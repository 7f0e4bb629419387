"""The query-answering systems of paper §6.4 (and dpdesk's), run over one request stream.

Every system sees the same requests and the same cube; each draws its own noise from a
:class:`~dpdesk.engine.mechanisms.noise.SeededSampler` (simulation randomness, not real releases). Per request the
system either *answers* — releasing a value and the interval ``[L, L + 2ε]`` — or *rejects*. After each
request we record the system cost ``ᾱ`` (paper Thm 5.4) and, for the answer, whether the interval
covers the true answer (Def 6.2) and the relative error ``|θ̂ − θ| / 2ε`` (Def 6.3).

Systems (all charge per-cell costs and refuse a fresh answer that would pass the total budget):

* ``baseline`` — every request is answered fresh with one fixed α (the median Thm 5.3 α of the stream).
* ``improved baseline`` — fresh answers with Thm 5.3's α; history is never used.
* ``OLS`` — fresh answers with Thm 5.3's α, but the released value is the ordinary (unweighted) least
  squares estimate of the query over all released rows including the new one (paper ref. [18]).
* ``paper inference`` — dpdesk's engine with ``fusion=False``: infer from history when the posterior
  meets (ε, δ), else Thm 5.3's fresh answer (paper Fig. 4).
* ``dpdesk`` — ``fusion=True``: as above, but a fresh answer is fused with history and charged the
  fused α.
* ``dpdesk + bounds`` — as ``dpdesk`` with the known-bounds prior (table size = the cube's total).
* ``dpdesk + pacing`` — as ``dpdesk`` with the spend policy :data:`PACING` (bounded setting only: a
  policy paces a finite total budget).
* ``dpdesk + pacing + bounds`` — both.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpdesk.engine.answering.fresh import release_fresh, true_answer
from dpdesk.engine.answering.workflow import Request, Settings, assess
from dpdesk.engine.budget.accounting import fresh_alpha
from dpdesk.engine.budget.policy import SpendPolicy
from dpdesk.engine.inference.history import History, HistoryRow
from dpdesk.engine.inference.prior import BoundedPrior
from dpdesk.engine.mechanisms.laplace import LAPLACE
from dpdesk.engine.mechanisms.noise import SeededSampler
from dpdesk.engine.queries.query import Query
from evaluation.data import Dataset, RequestSpec

SYSTEMS = (
    "baseline",
    "improved baseline",
    "OLS",
    "paper inference",
    "dpdesk",
    "dpdesk + bounds",
    "dpdesk + pacing",
    "dpdesk + pacing + bounds",
)
BOUNDED_ONLY = ("dpdesk + pacing", "dpdesk + pacing + bounds")
# spend at least 10% of a query's headroom, decline a request needing more than half of it
PACING = SpendPolicy(floor=0.1, cap=0.5)
INFERENCE = ("paper inference", "dpdesk", "dpdesk + bounds", "dpdesk + pacing", "dpdesk + pacing + bounds")
FAMILY = "laplace"  # the paper's mechanism (continuous Laplace) for every system


@dataclass
class Trace:
    """Per-request outcomes of one system on one stream."""

    system_cost: np.ndarray  # ᾱ after each request
    answered: np.ndarray  # bool
    covered: np.ndarray  # bool (False when not answered)
    rel_error: np.ndarray  # |θ̂−θ|/2ε (nan when not answered)
    inferred: np.ndarray  # bool: answered from history for free
    spent: np.ndarray  # α charged


def tree_rows(n_leaves: int, shape: tuple[int, ...], total_alpha: float) -> list[tuple[Query, float]]:
    """A binary hierarchical partitioning tree over cells ``0..n_leaves−1`` (Hay et al.), every level at
    ``total_alpha / levels`` so each cell's cost is ``total_alpha``."""
    ranges = []
    level = [(0, n_leaves)]
    while level:
        ranges.append(level)
        nxt = []
        for lo, hi in level:
            if hi - lo > 1:
                mid = (lo + hi) // 2
                nxt += [(lo, mid), (mid, hi)]
        level = nxt
    a = total_alpha / len(ranges)
    rows = []
    for lv in ranges:
        for lo, hi in lv:
            q = Query(shape, indices=np.arange(lo, hi, dtype=np.int64), values=np.ones(hi - lo))
            rows.append((q, a))
    return rows


def _ols_row(q: Query, answer: float) -> HistoryRow:
    # unit noise scale for every row: whitening weights all equal, so the BLUE machinery computes OLS
    return HistoryRow(q, q.sensitivity, answer, "laplace")


def run_system(
    system: str,
    data: Dataset,
    stream: list[RequestSpec],
    *,
    total: float,
    initial: list[tuple[Query, float]],
    seed: int,
    fixed_alpha: float,
    policy: SpendPolicy | None = None,
) -> Trace:
    k = len(stream)
    tr = Trace(
        np.zeros(k), np.zeros(k, bool), np.zeros(k, bool), np.full(k, np.nan), np.zeros(k, bool), np.zeros(k)
    )
    sampler = SeededSampler(seed)
    cube = data.cube
    shape = cube.schema.shape
    uses_history = system == "OLS" or system in INFERENCE
    hist = History(shape) if uses_history else None
    ols = History(shape) if system == "OLS" else None
    costs = np.zeros(data.n)
    # the initial history (unbounded setting): released once, shared knowledge for every system
    init_sampler = SeededSampler(seed + 7919)
    for q, a in initial:
        y = init_sampler.release(FAMILY, true_answer(q, cube), q.sensitivity / a)
        costs += LAPLACE.charge_for(q, a).dense(costs.size)
        if hist is not None:
            hist.append(HistoryRow(q, a, y, FAMILY))
        if ols is not None:
            ols.append(_ols_row(q, y))
    prior = BoundedPrior(max(data.total, 1)) if system.endswith("+ bounds") else None
    if policy is None and "pacing" in system:
        policy = PACING
    for i, spec in enumerate(stream):
        q, eps, delta = spec.query, spec.eps, spec.delta
        theta = true_answer(q, cube)
        released = None
        if system in INFERENCE:
            assert hist is not None
            settings = Settings(total, policy=policy, prior=prior, fusion=system != "paper inference")
            a = assess(hist, Request(str(i), q, eps, delta), settings, family=FAMILY)
            if a.decision == "infer":
                released, lo = a.release_estimate, a.release_interval[0]
                tr.inferred[i] = True
            elif a.decision == "spend":
                fresh = release_fresh(a, cube, sampler, allow_insecure=True)
                hist.append(fresh.history_row())
                costs = np.asarray(a.budget.cell_costs_after)
                released, lo = fresh.released, fresh.released - eps
                tr.spent[i] = fresh.alpha
        else:
            alpha = fixed_alpha if system == "baseline" else fresh_alpha(q.sensitivity, eps, delta, FAMILY)
            after = costs + LAPLACE.charge_for(q, alpha).dense(costs.size)
            if after.max() <= total:
                costs = after
                y = sampler.release(FAMILY, theta, q.sensitivity / alpha)
                released = y
                tr.spent[i] = alpha
                if ols is not None:
                    ols.append(_ols_row(q, y))
                    released = ols.estimate(q).estimate
                lo = released - eps
        tr.system_cost[i] = float(costs.max())
        if released is not None:
            tr.answered[i] = True
            tr.covered[i] = lo - 1e-9 <= theta <= lo + 2 * eps + 1e-9
            tr.rel_error[i] = abs(released - theta) / (2 * eps)
    return tr
