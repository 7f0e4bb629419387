"""``dpdesk release plan``: price and preview a one-shot partition release of a project (nothing is spent).

A plan is every cell (``--cells``), all marginals of some orders (``--marginals 1,2``) or listed ones
(``--marginal age,sex``, repeatable), or an interval tree over an ordered attribute (``--tree age
--branching 2 [--depth D] [--cross sex,edu | --no-cross]``); it is priced at a per-cell budget
(``--alpha A``) or at the smallest one meeting an accuracy target (``--accuracy E --delta D``) for the
plan's first query class. The preview shows the per-cell charge, the system cost now and after, the
per-query guarantees (exact posterior) and, for a release of every cell, the seed's simultaneous
bound — each labelled. See docs/releases.md.
"""

from __future__ import annotations

import argparse
import json


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("release", help="one-shot releases of many counts (cells, marginals, interval trees)",
                              description="Plan one-shot partition releases of a project (docs/releases.md).")
    sub = p.add_subparsers(dest="release_command", metavar="ACTION", parser_class=type(p))
    plan = sub.add_parser("plan", help="price and preview a release (spends nothing)")
    plan.add_argument("path", metavar="PATH")
    add_plan_arguments(plan)
    plan.add_argument("--json", action="store_true", help="print the preview as one JSON object")
    p.set_defaults(func=run, _parser=p)


def add_plan_arguments(p: argparse.ArgumentParser) -> None:
    kind = p.add_mutually_exclusive_group(required=True)
    kind.add_argument("--cells", action="store_true", help="every cell of the cube (the seed's release)")
    kind.add_argument("--marginals", metavar="ORDERS", help="all marginals of these orders, e.g. 1,2")
    kind.add_argument("--marginal", action="append", metavar="A,B", help="one marginal (repeatable)")
    kind.add_argument("--tree", metavar="ATTR", help="an interval tree over this ordered (numeric) attribute")
    p.add_argument("--branching", type=int, default=2, metavar="B", help="tree: labels per node (default 2)")
    p.add_argument("--depth", type=int, metavar="D", help="tree: levels above single labels (default: up to one root)")
    cross = p.add_mutually_exclusive_group()
    cross.add_argument("--cross", metavar="A,B", help="tree: cross only with these attributes (default: all others)")
    cross.add_argument("--no-cross", action="store_true", help="tree: sum over the other attributes")
    price = p.add_mutually_exclusive_group(required=True)
    price.add_argument("--alpha", type=float, metavar="A", help="what every cell pays (> 0)")
    price.add_argument("--accuracy", type=float, metavar="E", help="±E the plan's first query class must meet")
    p.add_argument("--delta", type=float, default=0.05, metavar="D", help="the guarantees' δ (default 0.05)")


def _names(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def plan_from_args(args: argparse.Namespace, schema):
    """The :class:`~dpdesk.engine.partition.plan.PartitionPlan` the arguments ask for."""
    from dpdesk.engine.errors import PlanError
    from dpdesk.engine.partition import plan as P

    if args.cells:
        return P.cells_plan(schema)
    if args.marginals is not None:
        try:
            orders = [int(t) for t in _names(args.marginals)]
        except ValueError:
            raise PlanError(f"--marginals ({args.marginals!r}) must be orders separated by commas, e.g. 1,2") from None
        return P.marginals_by_order(schema, orders)
    if args.marginal:
        return P.marginals_plan(schema, [_names(m) for m in args.marginal])
    cross = False if args.no_cross else (_names(args.cross) if args.cross is not None else True)
    return P.tree_plan(schema, args.tree, args.branching, args.depth, cross)


def preview_text(pv, schema) -> str:
    b = pv.budget
    lines = [
        f"plan: {pv.plan.description}",
        f"cost: every cell pays α = {pv.alpha:.6g} ({pv.plan.coverage} count(s) per record at α = {pv.row_alpha:.6g} "
        f"each; discrete Laplace noise of scale {pv.scale:.6g})" + (f", chosen for ±{pv.target:g}" if pv.target else ""),
        f"system cost: {b.system_cost:.6g} now → {b.system_cost_after:.6g} after (total {b.total:g}, remaining after "
        f"{b.remaining_after:.6g}){'' if pv.fits else ' — DOES NOT FIT the total budget'}",
    ]
    lines += [g.text(schema) for g in pv.guarantees]
    lines.append(pv.simultaneous.text())
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from dpdesk.engine.partition.guarantee import preview
    from dpdesk.store.project import Project

    if getattr(args, "release_command", None) != "plan":
        args._parser.print_help()
        return 2
    with Project.open(args.path, "r") as p:
        schema = p.schema
        plan = plan_from_args(args, schema)
        costs = p.view().cell_costs
        pv = preview(plan, alpha=args.alpha, accuracy=args.accuracy, delta=args.delta,
                     total_budget=p.total_budget, cell_costs=costs)
    print(json.dumps(pv.to_json(), indent=2) if args.json else preview_text(pv, schema))
    return 0
