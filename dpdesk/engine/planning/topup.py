"""One by one's final history in a batch plan: its borderline fused answers topped up, and when its count
can no longer change the plan (:func:`dpdesk.engine.planning.planner.plan_batch`'s one-by-one candidate).

Today's rules answer a request at its turn, fused with history at the smallest α whose fused posterior
reaches ``1 − δ``; a batch answers from the final history's exact posterior, which can land a hair below
it. These helpers raise such rows a little (:data:`TOP_UP`), and bound one by one's count without asking
every request when a checked strategy already beats it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dpdesk.engine.answering.request import Request
from dpdesk.engine.inference.history import History
from dpdesk.engine.planning.checks import Checker
from dpdesk.engine.planning.plan import Measurement, costs_after

TOP_UP = (1.001, 1.01, 1.05)  # successive raises of a borderline one-by-one row's α (see top_up)


def beats(n: int, cost: float, n_ref: int, cost_ref: float) -> bool:
    """More requests answered, or as many at a smaller system cost (a tie goes to the reference)."""
    return n > n_ref or (n == n_ref and cost < cost_ref)


def misses(
    conf: Sequence[float | None], ok: Sequence[bool], order: Sequence[int] | np.ndarray, allowed: int | None
) -> list[int]:
    """The requests asked (``ok``) in ``order`` that the check found short; with ``allowed`` the check
    stopped at its ``allowed + 1``-th miss and the requests after it were not asked."""
    out = []
    for k in order:
        if ok[k] and conf[k] is None:
            out.append(int(k))
            if allowed is not None and len(out) > allowed:
                break
    return out


def top_up(
    rows: list[Measurement],
    row_of: dict[int, int],
    ok: Sequence[bool],
    short: Sequence[int],
    conf: list[float | None],
    pending: Sequence[Request],
    checker: Checker,
    costs0: np.ndarray,
    total: float,
) -> tuple[list[Measurement], list[float | None], list[bool] | None, History | None]:
    """One by one's rows with the rows of the requests ``short`` (met at their turn, not by the final
    history) raised a little until the final history meets them.

    Today's rules answer a request at its turn, fused with history at the smallest α whose fused
    posterior reaches ``1 − δ``. A batch answers from the final history's exact posterior, which can land
    a hair below ``1 − δ`` for such a borderline answer (another computation of nearly the same law).
    Without a top-up the one-by-one candidate would lose those requests and the planner would pick a
    dearer strategy to answer them, a cost the rest of the queue carries. The rows of the requests found
    short are raised by the steps :data:`TOP_UP` (≈ 6 % at most in all) while the per-cell costs stay
    within the hard ``total``; what is still short stays unanswered.

    After each raise the requests not yet known to be met are checked again: a raise only lowers some
    rows' noise, so a request a check of the history before it (``conf``, then each step's) found met is
    taken to stay met — the first raise's check asks every request the first check did not reach (it
    stops early), which names the borderline rows it did not. Returns the rows, the confidences, which
    requests the last step asked of the rows returned (their misses are misses of those rows) and the
    history of those rows; ``None`` for both when no step was taken (the rows are returned unchanged).
    The other requests are only taken to be met: :func:`confirm` asks them.
    """
    rows = list(rows)
    met = [c is not None for c in conf]
    hist, last = None, None
    for step in TOP_UP:
        raised = _raised(rows, [row_of[k] for k in short], step, costs0, total)
        if raised is None:
            break
        rows = raised
        hist, last = checker.history_with(rows), [bool(ok[k]) and not met[k] for k in range(len(pending))]
        conf = checker.confidences(hist, pending, last)
        for k in np.flatnonzero(last):
            met[k] = conf[k] is not None
        short = [k for k, c in enumerate(conf) if last[k] and c is None and k in row_of]
        if not short:
            break
    return rows, conf, last, hist


def probe(
    rows: list[Measurement],
    row_of: dict[int, int],
    short: Sequence[int],
    pending: Sequence[Request],
    checker: Checker,
    costs0: np.ndarray,
    total: float,
) -> tuple[list[Measurement], int] | None:
    """The rows of the requests ``short`` raised by every step of :data:`TOP_UP` (only they asked after
    each) and how many of them are still short; None when no step fits within the hard ``total``.

    One by one's first check stops at the first miss it cannot afford. When the raises that :func:`top_up`
    would give those requests' own rows do not meet them, one by one's count is bounded without asking
    the rest of its history (a raise of other rows is not counted on to meet them)."""
    rows, left, taken = list(rows), list(short), False
    for step in TOP_UP:
        raised = _raised(rows, [row_of[k] for k in left], step, costs0, total)
        if raised is None:
            break
        rows, taken = raised, True
        conf = checker.confidences(
            checker.history_with(rows), pending, [k in left for k in range(len(pending))]
        )
        left = [k for k in left if conf[k] is None]
        if not left:
            break
    return (rows, len(left)) if taken else None


def _raised(
    rows: list[Measurement], which: Sequence[int], step: float, costs0: np.ndarray, total: float
) -> list[Measurement] | None:
    """``rows`` with the rows ``which`` raised by ``step``; None when that would pass the hard ``total``."""
    raised = list(rows)
    for i in which:
        m = rows[i]
        raised[i] = Measurement(m.query, m.alpha * step, m.family)
    after = costs_after(costs0, raised)
    return None if after.size and after.max() > total * (1 - 1e-9) else raised


def confirm(
    conf: list[float | None],
    last: Sequence[bool],
    hist: History,
    ok: Sequence[bool],
    pending: Sequence[Request],
    checker: Checker,
) -> list[float | None]:
    """The top-up's rows checked in full: every request not refused at its turn (``ok``) asked of ``hist``,
    those the last step asked (``last``) keeping its answers on the same rows. The confidences returned
    are then those of the rows, not an assumption."""
    rest = checker.confidences(hist, pending, [bool(ok[k]) and not last[k] for k in range(len(pending))])
    return [conf[k] if last[k] else rest[k] for k in range(len(pending))]


def settled(
    top: tuple[int, float] | tuple[int, float, np.ndarray] | None, bound: int, cost: float, all_tried: bool
) -> bool:
    """Whether one by one's exact count can no longer change the plan: the best checked strategy ``top``
    (answered, system cost) beats even the ``bound`` on it (at one by one's ``cost``), and no strategy is
    left to check (``all_tried``; otherwise that count decides which ones are checked next)."""
    return top is not None and all_tried and beats(top[0], top[1], bound, cost)
