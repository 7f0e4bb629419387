"""``dpdesk assess``: what history says about a request and what answering it would cost.

Two forms:

* ``dpdesk assess --history FILE (--query Q --eps E --delta D | --queries FILE.jsonl)`` works on a
  DESIGN §6 history file, no project needed;
* ``dpdesk assess PROJECT --request ID`` plans a queued request of any kind against the project's ledger;
* ``dpdesk assess PROJECT --query TEXT`` plans a release asked on the spot: a posterior of proportions
  (``posterior(...)``, priced against the ledger) or a zero-cost, biased estimate from the released
  answers (``estimate(...)``).

The request's kind (:mod:`dpdesk.engine.registry`) makes the plan and says it in words
(:func:`dpdesk.commands.flow.show_plan`). Nothing is spent and no noise is drawn. ``--json`` prints the
kind's plan object — for a count, the DESIGN §6 assessment object (one per line for ``--queries``).
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
    add_reference_argument(p)
    add_tau_argument(p)
    p.add_argument("--json", action="store_true", help="print JSON objects instead of text")
    add_cell_costs_argument(p)
    p.set_defaults(func=run)


def add_cell_costs_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--cell-costs",
        action="store_true",
        help=f"with --json, list every cell's cost (cell_costs) even on a cube of more than {65_536:,} "
        "cells, where it is otherwise null and cell_costs_omitted gives the number of cells",
    )


def assessment_json(a: Any, args: argparse.Namespace | None) -> dict[str, Any]:
    """The DESIGN §6 assessment object as ``--json`` prints it (the count kind's plan JSON)."""
    from dpdesk.engine.answering.kind import COUNT

    return COUNT.plan_json(a, cell_costs=bool(getattr(args, "cell_costs", False)))


def add_reference_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--reference-size",
        type=int,
        metavar="M",
        help="posterior: compare each mechanism's expected accuracy at a public reference table of M "
        "records split as the prior (never the data)",
    )


def add_tau_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--tau",
        type=float,
        metavar="T",
        help="estimate(...)/synth: the shrinkage trade-off τ (default: chosen by 5-fold cross-validation "
        "on the released answers; 'inf' for estimate gives the unbiased estimate where one exists)",
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


def asked_of(project: Any, args: argparse.Namespace) -> Any:
    """What ``--request ID`` or ``--query TEXT`` asks of a project: a queued request, or a release asked on
    the spot (a text whose kind is not queued as such: posterior(...), estimate(...))."""
    from dpdesk.engine import registry
    from dpdesk.engine.errors import DpdeskError
    from dpdesk.engine.kinds.base import AdHoc

    if args.request:
        return project.request(args.request)
    kind = registry.kind_of_text(args.query)
    if args.query is None or not kind.on_the_spot:
        raise DpdeskError(
            "with a project file use --request ID or --query 'posterior(...)' / 'estimate(...)' "
            "(not --history/--queries, nor a count --query: queue it with `dpdesk requests add`)"
        )
    return AdHoc(kind.name, args.query)


def run(args: argparse.Namespace) -> int:
    from dpdesk.engine import registry
    from dpdesk.engine.errors import DpdeskError

    if args.project is None:
        return run_history(args)
    if args.history or args.queries or (args.request and args.query):
        raise DpdeskError(
            "with a project file use --request ID or --query TEXT (not --history/--queries, nor both)"
        )
    if not args.request and args.query is None:
        raise DpdeskError("give --request ID to assess a request of the project")
    from dpdesk.commands.flow import plan_options, show_plan
    from dpdesk.store import Project

    with Project.open(args.project, mode="r") as project:
        asked = asked_of(project, args)
        kind = registry.kind(asked.kind)
        where = f"request {asked.id}" if asked.id is not None else "this request"
        plan = project.plan(asked, **plan_options(args, kind, where))
        show_plan(project, plan, kind, args, asked)
    sys.stdout.flush()
    return 0


def run_history(args: argparse.Namespace) -> int:
    """``dpdesk assess --history FILE``: counts against a DESIGN §6 history file, no project."""

    from dpdesk.engine import registry
    from dpdesk.engine.answering.words import assessment_lines
    from dpdesk.engine.answering.workflow import assess
    from dpdesk.engine.errors import DpdeskError
    from dpdesk.engine.inference.history import History
    from dpdesk.engine.jsontext import parse_json
    from dpdesk.engine.schema import Schema

    kind = None if args.query is None else registry.kind_of_text(args.query)
    if kind is not None and kind.on_the_spot:
        raise DpdeskError(
            f"a {kind.label} is priced against a project's ledger: "
            f"dpdesk assess PROJECT --query '{args.query.strip()}'"
        )
    if not args.history:
        raise DpdeskError("give --history FILE (or a project file and --request ID)")
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
    settings, costs = _history_settings(obj, total, args, history)
    for req, iv in requests:
        a = assess(
            history, req, settings, method=args.method, interval=iv, schema=schema, seed=0, cell_costs=costs
        )
        print(json.dumps(assessment_json(a, args)) if args.json else "\n".join(assessment_lines(a)))
    sys.stdout.flush()
    return 0


def _history_settings(obj, total, args, history):  # type: ignore[no-untyped-def]
    """The rules a history file is assessed under: pure ε, or the zCDP accounting it states (exported from
    a zCDP project) — per-cell ρ from its rows (a Laplace row ε²/2 per cell), the budget the ρ its total
    (ε, δ) allows."""
    from dpdesk.engine.answering.workflow import Settings
    from dpdesk.engine.budget.mode import accounting_from_json
    from dpdesk.engine.budget.zcdp import history_rho
    from dpdesk.engine.errors import DpdeskError

    acc = accounting_from_json(obj.get("accounting"), float(total)) if isinstance(obj, dict) else None
    policy, prior = policy_from_args(args), prior_from_args(args)
    if acc is None:
        return Settings(total, policy=policy, prior=prior), None
    if policy is not None:
        raise DpdeskError("--pace paces α, the pure-ε price of a cell: this history is accounted in zCDP")
    return Settings.zcdp(acc, None, prior), history_rho(history)
