"""``dpdesk verify PATH``: audit the ledger; exit 0 only if every check holds (1 if one fails).

Besides the heads given with ``--extends``, the file is checked against every head this machine recorded or
handed out (the receipt log, :mod:`dpdesk.store.receipts`); a head it vouches for joins that log.
"""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "verify",
        help="audit a project's ledger (read-only)",
        description="Check the ledger's hash chain and gap-free sequence, recompute the budget from it and "
        "check the total was never exceeded. Exit 0 only if all hold; 1 names the first bad entry.",
    )
    p.add_argument("path", metavar="PATH")
    p.add_argument(
        "--extends",
        action="append",
        default=[],
        metavar="HASH",
        help="also check that the ledger still contains this ledger head (a release's witness); repeatable",
    )
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    p.set_defaults(func=run)


def _others(report) -> str:  # type: ignore[no-untyped-def]
    """Entries of the other release kinds (posterior, partition, selection, …), e.g. ", 2 posterior"."""
    known = ("fresh", "inferred", "rejected", "rebind")
    return "".join(f", {n} {kind}" for kind, n in report.kinds if kind not in known)


def _delta(report) -> str:  # type: ignore[no-untyped-def]
    if not report.delta_cap and not report.delta_spent:
        return ""
    return f"; largest per-cell δ {report.delta_spent:.3g} of the cap {report.delta_cap:g}"


def run(args: argparse.Namespace) -> int:
    import json
    import re

    from dpdesk.engine.errors import DpdeskError
    from dpdesk.store.project import Project

    for h in args.extends:
        if not re.fullmatch(r"[0-9a-f]{64}", h):
            raise DpdeskError(
                f"--extends {h!r}: a ledger head is 64 lowercase hex digits (a release's witness)"
            )
    with Project.open(args.path, "r") as p:
        report = p.verify(extends=args.extends)
        if report.ok and report.head_hash:  # the head it vouches for joins this machine's receipt log
            p.receipt([(report.entries, report.head_hash)], "verified")
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    elif report.ok:
        print(
            f"OK: {report.entries} ledger entries ({report.fresh} fresh, {report.inferred} inferred, "
            f"{report.rejected} rejected, {report.rebinds} rebinds{_others(report)}); system cost "
            f"{_cost(report)}{_delta(report)}; head {report.head_hash or '-'}"
            + (f"; still extends the {len(args.extends)} head(s) given" if args.extends else "")
            + (
                f"; holds the {report.receipts} head(s) this machine recorded or handed out"
                if report.receipts
                else ""
            )
        )
    else:
        where = f"first bad entry: {report.first_bad_seq}" if report.first_bad_seq is not None else "project"
        print(f"FAILED ({where}): {report.problems[0]}")
        for extra in report.problems[1:]:
            print(f"  also: {extra}")
    if not args.json:
        for shown in report.exposes:  # an older file's unkeyed source bindings: not a failure, but said
            print(f"  exposes: {shown}")
    return 0 if report.ok else 1


def _cost(report) -> str:  # type: ignore[no-untyped-def]
    """The system cost of the total (under zCDP: as ε at the project's δ, with the largest cell's ρ)."""
    acc = report.accounting
    if acc is None or report.system_cost is None:
        return f"{report.system_cost:.6g} of {report.total_budget:g}"
    return (
        f"ε = {report.epsilon_spent:.6g} of {acc.epsilon:g} at δ = {acc.delta:g} (zCDP: largest cell's "
        f"ρ = {report.system_cost:.6g} of {report.total_budget:.6g}, {acc.conversion} conversion)"
    )
