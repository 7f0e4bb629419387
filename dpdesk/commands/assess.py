"""``dpdesk assess``: what history says about a request and what answering it would cost.

Two forms:

* ``dpdesk assess --history FILE (--query Q --eps E --delta D | --queries FILE.jsonl)`` works on a
  DESIGN §6 history file, no project needed;
* ``dpdesk assess PROJECT --request ID`` assesses a queued request of a project file;
* ``dpdesk assess PROJECT --query 'posterior(...)'`` prices a posterior of proportions against the
  project's ledger (:mod:`dpdesk.commands.posterior`);
* ``dpdesk assess PROJECT --query 'estimate(...)'`` shows a zero-cost, biased estimate from the released
  answers (:mod:`dpdesk.commands.estimate`).

Nothing is spent and no noise is drawn. ``--json`` prints the DESIGN §6 assessment object (one per line
for ``--queries``).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def register(sub: argparse._SubParsersAction) -> None:
    from dpdesk.engine.mechanisms.registry import method_names

    p = sub.add_parser(
        "assess",
        help="assess requests against released history (no budget spent)",
        description="Show the posterior, credible interval, decision and costs for a request.",
    )
    p.add_argument("project", nargs="?", help="a .dpdesk project file (then use --request)")
    p.add_argument("--request", metavar="ID", help="request id in the project's queue")
    p.add_argument("--history", metavar="FILE", help="history JSON file (DESIGN §6 format)")
    p.add_argument(
        "--query", metavar="Q", help="query: JSON list, sparse JSON object, or text form (needs a schema)"
    )
    p.add_argument("--eps", type=float, metavar="E", help="requested half-width ε > 0")
    p.add_argument("--delta", type=float, metavar="D", help="allowed miss probability δ in (0, 1)")
    p.add_argument("--queries", metavar="FILE", help="JSON lines, one request object per line")
    p.add_argument(
        "--budget", type=float, metavar="B", help="total budget (default: the history file's total_budget)"
    )
    methods = method_names()
    p.add_argument(
        "--method", choices=methods, default=methods[0], help=f"posterior method (default {methods[0]})"
    )
    p.add_argument("--interval", nargs=2, type=float, metavar=("L", "U"), help="also report Pr(L ≤ θ ≤ U)")
    add_pace_argument(p)
    add_table_size_argument(p)
    from dpdesk.commands.posterior import add_reference_argument

    add_reference_argument(p)
    from dpdesk.commands.estimate import add_tau_argument

    add_tau_argument(p)
    p.add_argument("--json", action="store_true", help="print JSON objects instead of text")
    add_cell_costs_argument(p)
    p.set_defaults(func=run)


# --json lists the per-cell costs B of a cube up to this many cells; past it (a 10⁶-cell cube's B is 20 MB
# of text, most of a cold call's time) only with --cell-costs
CELL_COSTS_SHOWN = 65_536


def add_cell_costs_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--cell-costs",
        action="store_true",
        help=f"with --json, list every cell's cost (cell_costs) even on a cube of more than {CELL_COSTS_SHOWN:,} "
        "cells, where it is otherwise null and cell_costs_omitted gives the number of cells",
    )


def assessment_json(a: Any, args: argparse.Namespace) -> dict[str, Any]:
    """The DESIGN §6 assessment object as ``--json`` prints it (see :data:`CELL_COSTS_SHOWN`)."""
    return a.to_json(
        cell_costs=bool(getattr(args, "cell_costs", False)) or len(a.cell_costs) <= CELL_COSTS_SHOWN
    )


def add_pace_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--pace",
        nargs=2,
        type=float,
        metavar=("FLOOR", "CAP"),
        help="spend policy for a fixed budget: a fresh answer spends at least FLOOR of what its cells can "
        "still pay, and a request needing more than CAP of it is declined (fractions, e.g. 0.1 0.5; "
        "default: spend exactly what the request needs)",
    )


def add_table_size_argument(p: argparse.ArgumentParser) -> None:
    from dpdesk.commands import numbers

    p.add_argument(
        "--table-size",
        type=numbers.table_size,
        metavar="N",
        help="a public upper bound on the number of records, declared by the curator (never read off the "
        "data): released intervals are trimmed to the answers such a table allows (counts ≥ 0, ≤ N); "
        "decisions and budgets do not change",
    )


def prior_from_args(args: argparse.Namespace) -> Any:
    if getattr(args, "table_size", None) is None:
        return None
    from dpdesk.engine.inference.prior import BoundedPrior

    return BoundedPrior(args.table_size)


def interval_from_args(args: argparse.Namespace) -> tuple[float, float] | None:
    """``--interval L U`` as the engine takes it (both forms of the command read it here)."""
    return (args.interval[0], args.interval[1]) if getattr(args, "interval", None) else None


def policy_from_args(args: argparse.Namespace) -> Any:
    if getattr(args, "pace", None) is None:
        return None
    from dpdesk.engine.budget.policy import SpendPolicy

    return SpendPolicy(floor=args.pace[0], cap=args.pace[1])


def _requests_from_args(args: argparse.Namespace, n_cells: int, shape: tuple[int, ...], schema: Any):
    from dpdesk.engine.answering.workflow import Request
    from dpdesk.engine.errors import DpdeskError
    from dpdesk.engine.jsontext import parse_json
    from dpdesk.engine.queries.text import query_from_input

    if args.queries:
        if args.query is not None:
            raise DpdeskError("give either --query or --queries, not both")
        out = []
        from dpdesk.store.inputs import read_text_file

        lines = read_text_file(args.queries, "queries file").splitlines()
        for no, line in enumerate(lines, 1):
            if not line.strip():
                continue
            where = f"{args.queries} line {no}"
            obj = parse_json(line, where)
            if not isinstance(obj, dict) or not {"query", "eps", "delta"} <= obj.keys():
                raise DpdeskError(f"{where}: needs an object with query, eps and delta")
            q = query_from_input(obj["query"], n_cells, shape, schema, where)
            interval = obj.get("interval")
            if interval is not None and not (
                isinstance(interval, list)
                and len(interval) == 2
                and all(isinstance(v, (int, float)) for v in interval)
            ):
                raise DpdeskError(f"{where}: interval must be [L, U]")
            try:
                req = Request(
                    str(obj.get("id", no)),
                    q,
                    _num(obj["eps"], where, "eps"),
                    _num(obj["delta"], where, "delta"),
                )
            except DpdeskError as exc:
                raise DpdeskError(f"{where}: {exc}") from None
            out.append((req, tuple(interval) if interval else None))
        if not out:
            raise DpdeskError(f"{args.queries}: no requests in the file")
        return out
    if args.query is None or args.eps is None or args.delta is None:
        raise DpdeskError("give --query, --eps and --delta (or --queries FILE)")
    q = query_from_input(args.query, n_cells, shape, schema, "--query")
    return [(Request("1", q, args.eps, args.delta), interval_from_args(args))]


def _num(v: Any, where: str, name: str) -> float:
    from dpdesk.engine.errors import DpdeskError

    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise DpdeskError(f"{where}: {name} must be a number, got {v!r}")
    return float(v)


def format_assessment(a: Any, declined: tuple[str, ...] = ()) -> str:
    """Human-readable summary of an assessment."""
    r = a.request
    q = r.query.text or f"query with {len(r.query.sparse()[0])} nonzero coefficients"
    lines = [f"request {r.id}: {q}   ε = {r.eps:g}, δ = {r.delta:g}"]
    est = a.estimate
    if est.estimable:
        where = (
            f"{est.history_size} history rows, {est.form} form"
            if a.inference.source is None
            else f"from {a.inference.served_by}'s {est.history_size} counts"
        )
        from dpdesk.engine.answering.rounding import format_interval, format_value

        counts = r.query.is_integer  # a count is shown as an integer, as its release would be
        lines.append(f"  estimate        {format_value(est.estimate, counts)}  (std {est.std:.4g}; {where})")
        lo, hi = a.interval
        lines.append(
            f"  {100 * (1 - r.delta):g}% interval    {format_interval(lo, hi, counts)}  "
            f"(mass {a.interval_confidence:.6f})"
        )
        lines.append(f"  confidence ±ε   {a.confidence_at_eps:.6f}")
        asked = f", asked for {a.requested_method}" if a.method != a.requested_method else ""
        lines.append(f"  computed by     {a.method} (error ≤ {a.error_bound:.1e}{asked})")
        if a.interval_query is not None:
            lines.append(
                f"  Pr(θ in [{a.interval_query[0]:g}, {a.interval_query[1]:g}])  {a.interval_probability:.6f}"
            )
        if a.prior != "flat":
            lo, hi = a.release_interval
            lines.append(
                f"  prior           {a.prior} (known bounds; released window trimmed to "
                f"{format_interval(lo, hi, counts, a.release_estimate)})"
            )
    else:
        lines.append(f"  not estimable from the {est.history_size} released answers")
        if est.history_size and r.query.text:  # issue 17: offer the zero-cost (biased) estimate from them
            lines.append(
                f"  zero-cost       a biased estimate from them, meeting no (ε, δ): "
                f"dpdesk assess PROJECT --query 'estimate({r.query.text})'"
            )
    b = a.budget
    if declined and a.decision == "spend":  # watched claims decline the fresh answer: that is the decision
        lines.append(
            f"  decision        DECLINED BY CLAIM {', '.join(declined)}: a fresh answer would spend more of "
            f"the claim's risk than it has left (without the claims: {a.reason})"
        )
    else:
        lines.append(f"  decision        {a.decision.upper()}: {a.reason}")
    fused = (
        f", fused with history (alone it would need α = {a.fresh_alpha:.6g})"
        if a.spend_alpha < a.fresh_alpha
        else ""
    )
    lines.append(f"  fresh answer    α = {a.spend_alpha:.6g} ({a.noise.label} noise{fused})")
    if a.headroom is not None:
        lines.append(
            f"  spend policy    {a.policy}: the request alone needs α = {a.needed_alpha:.6g}; "
            f"its cells can still pay α = {a.headroom:.6g}"
        )
    after = f" → {b.system_cost_after:.6g} if spent" if b.system_cost_after is not None else ""
    lines.append(
        f"  system cost     {b.system_cost:.6g}{after}   of total {b.total:g} (remaining {b.remaining:.6g})"
    )
    return "\n".join(lines)


def preview_queued(project: Any, args: argparse.Namespace) -> int:
    """``assess PROJECT --request ID`` of a max/argmax or posterior request: its plan; nothing is spent."""
    from dpdesk.engine.errors import DpdeskError
    from dpdesk.store.request_kinds import kind_named

    req = project.request(args.request)
    unused = [
        f"--{n.replace('_', '-')}" for n in ("interval", "pace", "table_size") if getattr(args, n, None)
    ]
    if unused:
        raise DpdeskError(f"{unused[0]} applies to count requests; {req.id} is a {req.kind} request")
    kind = kind_named(req.kind)
    plan = project.assess(req.id, reference_size=getattr(args, "reference_size", None))
    claims = project.claim_statuses(plan)  # every kind's verdict before anything is confirmed
    if args.json:
        print(json.dumps({**plan.to_json(), "claims": [s.to_json() for s in claims]}))
    else:
        from dpdesk.commands.watch import status_line

        print(f"request {req.id}: {req.describe()}  ({kind.label}; {req.terms()})")
        print("\n".join(kind.preview(plan)))
        declined = [s.watched.id for s in claims if s.verdict == "declined"]
        if declined:
            print(f"decision: declined by claim {', '.join(declined)}")
        for s in claims:
            print(f"  claim           {status_line(s)}")
        print("nothing was spent (preview only)")
    return 0


def claim_offer_text(offer, a, path: str) -> str:
    """The counter-offer lines for a request watched claims decline: each offer with the edit that
    accepts it (then ``dpdesk answer`` assesses, confirms and releases as usual)."""
    r = a.request
    lines = []
    if offer.eps is not None:
        lines.append(
            f"  counter-offer   a fresh answer at α = {offer.alpha:.4g} (the largest α that passes the claims "
            "and fits the cells' budget) "
            f"is within ±{offer.eps:g} at δ = {offer.delta:g}, not the ±{r.eps:g} asked: "
            f"dpdesk requests edit {path} --request {r.id} --eps {offer.eps:g}"
        )
    if offer.free_delta is not None:
        lines.append(
            f"  counter-offer   free from history: ±{r.eps:g} at {offer.free_confidence:.4g} confidence: "
            f"dpdesk requests edit {path} --request {r.id} --delta {offer.free_delta:g}"
        )
    return (
        "\n".join(lines)
        or "  counter-offer   none: no fresh answer passes the claims and history does not estimate it"
    )


def run(args: argparse.Namespace) -> int:
    from dpdesk.engine.answering.workflow import Settings, assess
    from dpdesk.engine.errors import DpdeskError
    from dpdesk.engine.inference.history import History
    from dpdesk.engine.schema import Schema

    if args.project is not None:
        from dpdesk.commands import estimate
        from dpdesk.commands.posterior import is_posterior, run_preview

        if is_posterior(args.query) and not (args.history or args.queries or args.request):
            return run_preview(args)
        if estimate.is_estimate(args.query) and not (args.history or args.queries or args.request):
            return estimate.run_preview(args)
        if args.history or args.query or args.queries:
            raise DpdeskError(
                "with a project file use --request ID or --query 'posterior(...)' "
                "(not --history/--queries, nor a count --query)"
            )
        if not args.request:
            raise DpdeskError("give --request ID to assess a request of the project")
        from dpdesk.store import Project

        with Project.open(args.project, mode="r") as project:
            if project.request(args.request).kind != "count":
                return preview_queued(project, args)
            # --pace / --table-size: what another policy or prior would do; default: the project's
            what_if = {
                k: v
                for k, v in (("policy", policy_from_args(args)), ("prior", prior_from_args(args)))
                if v is not None
            }
            results = [
                project.assess(args.request, method=args.method, interval=interval_from_args(args), **what_if)
            ]
            claims = project.claim_statuses(results[0])
            from dpdesk.store.watching import offer_within_claims

            offer = offer_within_claims(claims, results[0], float(project.total_budget))
        if args.json:
            print(json.dumps({**assessment_json(results[0], args), "claims": [s.to_json() for s in claims]}))
        else:
            from dpdesk.commands.watch import status_line

            declined = tuple(s.watched.id for s in claims if s.verdict == "declined")
            print(format_assessment(results[0], declined))
            for s in claims:
                print(f"  claim           {status_line(s, offer)}")
            if offer is not None:
                print(claim_offer_text(offer, results[0], args.project))
        sys.stdout.flush()
        return 0
    else:
        from dpdesk.commands.posterior import is_posterior

        if is_posterior(args.query):
            raise DpdeskError(
                "a posterior(...) request is priced against a project's ledger: "
                "dpdesk assess PROJECT --query 'posterior(...)'"
            )
        if not args.history:
            raise DpdeskError("give --history FILE (or a project file and --request ID)")

        from dpdesk.engine.jsontext import parse_json
        from dpdesk.store.inputs import read_text_file

        obj = parse_json(read_text_file(args.history, "history file"), f"history file {args.history}")
        schema = None
        if isinstance(obj, dict) and obj.get("schema") is not None:
            schema = Schema.from_dict(obj["schema"])
        history = History.from_json(obj, schema.shape if schema else None)
        total = args.budget if args.budget is not None else obj.get("total_budget")
        if total is None:
            raise DpdeskError("no total budget: pass --budget or set total_budget in the history file")
        requests = _requests_from_args(args, history.n_cells, history.shape, schema)
        settings = Settings(total, policy=policy_from_args(args), prior=prior_from_args(args))
        results = [
            assess(history, req, settings, method=args.method, interval=iv, schema=schema, seed=0)
            for req, iv in requests
        ]
    for a in results:
        if args.json:
            print(json.dumps(assessment_json(a, args)))
        else:
            print(format_assessment(a))
    sys.stdout.flush()
    return 0
