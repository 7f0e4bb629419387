"""Plan the release for a batch of pending requests: the cheapest measurements after which every request
of the batch that the budget can cover is answerable from history at its own (ε, δ).

For each candidate :class:`~dpdesk.engine.planning.strategies.Strategy` (rows with relative budgets, so
that releasing them at scale ``t`` raises cell ``j``'s cost by ``t·P_j``):

1. *search* — for each request, the BLUE from the strategy's rows alone at ``t = 1`` and its exact
   posterior; scaling every row's budget by ``t`` divides every noise scale by ``t``, so the request is
   met from ``t_i = w_i / ε_i`` on, with ``w_i`` its narrowest ``1 − δ_i`` half-width at ``t = 1``
   (exact for continuous Laplace noise; the check below settles the rest);
2. *choose ``t``* — the largest ``t`` the hard total allows (and, under a spend policy, at most ``cap``
   of it, at least ``floor``: the batch is paced like one purchase) covers every request with
   ``t_i ≤ t``; ``t`` is the largest such ``t_i``: no more than needed;
3. *check* — the history as it would be after the release (the released rows plus the strategy's at
   ``t``) is asked, request by request, whether it meets (ε, δ) with the engine's own test
   (:func:`~dpdesk.engine.answering.workflow.answerable`, the exact posterior less its error bound).
   Only requests that pass are *planned*.

The same check is made for answering the batch one by one under today's rules (Fig. 4 with fusion and
the spend policy, in queue order): that is a candidate too, so the chosen plan — most requests answered,
then the smallest system cost — is never worse than one by one. Everything is public: the requests,
their (ε, δ), the history's rows (their queries and budgets; not their values), the per-cell costs and
the settings. No released value and no data is read.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from dpdesk.engine.answering.request import Request, Settings
from dpdesk.engine.answering.workflow import assess
from dpdesk.engine.errors import Cancelled, DpdeskError
from dpdesk.engine.inference.history import History, HistoryRow
from dpdesk.engine.mechanisms.laplace import NoiseMechanism
from dpdesk.engine.mechanisms.registry import check_method, family_for, noise_family
from dpdesk.engine.planning.checks import FREE_LIMIT, Checker, uncovered
from dpdesk.engine.planning.plan import BatchPlan, Candidate, Measurement, PlannedRequest, costs_after
from dpdesk.engine.planning.search import (
    EXACT,
    LOWER_TRY,
    Confidences,
    Guess,
    Score,
    exact_check,
    joint,
    margin,
    predict,
    rise,
)
from dpdesk.engine.planning.strategies import Strategy, candidate_strategies
from dpdesk.engine.planning.topup import beats as _beats
from dpdesk.engine.planning.topup import confirm as _confirm
from dpdesk.engine.planning.topup import misses as _misses
from dpdesk.engine.planning.topup import probe as _probe
from dpdesk.engine.planning.topup import settled as _settled
from dpdesk.engine.planning.topup import top_up as _top_up
from dpdesk.engine.queries.query import Query

__all__ = ["plan_batch"]


def plan_batch(
    history: History,
    requests: Sequence[Request],
    settings: Settings | float,
    *,
    cell_costs: np.ndarray | None = None,
    family: Any = None,
    ordered: Sequence[bool] | None = None,
    method: str = "fft",
    releases: Sequence[tuple[int, Any]] = (),
    strategies: Sequence[Strategy] | None = None,
    progress: Callable[[float], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> BatchPlan:
    """Plan the release that answers the most of ``requests`` at the smallest rise of the system cost.

    Parameters
    ----------
    history, cell_costs
        What has been released (rows: queries and budgets) and the ledger's per-cell costs (default:
        the history's own).
    requests
        The batch, in queue order (one-by-one answering follows it); each with its own (ε, δ).
    settings
        The curator's rules (total budget, spend policy, fusion); a number is the total budget.
    family
        Noise family of the measurements (default: the registry's preferred family for each row).
    ordered
        Per axis, whether its positions are ordered (numeric bins): range trees are tried on those.
    method
        Posterior method of the exact check (``mc`` is replaced by ``fft``: a plan must be reproducible).
    strategies
        Candidate strategies (default: :func:`~dpdesk.engine.planning.strategies.candidate_strategies`).

    Returns
    -------
    BatchPlan
        Measurements (possibly none), each request's status, the candidates tried and the one-by-one
        fallback. Nothing is drawn and no data is read.
    """
    t0 = time.perf_counter()
    if not isinstance(settings, Settings):
        settings = Settings(settings)
    check_method(method)
    if not requests:
        raise DpdeskError("a batch plan needs at least one pending request")
    ids = [r.id for r in requests]
    if len(set(ids)) != len(ids):
        raise DpdeskError(
            "a batch lists request " + repr(next(i for i in ids if ids.count(i) > 1)) + " twice"
        )
    planner = _Planner(history, requests, settings, cell_costs, family, method, releases, progress, cancelled)
    planner.one_by_one()
    if planner.pending:
        planner.search(strategies, ordered)
    return planner.plan(t0)


class _Planner:
    """One batch plan's state: the requests alone, one by one under today's rules, the checked
    strategies, and the choice among them (most requests answered, then the smallest system cost)."""

    def __init__(
        self,
        history: History,
        requests: Sequence[Request],
        settings: Settings,
        cell_costs: np.ndarray | None,
        family: Any,
        method: str,
        releases: Sequence[tuple[int, Any]],
        progress: Callable[[float], None] | None,
        cancelled: Callable[[], bool] | None,
    ) -> None:
        self.history, self.requests, self.settings, self.family = history, requests, settings, family
        self.method = "fft" if method == "mc" else method
        self.releases, self.cancelled = releases, cancelled
        self.report = progress or (lambda f: None)
        self.costs0 = np.asarray(history.cell_costs if cell_costs is None else cell_costs, dtype=float)
        self.total = settings.total_budget
        self.sys0 = float(self.costs0.max()) if self.costs0.size else 0.0
        self.alone, self.now_ok = self._alone()
        self.pending = [r for r, ok in zip(requests, self.now_ok) if not ok]
        self.checker = Checker(history, self.method, releases, cancelled)
        self.checked: list[tuple[Score, str, list[Measurement], Confidences | None]] = []
        self.obo_conf: list[float | None] | None = None

    def fam(self, q: Query) -> NoiseMechanism:
        # in the project's unit: the discrete Gaussian under zCDP (its map in ρ, like the costs and total)
        return noise_family(self.family) if self.family is not None else family_for(q, self.settings.measure)

    def _assess(self, history: History, r: Request, costs: np.ndarray) -> Any:
        return assess(
            history,
            r,
            self.settings,
            cell_costs=costs,
            method=self.method,
            family=self.family,
            releases=self.releases,
            decision_only=True,
        )

    def _alone(self) -> tuple[list[float | None], list[bool]]:
        """Each request against today's history (today's rules): the system-cost rise it would make
        alone (0: answerable now, None: refused) and whether it is answerable now; what it would spend on
        its cells alone goes to ``alone_alpha`` (the system cost may not move)."""
        alone: list[float | None] = []
        now_ok: list[bool] = []
        self.alone_alpha: list[float | None] = []
        for k, r in enumerate(self.requests):
            if self.cancelled is not None and self.cancelled():
                raise Cancelled("batch planning cancelled")
            a = self._assess(self.history, r, self.costs0)
            now_ok.append(a.decision == "infer")
            rise_alone = (
                float(a.budget.system_cost_after or 0.0) - self.sys0 if a.decision == "spend" else None
            )
            alone.append(0.0 if a.decision == "infer" else rise_alone)
            self.alone_alpha.append(
                0.0 if a.decision == "infer" else (float(a.spend_alpha) if a.decision == "spend" else None)
            )
            self.report(0.25 * (k + 1) / len(self.requests))
        return alone, now_ok

    def one_by_one(self) -> None:
        """Today's rules, request after request (placeholder values: decisions do not read them)."""
        self.seq_hist = self.history.copy()
        self.seq_costs = self.costs0.copy()
        self.seq_rows: list[Measurement] = []
        self.seq_ok: list[bool] = []
        self.seq_margin: list[
            float
        ] = []  # how far each cleared its (ε, δ) at its turn: closest checked first
        self.seq_row_of: dict[int, int] = {}  # pending index -> its own measurement in seq_rows
        for k, r in enumerate(self.pending):
            a = self._assess(self.seq_hist, r, self.seq_costs)
            self.seq_ok.append(a.decision != "reject")
            self.seq_margin.append(margin(a))
            if a.decision == "spend":
                m = Measurement(r.query, float(a.spend_alpha), a.noise.name)
                self.seq_row_of[k] = len(self.seq_rows)
                self.seq_rows.append(m)
                self.seq_hist.append(HistoryRow(m.query, m.alpha, 0.0, m.family))
                self.seq_costs = self.seq_costs + m.charge.dense(self.seq_costs.size)
        # one by one answers at most the requests it did not refuse at their turn (only those are checked
        # on its final history): that bound and its cost decide whether its own exact check is needed at all
        self.obo_bound = sum(self.seq_ok)
        self.obo_cost = float(self.seq_costs.max()) if self.seq_costs.size else 0.0
        self.report(0.5)

    def score(self, rows: list[Measurement], conf: Confidences) -> Score:
        after = costs_after(self.costs0, rows)
        return sum(c is not None for c in conf), (float(after.max()) if after.size else 0.0), after

    def search(self, strategies: Sequence[Strategy] | None, ordered: Sequence[bool] | None) -> None:
        """The search's guesses, the exact check of the most promising, and one by one's own check only
        while it could still win."""
        pending, settings = self.pending, self.settings
        if strategies is None:
            weights = [self.fam(r.query).alpha_for(r.query.sensitivity, r.eps, r.delta) for r in pending]
            strategies = candidate_strategies([r.query for r in pending], weights, ordered=ordered)
        room = self.total - self.costs0
        guesses = [g for g in (predict(s, pending, room, settings) for s in strategies) if g is not None]
        together = joint(pending, room, settings, self.fam)
        if together is not None:
            guesses.append(together)
        # the exact check (a history with the rows, every request's exact posterior) for the most promising
        # strategies by the search's reckoning, and only if they may beat one by one
        guesses.sort(key=lambda g: (-int(g[2].sum()), g[3]))
        self.guesses: list[Guess] = guesses
        self.tried: set[int] = set()
        self.exact = EXACT if len(pending) <= LOWER_TRY else 1
        # strategies the search expects to answer as many as one by one could at most are checked first:
        # one by one's own check then stops as soon as it cannot beat them
        self.check_beating(self.obo_bound, self.obo_cost, ties=True)
        top = max((c[0] for c in self.checked), key=lambda sc: (sc[0], -sc[1]), default=None)
        if top is None or not _beats(top[0], top[1], self.obo_bound, self.obo_cost):
            self.check_one_by_one(top)

    def check_beating(self, n_ref: int, cost_ref: float, ties: bool = False) -> None:
        """The exact check of the guesses that may beat ``n_ref`` requests at ``cost_ref`` (or tie)."""
        for k, g in enumerate(self.guesses):
            if len(self.tried) >= self.exact:
                return
            n_g = int(g[2].sum())
            if k in self.tried or not (
                _beats(n_g, rise(g, self.costs0), n_ref, cost_ref) or (ties and n_g >= n_ref)
            ):
                continue
            self.tried.add(k)
            s, t, target, _cost, t_lim, maybe = g
            lower = len(self.pending) <= LOWER_TRY
            rows, conf = exact_check(
                s, t, target, t_lim, self.pending, self.checker, self.fam, maybe, lower=lower
            )
            self.checked.append((self.score(rows, conf), s.name, rows, conf))
            self.report(0.5 + 0.4 * len(self.tried) / self.exact)

    def check_one_by_one(self, top: Score | None) -> None:
        """One by one may still win (a tie goes to it): it keeps at least ``need`` requests or loses."""
        need = top[0] + (1 if self.obo_cost > top[1] else 0) if top is not None else 0
        order = np.argsort(self.seq_margin)
        obo_conf, complete = self.checker.checked(
            self.seq_hist, self.pending, self.seq_ok, order=order, allowed_misses=self.obo_bound - need
        )
        short = [
            k
            for k in _misses(obo_conf, self.seq_ok, order, None if complete else self.obo_bound - need)
            if k in self.seq_row_of
        ]
        done = len(self.tried) >= self.exact
        bound = None  # set when one by one's topped-up rows are left unchecked: what they answer at most
        if short and not complete:
            bound, short = self._probe(short, top, done)
        if (
            short
        ):  # borderline fused answers: their own rows raised a little until the final history meets them
            obo_conf, complete, bound = self._top_up(short, obo_conf, complete, top, done)
        if (
            bound is not None
        ):  # a checked strategy beats even that bound: the full check could not change the plan
            self.obo_bound, self.obo_conf = bound, None
        elif complete:
            self.obo_conf = obo_conf
            self.check_beating(sum(c is not None for c in obo_conf), self.obo_cost)
        else:
            self.obo_bound, self.obo_conf = need - 1, None

    def _probe(self, short: list[int], top: Score | None, done: bool) -> tuple[int | None, list[int]]:
        """More short than one by one can afford: if raising their own rows does not meet enough of them,
        one by one has lost whatever the rest of its history answers. ``(bound or None, still short)``."""
        probe = _probe(
            self.seq_rows, self.seq_row_of, short, self.pending, self.checker, self.costs0, self.total
        )
        if probe is not None:
            p_costs = costs_after(self.costs0, probe[0])
            p_cost, p_bound = float(p_costs.max()), self.obo_bound - probe[1]
            if _settled(top, p_bound, p_cost, done):
                self.seq_rows, self.seq_costs, self.obo_cost = probe[0], p_costs, p_cost
                return p_bound, []
        return None, short

    def _top_up(
        self, short: list[int], obo_conf: Confidences, complete: bool, top: Score | None, done: bool
    ) -> tuple[Confidences, bool, int | None]:
        """One by one's short rows raised until its final history meets them: ``(confidences, complete,
        bound or None)``."""
        self.seq_rows, obo_conf, last, hist = _top_up(
            self.seq_rows,
            self.seq_row_of,
            self.seq_ok,
            short,
            obo_conf,
            self.pending,
            self.checker,
            self.costs0,
            self.total,
        )
        self.seq_costs = costs_after(self.costs0, self.seq_rows)
        self.obo_cost = float(self.seq_costs.max()) if self.seq_costs.size else 0.0
        if hist is None:
            return obo_conf, complete, None
        assert last is not None  # a step was taken: its check and its history come together
        # the last raise's check asked its requests of these very rows: its misses are misses
        bound = self.obo_bound - sum(1 for k in np.flatnonzero(last) if obo_conf[k] is None)
        if _settled(top, bound, self.obo_cost, done):
            return obo_conf, complete, bound
        return _confirm(obo_conf, last, hist, self.seq_ok, self.pending, self.checker), True, None

    def plan(self, t0: float) -> BatchPlan:
        """The best candidate (most answered, then cheapest; ties to one by one) and every request's status."""
        obo_conf = self.obo_conf if self.obo_conf is not None or self.pending else []
        self.report(0.9)
        if obo_conf is not None:
            obo_score = self.score(self.seq_rows, obo_conf)
        else:
            obo_score = (self.obo_bound, self.obo_cost, self.seq_costs)
        results = [(obo_score, "one by one", self.seq_rows, obo_conf), *self.checked]
        cands = tuple(
            Candidate(name, sc[0], sc[1], len(rows), conf is not None) for sc, name, rows, conf in results
        )
        (best_n, _best_cost, after), name, rows, conf = max(
            (r for r in results if r[3] is not None),
            key=lambda r: (r[0][0], -r[0][1], r[1] == "one by one"),
        )
        if best_n == 0:
            name, rows, after = "none", [], self.costs0.copy()
        statuses = self._statuses(name, rows, conf if best_n else None, after)
        after.setflags(write=False)
        return BatchPlan(
            name,
            tuple(rows),
            statuses,
            self.total,
            self.sys0,
            float(after.max()) if after.size else 0.0,
            cands[0],
            cands,
            after,
            (time.perf_counter() - t0) * 1000.0,
        )

    def _statuses(
        self, name: str, rows: list[Measurement], conf: Confidences | None, after: np.ndarray
    ) -> tuple[PlannedRequest, ...]:
        final = self.checker.history_with(rows)
        by_id = {r.id: c for r, c in zip(self.pending, conf)} if conf is not None else {}
        requests, now_ok = self.requests, self.now_ok
        n_uncovered = sum(1 for r, ok in zip(requests, now_ok) if not ok and by_id.get(r.id) is None)
        out: list[PlannedRequest] = []
        for r, ok, al, aa in zip(requests, now_ok, self.alone, self.alone_alpha):
            if ok:
                reason = "answerable from history now (costs 0)"
                out.append(PlannedRequest(r, "answerable", al, None, reason=reason, alone_alpha=aa))
            elif by_id.get(r.id) is not None:
                reason = f"answerable from history after the plan ({name})"
                out.append(PlannedRequest(r, "planned", al, by_id[r.id], reason=reason, alone_alpha=aa))
            else:
                free = n_uncovered <= FREE_LIMIT
                u = uncovered(
                    r, al, final, after, self.total, self.fam, self.method, self.releases, free=free
                )
                out.append(replace(u, alone_alpha=aa))
        return tuple(out)
