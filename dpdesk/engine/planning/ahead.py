"""Plans that look ahead: measure, once, a strategy for the workload the queue has shown so far.

Planning each batch alone is myopic. It buys, for the batch's requests, exactly the budget they need,
and the next batch on the same cells buys again. Two small purchases on a cell carry less information
than one purchase of their sum, because a row's precision grows as α² while its cost grows as α. The
queue's past requests are public. A strategy measured for the whole workload seen so far, on cells
nobody has paid for yet, serves the later requests that overlap it for free. This is what the matrix
mechanism (Li et al.) and HDMM (McKenna et al.) do when the workload is known in advance.

:func:`ahead_strategies` builds the candidates from the seen workload. Only rows whose every cell is
still unspent are kept, so the strategy goes where no row has been bought yet:

* ``ahead: identity`` — every unspent cell the workload touches;
* ``ahead: product`` — HDMM's product form. It is the Kronecker product, over the attributes, of a
  binary range tree spanning the whole axis (ordered attributes some request varies over), the total
  and every value (p-Identity with one extra row: unordered attributes that vary), or the total (the
  attributes no request varies over);
* ``ahead: marginals`` — HDMM's marginals: for each set of attributes some request varies over, the
  marginal table on them over their whole axes (each a Kronecker product of identities and totals),
  evenly weighted. A range over one or two ordered attributes is a sum of cells of one marginal, so
  a cell's budget is shared by a handful of rows instead of the product's sixteen or so.

:func:`plan_ahead` measures the best of them (the one under which the search meets the most seen
requests) at ``share`` of the room its cells have left. That is a share of a finite total: with no
effective total, leave the look-ahead off. It then plans the batch with
:func:`~dpdesk.engine.planning.planner.plan_batch` on the would-be history, so every request still
passes the exact-posterior check.

Whether the look-ahead is kept is judged for the queue, not for the batch alone
(:func:`queue_score`). A plan's score is the batch's requests it answers plus ``future`` times the
number of the queue's workload (the seen requests and the batch: the public sample of what the queue
asks) that its rows would meet *without having been bought for them*. Rows whose query is a batch
request's own (fresh answers, jointly weighted requests, top-ups) are left out of that count: a fresh
answer to one range says little about the next range, and counting it would credit a plan with the
requests it was fitted to. A strategy's rows (identity, marginals, trees) are not any one request's,
so they count for every workload request they meet. This is a leave-one-out estimate of how many of
the next requests like these the history will serve; with ``future`` = 1 it stands for as many more
requests to come as the queue has shown so far. The look-ahead is kept when its score is at least the
plain plan's; ``future`` = 0 judges the batch alone. Both counts use the search's reckoning
(:func:`~dpdesk.engine.planning.search.needed_scales`, the rows alone); every answer a plan reports
still passes the exact check. Everything is computed from public inputs: the requests' queries and
(ε, δ), the history's queries and budgets, the per-cell costs — never the data nor requests not seen.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from dpdesk.engine.answering.request import Request, Settings
from dpdesk.engine.answering.workflow import answerable, infer
from dpdesk.engine.inference.history import History, HistoryRow
from dpdesk.engine.mechanisms.laplace import NoiseMechanism
from dpdesk.engine.mechanisms.registry import family_for, noise_family
from dpdesk.engine.planning.plan import BatchPlan, LookAhead, Measurement, PlannedRequest, costs_after
from dpdesk.engine.planning.planner import plan_batch
from dpdesk.engine.planning.search import needed_scales
from dpdesk.engine.planning.strategies import ROW_LIMIT, Strategy, kronecker_axes, product_rows, workload_axes
from dpdesk.engine.queries.query import Query

__all__ = ["FUTURE", "SHARE", "ahead_strategies", "plan_ahead", "queue_score"]

# the share of the room left on its cells that a look-ahead strategy spends (chosen on tuning streams;
# docs/evaluation.md section batch-starved)
SHARE = 1.0
# the weight of the queue's workload against the batch when judging a look-ahead (:func:`queue_score`;
# chosen on tuning streams, docs/evaluation.md section batch-starved)
FUTURE = 1.0


def ahead_strategies(
    seen: Sequence[Query],
    cell_costs: np.ndarray,
    *,
    ordered: Sequence[bool] | None = None,
    row_limit: int = ROW_LIMIT,
) -> list[Strategy]:
    """Look-ahead strategies for the workload ``seen``, using cells whose cost is still 0."""
    if not seen:
        return []
    shape = seen[0].shape
    ordered = tuple(ordered) if ordered is not None else (True,) * len(shape)
    fresh = np.asarray(cell_costs) <= 0.0
    support, varying, _touched = workload_axes(list(dict.fromkeys(seen)))
    support = support[fresh[support]]
    if support.size == 0:
        return []
    out: list[Strategy] = []
    if support.size <= row_limit:
        rows = [Query(shape, indices=np.array([j], dtype=np.int64), values=np.ones(1)) for j in support]
        out.append(Strategy.build("ahead: identity", rows, np.ones(len(rows))))
    in_support = np.zeros(fresh.size, dtype=bool)
    in_support[support] = True

    def usable(per_axis: Sequence[Sequence[np.ndarray]]) -> list[Query]:
        """The Kronecker product's rows that meet the workload and whose every cell is unspent."""
        return [
            r
            for r in product_rows(shape, per_axis)
            if in_support[r.sparse()[0]].any() and fresh[r.sparse()[0]].all()
        ]

    # the whole of every varying axis (not only the positions seen): the look-ahead serves what comes next
    vary = frozenset(d for d in frozenset().union(*varying) if shape[d] > 1)
    per_axis = kronecker_axes(shape, vary, ordered, [range(n) for n in shape])
    if math.prod(len(p) for p in per_axis) <= 20 * row_limit:
        rows = usable(per_axis)
        if 0 < len(rows) <= row_limit:
            out.append(Strategy.build("ahead: product", rows, np.ones(len(rows))))
    # HDMM's marginals: for each set of attributes some request varies over, the product of the identity on
    # each of them (the whole axis) and the total on the others; a request is the sum of one marginal's rows
    subsets = sorted(
        {frozenset(d for d in v if shape[d] > 1) for v in varying} - {frozenset()},
        key=lambda a: (len(a), sorted(a)),
    )
    if subsets and sum(math.prod(shape[d] for d in a) for a in subsets) <= 20 * row_limit:
        rows = [
            r
            for a in subsets
            for r in usable(
                [
                    [_unit(shape[d], p) for p in range(shape[d])] if d in a else [np.ones(shape[d])]
                    for d in range(len(shape))
                ]
            )
        ]
        if 0 < len(rows) <= row_limit:
            out.append(Strategy.build("ahead: marginals", rows, np.ones(len(rows))))
    return out


def _unit(size: int, position: int) -> np.ndarray:
    v = np.zeros(size)
    v[position] = 1.0
    return v


def _best(
    strategies: Sequence[Strategy], seen: Sequence[Request], room: np.ndarray, share: float, cap: float
) -> tuple[Strategy, float, int] | None:
    """The strategy (and its scale) under which the most seen requests are met by the search's reckoning."""
    best: tuple[Strategy, float, int] | None = None
    for s in strategies:
        used = s.profile > 0
        t = share * min(cap, 1.0) * float(np.min(np.maximum(room[used], 0.0) / s.profile[used])) * (1 - 1e-9)
        need = needed_scales(s, seen)
        if t <= 0:
            continue
        met = int(np.sum(need <= t))
        if best is None or (met, -len(s)) > (best[2], -len(best[0])):
            best = (s, t, met)
    return best


def _serves(measurements: Sequence[Measurement], own: set[Query], workload: Sequence[Request]) -> int:
    """How many of ``workload`` the ``measurements`` not bought for a request of their own would meet (the
    search's reckoning: these rows alone, at their α's)."""
    rows = [m for m in measurements if m.query not in own]
    if not rows or not workload:
        return 0
    s = Strategy.build("rows", [m.query for m in rows], [m.alpha for m in rows])
    # Strategy.build scales the α's so the largest per-cell charge is 1: the rows' own α's are t = 1/scale
    t = rows[0].alpha / float(s.weights[0]) * (1 + 1e-9)
    return int(np.sum(needed_scales(s, workload) <= t))


def queue_score(
    plan: BatchPlan, requests: Sequence[Request], workload: Sequence[Request], future: float = FUTURE
) -> float:
    """A plan's worth for the queue: requests of the batch it answers plus ``future`` × the workload
    requests its rows meet without having been bought for them (module docstring)."""
    own = {r.query for r in requests}
    return plan.answered + (future * _serves(plan.measurements, own, workload) if future > 0 else 0.0)


def _family(family: str | None, q: Query) -> NoiseMechanism:
    return noise_family(family) if family is not None else family_for(q)


def _with_rows(history: History, rows: Sequence[Measurement]) -> History:
    """``history`` with ``rows`` appended (values are not known, nor needed: no decision reads one)."""
    out = history.copy()
    for m in rows:
        out.append(HistoryRow(m.query, m.alpha, 0.0, m.family))
    return out


def _look_ahead(
    name: str,
    share: float,
    rows: Sequence[Measurement],
    seen: int,
    costs0: np.ndarray,
    costs1: np.ndarray,
    alone_answered: int,
) -> LookAhead:
    """What the look-ahead rows spend for the queue: their strategy, share, rows, the queue's earlier
    requests, the cells they raise and the system cost after them."""
    return LookAhead(
        name,
        float(share),
        len(rows),
        seen,
        int(np.count_nonzero(costs1 > costs0)),
        float(costs1.max()),
        alone_answered,
    )


def _statuses(
    plain: BatchPlan,
    inner: BatchPlan,
    after: History,
    name: str,
    method: str,
    releases: Sequence[tuple[int, Any]],
) -> list[PlannedRequest]:
    """The inner plan's statuses with each request's ``alone`` from the plain plan; a request answerable
    only thanks to the look-ahead rows is *planned*, checked on the history after every row."""
    alone = {p.id: p.alone for p in plain.requests}
    alone_alpha = {p.id: p.alone_alpha for p in plain.requests}
    final = _with_rows(after, inner.measurements) if inner.measurements else after
    out = []
    for p in inner.requests:
        if p.status == "answerable" and alone[p.id] != 0.0:  # met thanks to the look-ahead rows
            inf = infer(final, p.request, method="fft" if method == "mc" else method, releases=releases)
            c = inf.confidence_at_eps
            conf = c - inf.error_bound if c is not None and answerable(inf, p.request) else None
            p = replace(
                p,
                status="planned",
                confidence=conf,
                reason=f"answerable from history after the plan ({name})",
            )
        out.append(replace(p, alone=alone[p.id], alone_alpha=alone_alpha[p.id]))
    return out


def plan_ahead(
    history: History,
    requests: Sequence[Request],
    settings: Settings | float,
    *,
    seen: Sequence[Request] = (),
    share: float = SHARE,
    future: float = FUTURE,
    cell_costs: np.ndarray | None = None,
    family: Any = None,
    ordered: Sequence[bool] | None = None,
    method: str = "fft",
    releases: Sequence[tuple[int, Any]] = (),
    progress: Callable[[float], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> BatchPlan:
    """Plan ``requests`` like :func:`plan_batch`, first measuring a strategy for ``seen`` + the batch.

    Parameters
    ----------
    seen
        The queue's earlier requests (public: their queries and (ε, δ)); the batch joins them.
    share
        Fraction of the room left on the strategy's cells that the look-ahead spends (0: none). A spend
        policy's cap limits it further.
    future
        Weight of the queue's workload against the batch when judging the look-ahead
        (:func:`queue_score`); 0 keeps it only when the batch answers at least as many as the plain plan.

    Returns
    -------
    BatchPlan
        The look-ahead rows followed by the batch's own. Every request reported covered passes the
        exact-posterior check on the history after all of them. Without a useful look-ahead (no unspent
        cells, or a lower :func:`queue_score` than the plain plan's) this is the plain plan.
    """
    t0 = time.perf_counter()
    settings = settings if isinstance(settings, Settings) else Settings(settings)
    if settings.accounting is not None:  # the share of the room is priced linearly in α: pure ε only
        share = 0.0
    costs0 = np.asarray(history.cell_costs if cell_costs is None else cell_costs, dtype=float)
    common = dict(family=family, ordered=ordered, method=method, releases=releases, cancelled=cancelled)
    step = progress or (lambda f: None)
    workload = list(seen) + list(requests)
    cap = 1.0 if settings.policy is None else settings.policy.cap
    room = settings.total_budget - costs0
    strategies = ahead_strategies([r.query for r in workload], costs0, ordered=ordered) if share > 0 else []
    pick = _best(strategies, workload, room, share, cap) if share > 0 else None
    if pick is None:
        return plan_batch(history, requests, settings, cell_costs=costs0, progress=progress, **common)
    plain = plan_batch(
        history, requests, settings, cell_costs=costs0, progress=lambda f: step(0.4 * f), **common
    )
    s, t, _met = pick
    rows = [Measurement(q, float(w) * t, _family(family, q).name) for q, w in zip(s.rows, s.weights)]
    after = _with_rows(history, rows)
    costs1 = costs_after(costs0, rows)
    inner = plan_batch(
        after, requests, settings, cell_costs=costs1, progress=lambda f: step(0.4 + 0.6 * f), **common
    )
    kept = replace(inner, measurements=tuple(rows) + inner.measurements)
    if queue_score(kept, requests, workload, future) < queue_score(plain, requests, workload, future):
        return plain
    out = _statuses(plain, inner, after, s.name, method, releases)
    return replace(
        kept,
        strategy=f"{s.name} + {inner.strategy}",
        requests=tuple(out),
        system_cost=plain.system_cost,
        one_by_one=plain.one_by_one,
        # the inner plan's candidates were tried on top of the look-ahead: named so, not repeated
        candidates=plain.candidates
        + tuple(replace(c, name=f"{s.name} + {c.name}") for c in inner.candidates),
        elapsed_ms=(time.perf_counter() - t0) * 1000.0,
        look_ahead=_look_ahead(s.name, share, rows, len(seen), costs0, costs1, plain.answered),
    )
