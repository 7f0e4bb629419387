"""The batch planner's checks on a would-be history, and a plan restricted to some of its measurements.

:class:`Checker` asks the engine's own test (:func:`~dpdesk.engine.answering.workflow.answerable`, the
exact posterior less its error bound) of a history made of the released rows and a plan's measurements —
their queries and budgets only, never a released value. :func:`uncovered` gives a request the plan does
not cover its counter-offer. :func:`without` re-plans without some measurements (those a watched claim
would decline, say): the requests left are checked again, exactly, and the ones no longer met are named
with the reason. Public inputs only.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import replace
from typing import Any

import numpy as np

from dpdesk.engine.answering.request import Request
from dpdesk.engine.answering.workflow import answerable, infer
from dpdesk.engine.budget.policy import headroom
from dpdesk.engine.errors import Cancelled, DpdeskError
from dpdesk.engine.inference.history import History, HistoryRow
from dpdesk.engine.mechanisms.laplace import NoiseMechanism
from dpdesk.engine.mechanisms.registry import family_for, noise_family
from dpdesk.engine.planning.plan import BatchPlan, Measurement, PlannedRequest
from dpdesk.engine.queries.query import Query
from dpdesk.engine.vocabulary import confidence_text

__all__ = ["FREE_LIMIT", "Checker", "narrowest_eps", "threads", "uncovered", "without"]

FREE_LIMIT = 25  # history's free ±ε (one posterior each) is given to at most this many uncovered requests


def narrowest_eps(family: Any, sensitivity: float, delta: float, room: float) -> tuple[float | None, float]:
    """The narrowest ±ε a fresh answer at ``delta`` can meet with at most ``room`` budget, and its α."""
    noise = noise_family(family)
    if not (room > 1e-9 and math.isfinite(room)):
        return None, 0.0
    guess = sensitivity * math.log(1.0 / delta) / room  # Thm 5.3 for continuous Laplace: a close bracket
    lo, hi = guess / 8.0, guess * 2.0
    while noise.alpha_for(sensitivity, hi, delta) > room:
        lo, hi = hi, hi * 4.0
        if hi > 1e15:  # no useful ±ε fits in what is left
            return None, 0.0
    for _ in range(30):  # α needed falls as ε widens: bisection on a monotone map
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if noise.alpha_for(sensitivity, mid, delta) <= room else (mid, hi)
    return hi, noise.alpha_for(sensitivity, hi, delta)


class Checker:
    """Asks a would-be history whether each request meets its (ε, δ) (the engine's exact test)."""

    def __init__(
        self,
        base: History,
        method: str,
        releases: Sequence[tuple[int, Any]],
        cancelled: Callable[[], bool] | None,
    ) -> None:
        self.base, self.method, self.releases, self.cancelled = base, method, releases, cancelled

    def history_with(self, rows: Sequence[Measurement]) -> History:
        h = self.base.copy()
        for m in rows:  # the values are not known (nor needed): the decision reads no released value
            h.append(HistoryRow(m.query, m.alpha, 0.0, m.family))
        return h

    def confidences(
        self, history: History, requests: Sequence[Request], only: Sequence[bool] | None = None
    ) -> list[float | None]:
        """Each request's confidence at ±ε less the error bound when history meets (ε, δ), else None
        (also None, unchecked, where ``only`` is False)."""
        return self.checked(history, requests, only)[0]

    def checked(
        self,
        history: History,
        requests: Sequence[Request],
        only: Sequence[bool] | None = None,
        *,
        order: Sequence[int] | np.ndarray | None = None,
        allowed_misses: int | None = None,
    ) -> tuple[list[float | None], bool]:
        """:meth:`confidences` asked in ``order``, stopping once more than ``allowed_misses`` of the asked
        requests fall short; with it whether every asked request was checked.

        With :func:`threads` above 1 the requests are asked that many at a time (one exact posterior each
        on the same history, most of it numpy work that releases the GIL); their answers are read in
        ``order`` exactly as one at a time, so the confidences and the stopping point are the same and
        the work past the stop is dropped."""
        out: list[float | None] = [None] * len(requests)
        asked = [k for k in (range(len(requests)) if order is None else order) if only is None or only[k]]
        width = min(threads(), len(asked))
        if width > 1:  # the history's factorisation and caches, built once here before threads read them
            history.estimate(requests[asked[0]].query)
        misses = 0
        for lo in range(0, len(asked), max(1, width)):
            if self.cancelled is not None and self.cancelled():
                raise Cancelled("batch planning cancelled")
            chunk = asked[lo : lo + width]
            if len(chunk) > 1:
                jobs = [_pool(width).submit(self._one, history, requests[k]) for k in chunk]
                wait(jobs)  # all done before any is read: nothing still reads the history once this returns
                got: Iterable[Callable[[], float | None]] = [j.result for j in jobs]
            else:
                got = [lambda: self._one(history, requests[chunk[0]])]
            for k, result in zip(chunk, got):
                c = result()  # in order: an error past the stopping point is never raised, as one at a time
                if c is not None:
                    out[k] = c
                else:
                    misses += 1
                    if allowed_misses is not None and misses > allowed_misses:
                        return out, False
        return out, True

    def _one(self, history: History, r: Request) -> float | None:
        inf = infer(history, r, method=self.method, releases=self.releases, decision_only=True)
        if answerable(inf, r) and inf.confidence_at_eps is not None:
            return inf.confidence_at_eps - inf.error_bound
        return None


def threads() -> int:
    """How many of a check's requests are asked at once: ``DPDESK_THREADS`` in the environment, else 1.

    One by default: on this project's measurements (docs/performance.md, "Threads for the exact checks") two
    threads gave no wall-clock gain on a shared 2-core machine and cost ~7 % more processor time (the
    GIL is held between the numpy calls); the setting is there to measure it where cores are idle."""
    raw = os.environ.get("DPDESK_THREADS", "").strip()
    if not raw:
        return 1
    if not raw.isdigit() or int(raw) < 1:
        raise DpdeskError(f"DPDESK_THREADS ({raw!r}) must be a whole number of threads, at least 1")
    return int(raw)


_POOLS: dict[int, ThreadPoolExecutor] = {}
_POOLS_LOCK = threading.Lock()


def _pool(width: int) -> ThreadPoolExecutor:
    """One pool per width, kept for the process (its threads idle between checks)."""
    with _POOLS_LOCK:
        if width not in _POOLS:
            _POOLS[width] = ThreadPoolExecutor(max_workers=width, thread_name_prefix="dpdesk-check")
        return _POOLS[width]


def uncovered(
    r: Request,
    alone: float | None,
    final: History,
    after: np.ndarray,
    total: float,
    fam: Callable[[Query], NoiseMechanism],
    method: str,
    releases: Sequence[tuple[int, Any]],
    free: bool = True,
    because: str = "",
) -> PlannedRequest:
    """An uncovered request with its counter-offer: the narrowest ±ε still affordable, and history's free ±ε.

    ``because``, when given, is why the plan does not cover it although the budget could (a watched claim
    declines what it needs, say): then there is no budget counter-offer, only history's free ±ε.
    """
    noise = fam(r.query)
    room, _ = headroom(r.query, after, total)
    offer, _alpha = narrowest_eps(noise, r.query.sensitivity, r.delta, room) if not because else (None, 0.0)
    free_eps = None
    inf = infer(final, r, method=method, releases=releases) if free else None
    if inf is not None and inf.posterior is not None:
        try:
            free_eps = float(inf.posterior.interval(r.delta).high - inf.posterior.center)
        except DpdeskError:
            free_eps = None
    if because:
        why = because
    elif offer is None:
        why = "the budget left cannot cover it"
    else:
        why = f"not covered: ±{offer:.4g} at {confidence_text(r.delta)} is the narrowest the budget left could give"
    return PlannedRequest(r, "uncovered", alone, None, offer, free_eps, why)


def without(
    plan: BatchPlan,
    history: History,
    drop: Sequence[int],
    because: str,
    *,
    family: Any = None,
    method: str = "fft",
    releases: Sequence[tuple[int, Any]] = (),
    cancelled: Callable[[], bool] | None = None,
) -> BatchPlan:
    """``plan`` without its measurements ``drop`` (indices): every request it planned is checked again on
    the history with the measurements kept (the engine's exact test); those no longer met become
    uncovered, their reason ``because`` and a counter-offer. ``history`` is the one the plan was made on."""
    t0 = time.perf_counter()
    gone = set(int(k) for k in drop)
    if not gone:
        return plan
    kept = tuple(m for k, m in enumerate(plan.measurements) if k not in gone)
    checker = Checker(history, "fft" if method == "mc" else method, releases, cancelled)
    final = checker.history_with(kept)
    planned = [p for p in plan.requests if p.status == "planned"]
    conf = dict(zip((p.id for p in planned), checker.confidences(final, [p.request for p in planned])))
    after = np.asarray(plan.cell_costs_after, dtype=float).copy()
    for k in gone:
        after -= plan.measurements[k].charge.dense(after.size)
    after = np.maximum(after, 0.0) if not kept else after
    fam = (lambda q: noise_family(family)) if family is not None else family_for
    n_uncovered = sum(p.status == "uncovered" or conf.get(p.id) is None for p in plan.requests)
    out = []
    for p in plan.requests:
        if p.status == "answerable":
            out.append(p)
        elif p.status == "planned" and conf[p.id] is not None:
            out.append(replace(p, confidence=conf[p.id]))
        else:  # newly uncovered, or uncovered before: counter-offers against the costs after this plan
            out.append(
                replace(
                    uncovered(
                        p.request,
                        p.alone,
                        final,
                        after,
                        plan.total_budget,
                        fam,
                        checker.method,
                        releases,
                        free=n_uncovered <= FREE_LIMIT,
                        because=because if p.status == "planned" else "",
                    ),
                    alone_alpha=p.alone_alpha,
                )
            )
    after.setflags(write=False)
    system = float(after.max()) if after.size else 0.0
    return replace(
        plan,
        strategy=plan.strategy if kept else "none",
        measurements=kept,
        requests=tuple(out),
        system_cost_after=system,
        cell_costs_after=after,
        elapsed_ms=plan.elapsed_ms + (time.perf_counter() - t0) * 1000.0,
    )
