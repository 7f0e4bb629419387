"""``dpdesk release plan|publish|export``: one-shot partition releases of a project.

``plan`` prices and previews a release (nothing is spent); ``publish`` shows the same preview, asks
for confirmation on stdin unless ``--yes`` (end of input counts as "no") and releases it — drawn from
the vetted sampler and recorded durably in the ledger *before* anything of it is printed; ``export``
writes a recorded release as a count table (CSV or Parquet); ``select`` releases a private max or
argmax (``max(age | sex="F")``, ``argmax(education)``) the same way, priced from public inputs. Exit codes: 0 done, 1 not released (over
the budget, or not confirmed), 2 bad input.

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

from dpdesk.commands.confirm import confirmed


def register(subparsers: argparse._SubParsersAction) -> None:
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
    price.add_argument("--alpha", type=float, metavar="A", help="what every cell of the box pays (> 0)")
    price.add_argument(
        "--accuracy",
        type=float,
        metavar="T",
        help="the released label's count within T of the largest (argmax); at most T records above (max)",
    )
    sel.add_argument(
        "--delta", type=float, default=0.05, metavar="D", help="the accuracy statement's δ (default 0.05)"
    )
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
    price.add_argument("--alpha", type=float, metavar="A", help="what every cell pays (> 0)")
    price.add_argument(
        "--accuracy", type=float, metavar="E", help="±E the plan's first query class must meet"
    )
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
            raise PlanError(
                f"--marginals ({args.marginals!r}) must be orders separated by commas, e.g. 1,2"
            ) from None
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
        f"each; discrete Laplace noise of scale {pv.scale:.6g})"
        + (f", chosen for ±{pv.target:g}" if pv.target else ""),
        f"system cost: {b.system_cost:.6g} now → {b.system_cost_after:.6g} after (total {b.total:g}, remaining after "
        f"{b.remaining_after:.6g}){'' if pv.fits else ' — DOES NOT FIT the total budget'}",
    ]
    lines += [g.text(schema) for g in pv.guarantees]
    lines.append(pv.simultaneous.text())
    return "\n".join(lines)


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


def _preview(p, args):  # type: ignore[no-untyped-def]
    from dpdesk.engine.partition.guarantee import preview

    plan = plan_from_args(args, p.schema)
    return preview(
        plan,
        alpha=args.alpha,
        accuracy=args.accuracy,
        delta=args.delta,
        total_budget=p.total_budget,
        cell_costs=p.view().cell_costs,
    )


def run_plan(args: argparse.Namespace) -> int:
    from dpdesk.store.project import Project

    with Project.open(args.path, "r") as p:
        pv = _preview(p, args)
        schema = p.schema
    print(json.dumps(pv.to_json(), indent=2) if args.json else preview_text(pv, schema))
    return 0


def run_publish(args: argparse.Namespace) -> int:
    import sys

    from dpdesk.engine.partition.release_plan import PartitionReleasePlan
    from dpdesk.store.project import Project

    out = sys.stderr if args.json else sys.stdout
    with Project.open(args.path, "w") as p:
        pv = _preview(p, args)
        plan = PartitionReleasePlan(pv, p.basis())
        print(preview_text(pv, p.schema), file=out)
        if not plan.releasable:
            print(f"not released: {plan.reason}", file=out)
            if args.json:
                print(json.dumps({"preview": pv.to_json(), "release": None}))
            return 1
        if not args.yes and not confirmed(
            f"publish {pv.plan.n_rows} noisy counts, every cell paying α = {pv.alpha:.6g}?"
        ):
            return 1
        release = p.release(plan)  # drawn, then committed (fsync'd) before anything of it is shown
        seq = release.entry.seq
        print(
            f"released as ledger entry {seq}: {pv.plan.n_rows} noisy counts; system cost now "
            f"{p.view().system_cost:.6g} of {p.total_budget:g}",
            file=out,
        )
        print(f"export it: dpdesk release export {p.path} --release {seq} --out table.csv", file=out)
        print(
            f"witness: {release.witness} (check with dpdesk verify {p.path} --extends {release.witness})",
            file=out,
        )
        if args.json:
            obj = release.to_json()
            obj.pop("values")  # the counts are in the ledger and the exported table, not on the terminal
            print(json.dumps({"preview": pv.to_json(), "release": obj}))
    return 0


def run_select(args: argparse.Namespace) -> int:
    import sys

    from dpdesk.engine.selection.plan import plan_selection
    from dpdesk.engine.selection.query import parse_selection
    from dpdesk.store.project import Project

    out = sys.stderr if args.json else sys.stdout
    with Project.open(args.path, "w") as p:
        query = parse_selection(args.query, p.schema)
        plan = plan_selection(
            query,
            p.schema,
            alpha=args.alpha,
            accuracy=args.accuracy,
            delta=args.delta,
            cell_costs=p.view().cell_costs,
            total_budget=p.total_budget,
            basis=p.basis(),
        )
        from dpdesk.store.request_kinds import selection_preview

        print("\n".join(selection_preview(plan)[:2]), file=out)  # the words a queued max/argmax shows too
        if not plan.releasable:
            print(f"not released: {plan.reason}", file=out)
            if args.json:
                print(json.dumps({"plan": plan.record(), "release": None}))
            return 1
        if not args.yes and not confirmed(
            f"release one label, spending α = {plan.rnm.alpha:.6g} on the box?"
        ):
            return 1
        release = p.release(plan)  # drawn, then committed (fsync'd) before the label is shown
        label = release.entry.payload["label"]
        print(f"released: {label} (ledger entry {release.entry.seq}; witness {release.witness})", file=out)
        if args.json:
            print(json.dumps({"plan": plan.record(), "release": {**release.to_json(), "label": label}}))
    return 0


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
