"""``dpdesk synth``: a maximum-entropy synthetic table from a project's released answers (issue 17, seed §4).

``dpdesk synth P.dpdesk --rows N --out synth.csv [--seed S] [--tau T] [--table-size N] [--report FIT.csv]``
fits the maximum-entropy distribution to the released answers (τ chosen by 5-fold cross-validation
unless given), draws N synthetic rows with the seed, shows the fit, asks for confirmation (unless
``--yes``; end of input counts as "no"), records the export in the ledger — a zero-cost post-processing
entry holding its parameters and the rows' digest — and only then writes the table (``.csv`` or
``.parquet``, the schema's attributes by label) and the fit report (for every released row: released,
fitted and synthetic value). The table is never read. ``--json`` prints ``{"plan", "release", "out"}``.
Exit codes: 0 written, 1 not confirmed, 2 bad input (nothing recorded or written).
"""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: argparse._SubParsersAction) -> None:
    from dpdesk.commands.assess import add_tau_argument

    p = sub.add_parser(
        "synth",
        help="export a synthetic table drawn from the released answers (no budget spent)",
        description="Fit the maximum-entropy distribution to the project's released answers and "
        "export synthetic rows; recorded in the ledger as a free post-processing export.",
    )
    p.add_argument("path", metavar="PROJECT")
    p.add_argument("--rows", type=int, required=True, metavar="N", help="number of synthetic rows")
    p.add_argument("--out", required=True, metavar="FILE", help="the table to write: *.csv or *.parquet")
    p.add_argument(
        "--seed", type=int, default=0, metavar="S", help="seed of the fit and the draw (recorded; default 0)"
    )
    add_tau_argument(p)
    from dpdesk.commands import numbers

    p.add_argument(
        "--table-size",
        type=numbers.table_size,
        metavar="N",
        help="the public table size the answers are read against (default: the project's declared "
        "table size, else the released history's unbiased total)",
    )
    p.add_argument(
        "--report", metavar="FILE", help="also write the fit report (CSV): released vs synthetic per row"
    )
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from dpdesk.commands.flow import release_flow
    from dpdesk.engine import registry
    from dpdesk.engine.kinds.base import AdHoc
    from dpdesk.engine.queries.text import describe_query
    from dpdesk.store.atomic import check_target
    from dpdesk.store.estimating import check_table_path, write_report, write_rows
    from dpdesk.store.project import Project

    out_path = check_table_path(args.out)
    if args.report:
        check_target(args.report)  # before anything is recorded: a target dpdesk would refuse is named now
    with Project.open(args.path, "w") as p:  # the writer lock keeps the ledger as previewed until recorded
        plan = p.plan(
            AdHoc("synthetic"), rows=args.rows, seed=args.seed, tau=args.tau, table_size=args.table_size
        )

        def after(release: Any) -> tuple[list[str], dict[str, Any]]:
            """The table and the fit report, written only once the export is recorded."""
            written = write_rows(plan, p.schema, out_path)
            report = None
            if args.report:
                report = write_report(plan, args.report, lambda q: describe_query(q, p.schema))
            line = f"wrote {plan.rows:,} synthetic rows to {written}" + (
                f" and the fit report to {report}" if report else ""
            )
            return [line], {"out": str(written), "report": None if report is None else str(report)}

        return release_flow(p, plan, registry.kind("synthetic"), args, keys=("plan", "release"), after=after)
