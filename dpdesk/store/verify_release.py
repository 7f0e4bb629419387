"""The checks :func:`dpdesk.store.verify.verify` makes of one release entry: its recorded charge against
its mechanism's privacy map, the budget and δ cap it leaves, its history prefix, assessment basis and
released window, and an answer inferred from a partition release against that release."""

from __future__ import annotations

import math
from collections.abc import Callable

from dpdesk.engine.mechanisms.charge import Charge, same_charge
from dpdesk.engine.queries.query import query_from_json
from dpdesk.store.ledger import LedgerEntry, thaw
from dpdesk.store.view import LedgerView, ViewedRelease

REL_TOL = 1e-9


Bad = Callable[[int | None, str], None]  # reports a problem: (the entry's seq or None, one line)


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=1e-12)


def _check_window(e: LedgerEntry, value_key: str, bad: Bad) -> None:
    """A released interval is 2ε wide and holds the released value (the promise made to the requester)."""
    if "interval" not in e.payload or value_key not in e.payload or "eps" not in e.payload:
        return
    lo, hi = (float(v) for v in e.payload["interval"])
    eps, value = float(e.payload["eps"]), float(e.payload[value_key])
    if not (
        _close(hi - lo, 2 * eps) and lo - 1e-9 * max(1.0, abs(lo)) <= value <= hi + 1e-9 * max(1.0, abs(hi))
    ):
        bad(
            e.seq,
            f"entry {e.seq}: released interval [{lo:.6g}, {hi:.6g}] is not a ±{eps:g} window "
            f"around the released {value:.6g}",
        )


def _check_release(v: ViewedRelease, view: LedgerView, total: float, delta_cap: float, bad: Bad) -> None:
    """One release entry against its mechanism's privacy map and what the view derived before it."""
    e, p, c = v.entry, v.entry.payload, v.contribution
    where = f"entry {e.seq}"
    if "charge" in p:  # project format 3: the charge the release path recorded
        shape = view.schema.shape
        recorded = Charge.from_json(thaw(p["charge"]), thaw(p), math.prod(shape), shape)
        if not same_charge(recorded, c.charge, math.prod(shape), REL_TOL):
            bad(
                e.seq,
                f"{where}: recorded per-cell charge differs from what the {v.mechanism.name} mechanism's "
                "privacy map gives for its parameters",
            )
    if "sensitivity" in p and c.rows and not _close(c.rows[0].query.sensitivity, float(p["sensitivity"])):
        bad(
            e.seq,
            f"{where}: recorded sensitivity {p['sensitivity']} but the query's is {c.rows[0].query.sensitivity}",
        )
    cost = view.system_cost
    if cost > total * (1 + REL_TOL):
        acc = view.accounting
        said = (
            f"system cost {cost:.6g} exceeds the total budget {total:.6g}"
            if acc is None
            else f"system cost ε = {acc.epsilon_of(cost):.6g} (ρ = {cost:.6g}) exceeds the total budget "
            f"ε = {acc.epsilon:g} at δ = {acc.delta:g} (ρ = {total:.6g})"
        )
        bad(e.seq, f"{where}: {said}")
    if c.charge.delta > 0 and view.delta_spent > delta_cap * (1 + REL_TOL):
        bad(
            e.seq,
            f"{where}: a cell's δ reaches {view.delta_spent:.3g}, over the project's δ cap {delta_cap:g}",
        )
    prefix = p.get("history_prefix")
    if prefix is not None:
        if c.rows and prefix != v.rows_before:
            bad(e.seq, f"{where}: records {prefix} earlier fresh answers but {v.rows_before} precede it")
        elif not c.rows and (not isinstance(prefix, int) or not 0 <= prefix <= v.rows_before):
            bad(
                e.seq,
                f"{where}: uses {prefix!r} history rows but only {v.rows_before} were released before it",
            )
    recorded_cost = p.get("system_cost_after")
    if recorded_cost is not None and not _close(float(recorded_cost), cost):
        bad(e.seq, f"{where}: recorded system cost {recorded_cost} but the ledger gives {cost:.12g}")
    needed = p.get("needed_alpha")
    if needed is not None and float(p["alpha"]) < float(needed) * (1 - REL_TOL):
        bad(
            e.seq,
            f"{where}: charged ε = {float(p['alpha']):.6g}, less than the ε = {float(needed):.6g} "
            f"the request needed",
        )
    basis = p.get("basis")
    if basis is not None and basis.get("ledger_head") not in (None, e.prev_hash):
        bad(
            e.seq,
            f"{where}: was assessed against ledger head {str(basis['ledger_head'])[:12]}… but extends "
            f"{e.prev_hash[:12]}… (released without its assessment's ledger)",
        )
    _check_window(e, "released" if "released" in p else "estimate", bad)
    if p.get("from_release") is not None:
        _check_from_release(e, view, bad)


def _check_from_release(e: LedgerEntry, view: LedgerView, bad: Bad) -> None:
    """An answer inferred from a partition release's own structure: that release precedes it, and under
    the flat prior the released estimate is that release's BLUE of the query."""
    p, src = e.payload, e.payload["from_release"]
    release = view.answering_release(src) if isinstance(src, int) and src < e.seq else None
    if release is None:
        bad(
            e.seq,
            f"entry {e.seq}: answered from release #{src}, which is not an earlier release answered "
            "from its own structure",
        )
        return
    if p.get("prior", "flat") == "flat" and "estimate" in p:
        shape = view.schema.shape
        r = release.estimate(query_from_json(thaw(p["query"]), math.prod(shape), shape))
        if not r.estimable or not _close(float(r.estimate), float(p["estimate"])):
            bad(
                e.seq,
                f"entry {e.seq}: released estimate {float(p['estimate']):.6g} is not release #{src}'s "
                f"({'not estimable' if not r.estimable else f'{r.estimate:.6g}'})",
            )
