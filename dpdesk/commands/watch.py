"""``dpdesk watch add|list|remove``: watched claims of a project (inference control, docs/claims.md).

A claim ``L₀ ≤ θ ≤ U₀`` about a query θ is watched from its ``watch`` ledger entry on: every later
release is checked against it from public inputs only, and one that would make ``Pr(C)`` reach the
threshold τ with more probability than the claim's risk budget has left is declined before anything is
drawn. Claims must come from public knowledge or policy, never from looking at the true counts.
"""

from __future__ import annotations

import argparse
import json
import math

ADVICE = (
    "choose claims from public knowledge or policy, never by looking at the true counts: a claim "
    "picked because a cell is small, and releases declined because of it, tell the world it is small"
)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "watch",
        help="watch claims that releases must not make too certain",
        description="Watched claims: releases that would make one too certain are declined. "
        + ADVICE[0].upper()
        + ADVICE[1:]
        + ".",
    )
    sub = p.add_subparsers(dest="watch_command", metavar="ACTION", parser_class=type(p))
    add = sub.add_parser("add", help="watch a claim L ≤ θ ≤ U (a ledger entry)")
    add.add_argument("path", metavar="PATH")
    add.add_argument(
        "--query", required=True, metavar="Q", help="θ: text form, e.g. 'count(age=\"65-90\")', or JSON"
    )
    side = add.add_mutually_exclusive_group(required=True)
    side.add_argument("--between", nargs=2, metavar=("L", "U"), help="the claim L ≤ θ ≤ U")
    side.add_argument("--at-most", metavar="U", help="the claim θ ≤ U (no lower end)")
    side.add_argument("--at-least", metavar="L", help="the claim θ ≥ L (no upper end)")
    add.add_argument(
        "--threshold", required=True, metavar="TAU", help="τ in (0, 1): Pr(claim) must not reach it"
    )
    add.add_argument(
        "--risk",
        required=True,
        metavar="R",
        help="risk budget in (0, 1): the most probability, over all later releases, that Pr(claim) "
        "reaches τ at any true θ inside the claim",
    )
    add.add_argument("--name", default="", metavar="NAME", help="a label (default: the query's text)")
    lst = sub.add_parser("list", help="the watched claims, Pr(claim) now and risk left (read-only)")
    lst.add_argument("path", metavar="PATH")
    lst.add_argument("--json", action="store_true")
    rm = sub.add_parser("remove", help="stop watching a claim (a ledger entry; its history stays)")
    rm.add_argument("path", metavar="PATH")
    rm.add_argument("id", metavar="ID", help="the claim's id (c1, c2, … as listed)")
    rm.add_argument("--reason", default="", metavar="TEXT")
    p.set_defaults(func=run, _parser=p)


def _number(text: str, option: str) -> float:
    from dpdesk.engine.errors import DpdeskError

    try:
        value = float(text)
    except ValueError:
        raise DpdeskError(f"{option}: {text!r} is not a number") from None
    if not math.isfinite(value):
        raise DpdeskError(
            f"{option}: {text!r} must be a finite number (use --at-most / --at-least for an open side)"
        )
    return value


def _sides(args: argparse.Namespace) -> tuple[float | None, float | None]:
    if args.between:
        return _number(args.between[0], "--between L"), _number(args.between[1], "--between U")
    if args.at_most is not None:
        return None, _number(args.at_most, "--at-most")
    return _number(args.at_least, "--at-least"), None


def status_line(s, offer=None) -> str:
    """One claim for a terminal: id, claim, Pr(C) now, risk left, and a plan's verdict if any (``offer``:
    the counter-offer within the claims, whose α is the one stated)."""
    c, r = s.watched.claim, s.reading
    now = f"Pr(C) = {r.probability:.4f}" if r.estimable else "Pr(C) not estimable (worst case)"
    line = (
        f"{s.watched.id}\t{c.name}: {c.describe()}\t{now}\trisk left {s.watched.remaining:.4g} of {c.risk:g}"
    )
    if s.check is not None:
        line += f"\t{s.verdict.upper()}"
        if s.check.touches:
            line += f" (risk of crossing {s.check.risk:.4g})"
        if offer is not None and offer.eps is not None and s.verdict == "declined":
            line += f"; up to ε = {offer.alpha:.4g} passes the claims and fits the budget"
        elif s.largest_alpha is not None and offer is None:
            line += f"; largest ε that passes {s.largest_alpha:.4g}"
    return line


def run(args: argparse.Namespace) -> int:
    from dpdesk.store.project import Project

    action = getattr(args, "watch_command", None)
    if action == "add":
        low, high = _sides(args)
        threshold, risk = _number(args.threshold, "--threshold"), _number(args.risk, "--risk")
        with Project.open(args.path, "w") as p:
            w = p.watch(args.query, low, high, threshold, risk, args.name)
            print(f"watching {w.id}: {w.claim.name}: {w.claim.describe()}")
            print(f"note: {ADVICE}")
        return 0
    if action == "list":
        with Project.open(args.path, "r") as p:
            statuses = p.claim_statuses()
        if args.json:
            print(json.dumps([{**s.watched.to_json(), **s.to_json()} for s in statuses], indent=2))
        else:
            for s in statuses:
                print(status_line(s))
            if not statuses:
                print("no claims are watched")
        return 0
    if action == "remove":
        with Project.open(args.path, "w") as p:
            entry = p.unwatch(args.id, args.reason)
            print(f"stopped watching {args.id} (ledger entry {entry.seq})")
        return 0
    args._parser.print_help()
    return 2
