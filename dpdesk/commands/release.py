"""``dpdesk release plan|publish|export``: one-shot partition releases of a project.

``plan`` prices and previews a release (nothing is spent); ``publish`` shows the same preview, asks
for confirmation on stdin unless ``--yes`` (end of input counts as "no") and releases it — drawn from
the vetted sampler and recorded durably in the ledger *before* anything of it is printed; ``export``
writes a recorded release as a count table (CSV or Parquet); ``select`` releases a private max or
argmax (``max(age | sex="F")``, ``argmax(education)``) the same way, priced from public inputs. Exit codes: 0 done, 1 not released (over
the budget, or not confirmed), 2 bad input.

A plan is every cell (``--cells``), all marginals of some orders (``--marginals 1,2``) or listed ones
(``--marginal age,sex``, repeatable), or an interval tree over an ordered attribute (``--tree age
--branching 2 [--depth D] [--cross sex,edu | --no-cross]``); it is priced at a per-cell privacy loss
(``--epsilon E``) or at the smallest one meeting an accuracy target (``--accuracy A --confidence C``) for
the plan's first query class (``--alpha`` and ``--delta``, the former names, still work). The preview shows the per-cell charge, the system cost now and after, the
per-query guarantees (exact posterior) and, for a release of every cell, the seed's simultaneous
bound — each labelled. See docs/releases.md.
"""

from __future__ import annotations

import argparse
import json


def register(subparsers: argparse._SubParsersAction) -> None:
    from dpdesk.commands.terms import add_accuracy, add_confidence, add_epsilon

    p = subparsers.add_parser(
        "release",
        help="one-shot releases of many counts (cells, marginals, interval trees)",
        description="Plan one-shot partition releases of a project (docs/releases.md).",
    )
    sub = p.add_subparsers(dest="release_command", metavar="ACTION", parser_class=type(p))
    plan = sub.add_parser("plan", help="price and preview a release (spends nothing)")
    plan.add_argument("path", metavar="PATH")
    add_plan_arguments(plan)
    plan.add_argument("--json", action="store_true", help="print the preview as one JSON object")
    pub = sub.add_parser("publish", help="release a plan: priced, confirmed, recorded before it is shown")
    pub.add_argument("path", metavar="PATH")
    add_plan_arguments(pub)
    pub.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    pub.add_argument("--json", action="store_true", help="print one JSON object (preview and release)")
    sel = sub.add_parser(
        "select", help="release a private max(A | box) or argmax(A | box) (report-noisy-max)"
    )
    sel.add_argument("path", metavar="PATH")
    sel.add_argument(
        "--query", required=True, metavar="TEXT", help='max(age), argmax(education | sex="Female"), …'
    )
    price = sel.add_mutually_exclusive_group(required=True)
    add_epsilon(price, "the privacy loss ε every cell of the box pays (> 0)", type=float)
    add_accuracy(
        price,
        "the released label's count within T of the largest (argmax); at most T records above (max)",
        metavar="T",
        type=float,
        former=False,
        dest="accuracy",
    )
    add_confidence(sel, "the accuracy statement's confidence (default 0.95)", default=0.05)
    sel.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    sel.add_argument("--json", action="store_true", help="print one JSON object (plan and release)")
    exp = sub.add_parser("export", help="write a recorded partition release as a count table")
    exp.add_argument("path", metavar="PATH")
    exp.add_argument(
        "--release", required=True, type=int, metavar="N", help="the release's ledger entry number"
    )
    exp.add_argument("--out", required=True, metavar="FILE", help="the table to write (.csv or .parquet)")
    exp.add_argument(
        "--form",
        default="unclipped",
        choices=("unclipped", "seed"),
        help="unclipped: every count as released (for inference; default); seed: counts above 0 only",
    )
    p.set_defaults(func=run, _parser=p)


def add_plan_arguments(p: argparse.ArgumentParser) -> None:
    from dpdesk.commands.terms import add_accuracy, add_confidence, add_epsilon

    kind = p.add_mutually_exclusive_group(required=True)
    kind.add_argument("--cells", action="store_true", help="every cell of the cube (the seed's release)")
    kind.add_argument("--marginals", metavar="ORDERS", help="all marginals of these orders, e.g. 1,2")
    kind.add_argument("--marginal", action="append", metavar="A,B", help="one marginal (repeatable)")
    kind.add_argument("--tree", metavar="ATTR", help="an interval tree over this ordered (numeric) attribute")
    p.add_argument("--branching", type=int, default=2, metavar="B", help="tree: labels per node (default 2)")
    p.add_argument(
        "--depth", type=int, metavar="D", help="tree: levels above single labels (default: up to one root)"
    )
    cross = p.add_mutually_exclusive_group()
    cross.add_argument(
        "--cross", metavar="A,B", help="tree: cross only with these attributes (default: all others)"
    )
    cross.add_argument("--no-cross", action="store_true", help="tree: sum over the other attributes")
    price = p.add_mutually_exclusive_group(required=True)
    add_epsilon(price, "the privacy loss ε every cell pays (> 0)", type=float)
    add_accuracy(
        price, "±A the plan's first query class must meet", type=float, former=False, dest="accuracy"
    )
    add_confidence(p, "the guarantees' confidence (default 0.95)", default=0.05)


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
            raise PlanError(
                f"--marginals ({args.marginals!r}) must be orders separated by commas, e.g. 1,2"
            ) from None
        return P.marginals_by_order(schema, orders)
    if args.marginal:
        return P.marginals_plan(schema, [_names(m) for m in args.marginal])
    cross = False if args.no_cross else (_names(args.cross) if args.cross is not None else True)
    return P.tree_plan(schema, args.tree, args.branching, args.depth, cross)


def run(args: argparse.Namespace) -> int:
    action = getattr(args, "release_command", None)
    if action == "plan":
        return run_plan(args)
    if action == "publish":
        return run_publish(args)
    if action == "export":
        return run_export(args)
    if action == "select":
        return run_select(args)
    args._parser.print_help()
    return 2


def _plan(p, args):  # type: ignore[no-untyped-def]
    """The partition release the arguments ask for, planned against the project's ledger now."""
    from dpdesk.engine.kinds.base import AdHoc

    return p.plan(
        AdHoc("partition"),
        structure=plan_from_args(args, p.schema),
        alpha=args.alpha,
        accuracy=args.accuracy,
        delta=args.delta,
    )


def run_plan(args: argparse.Namespace) -> int:
    from dpdesk.engine import registry
    from dpdesk.store.project import Project

    kind = registry.kind("partition")
    with Project.open(args.path, "r") as p:
        plan = _plan(p, args)
    print(json.dumps(kind.plan_json(plan), indent=2) if args.json else "\n".join(kind.preview(plan)))
    return 0


def run_publish(args: argparse.Namespace) -> int:
    from dpdesk.commands.flow import release_flow
    from dpdesk.engine import registry
    from dpdesk.store.project import Project

    with Project.open(args.path, "w") as p:  # the writer lock keeps the ledger as previewed until release
        return release_flow(p, _plan(p, args), registry.kind("partition"), args, keys=("preview", "release"))


def run_select(args: argparse.Namespace) -> int:
    from dpdesk.commands.flow import release_flow
    from dpdesk.engine import registry
    from dpdesk.engine.kinds.base import AdHoc
    from dpdesk.store.project import Project

    asked = AdHoc("selection", args.query, eps=args.accuracy, delta=args.delta, alpha=args.alpha)
    with Project.open(args.path, "w") as p:
        plan = p.plan(asked)
        return release_flow(p, plan, registry.kind("selection"), args, keys=("plan", "release"))


def run_export(args: argparse.Namespace) -> int:
    from dpdesk.store.project import Project
    from dpdesk.store.release_table import partition_release, write_table

    with Project.open(args.path, "r") as p:
        release = partition_release(p.view(), args.release)
    table = write_table(release, args.out, args.form)
    print(
        f"wrote {len(table)} {args.form} count(s) of release {args.release} ({release.plan.description}) to {args.out}"
    )
    return 0
