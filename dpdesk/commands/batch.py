"""``dpdesk batch plan|answer``: plan the pending requests together, then answer them from one release.

``plan`` shows the batch plan — the strategy chosen, its measurements, each request's cost alone (today's
rules) against the batch's, the system cost before and after, and for each request the budget cannot
cover the narrowest ±ε it could still get (a counter-offer) — and spends nothing. ``answer`` shows the
same plan, asks for confirmation on stdin unless ``--yes`` (end of input counts as "no"), releases the
measurements (one ledger entry each, recorded before anything is shown) and answers every covered
request from history. ``--requests q1,q2,…`` picks requests; ``--pending`` (the default) takes every
pending count request. ``--look-ahead [SHARE]`` first measures, on cells nobody has paid for, a strategy
for the queue's requests (public inputs only) spending SHARE of those cells' room (default: the
project's share, else 1); ``--no-look-ahead`` plans the batch alone; without either the project's
setting (``dpdesk project look-ahead``) decides. A batch stopped midway (a crash, a cancel) is resumed as it was
planned — its plan is in the ledger — unless ``--replan`` plans afresh. Exit codes: 0 done, 1 nothing released (not confirmed,
stale plan, over the budget), 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "batch",
        help="plan and answer several pending requests from one release",
        description="Plan the pending requests together (matrix-mechanism strategies).",
    )
    sub = p.add_subparsers(dest="batch_command", metavar="ACTION", parser_class=type(p))
    for name, text in (
        ("plan", "show the batch plan (spends nothing)"),
        ("answer", "release the batch plan and answer the requests it covers"),
    ):
        a = sub.add_parser(name, help=text)
        a.add_argument("path", metavar="PATH")
        which = a.add_mutually_exclusive_group()
        which.add_argument("--requests", metavar="IDS", help="comma-separated request ids (in this order)")
        which.add_argument("--pending", action="store_true", help="every pending count request (default)")
        ahead = a.add_mutually_exclusive_group()
        ahead.add_argument(
            "--look-ahead",
            nargs="?",
            const=ON,
            type=share_argument,
            metavar="SHARE",
            help="first measure, on cells nobody has paid for, a strategy for the queue's requests "
            "(public inputs only), spending SHARE in (0, 1] of those cells' room (default: the "
            "project's share, else 1); the preview shows what it spends",
        )
        ahead.add_argument(
            "--no-look-ahead",
            action="store_true",
            help="plan the batch alone (default: the project's setting, off unless set)",
        )
        a.add_argument(
            "--replan",
            action="store_true",
            help="plan afresh even when a batch was started and stopped midway (by default it is resumed "
            "as it was planned; what it bought counts as history either way)",
        )
        a.add_argument("--json", action="store_true", help="print one JSON object")
        if name == "answer":
            a.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p.set_defaults(func=run, _parser=p)


ON = True  # --look-ahead without a share (not a string: argparse would convert it)


def share_argument(text: str) -> float:
    """``--look-ahead SHARE``: a fraction in (0, 1] (argparse turns the error into one line, exit 2)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number (give a share in (0, 1], e.g. 0.5)"
        ) from None
    from dpdesk.engine.errors import DpdeskError
    from dpdesk.store.answering import check_share

    try:
        return check_share(value, "share")
    except DpdeskError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def look_ahead_from_args(args: argparse.Namespace, project) -> float | None:  # type: ignore[no-untyped-def]
    """The share this command plans with: the flag's, the project's, or None (off)."""
    if args.no_look_ahead:
        return None
    if args.look_ahead is None:
        return project.look_ahead
    if args.look_ahead is ON:
        from dpdesk.engine.planning.ahead import SHARE

        return project.look_ahead or SHARE
    return float(args.look_ahead)


def look_ahead_text(plan, share: float | None) -> str | None:  # type: ignore[no-untyped-def]
    """One line on the look-ahead: what it measures and costs, or why it was not used (None: off)."""
    la = plan.look_ahead
    if la is None:
        if share is None:
            return None
        return (
            f"look-ahead (share {share:.0%}): not used — no cell the queue's requests touch is unspent, or "
            "the batch alone serves the queue better"
        )
    fewer = (
        f"; it answers {plan.answered} of this batch where the batch alone answers {la.alone_answered}, to "
        "serve the queue's later requests"
        if la.alone_answered is not None and plan.answered < la.alone_answered
        else ""
    )
    return (
        f"look-ahead: {la.strategy} — the first {la.measurements} measurement(s), on {la.cells} cell(s) nobody "
        f"had paid for, built from the batch and {la.seen} other queued request(s), spending {la.share:.0%} of "
        f"their room: system cost {plan.system_cost:.6g} → {la.system_cost_after:.6g} from it alone{fewer}"
    )


def _ids(args: argparse.Namespace) -> list[str] | None:
    if not args.requests:
        return None
    ids = [t.strip() for t in args.requests.split(",") if t.strip()]
    if not ids:
        from dpdesk.engine.errors import DpdeskError

        raise DpdeskError("--requests: give at least one request id (q1,q2,…)")
    return ids


def plan_text(plan, share: float | None = None, accounting=None) -> str:  # type: ignore[no-untyped-def]
    """The plan as the curator reads it (CLI; the app shows the same numbers in its table); under zCDP
    (``accounting``) the system cost as ε at the project's δ, the largest cell's ρ beside it."""
    ahead = look_ahead_text(plan, share)
    cost = (
        f"{plan.system_cost:.6g} → {plan.system_cost_after:.6g} (total {plan.total_budget:g})"
        if accounting is None
        else f"ε = {accounting.epsilon_of(plan.system_cost):.6g} → {accounting.epsilon_of(plan.system_cost_after):.6g} "
        f"(total ε = {accounting.epsilon:g} at δ = {accounting.delta:g}; zCDP, largest cell's ρ "
        f"{plan.system_cost:.6g} → {plan.system_cost_after:.6g} of {plan.total_budget:.6g})"
    )
    r = plan.resumes
    lines = [
        *(
            [
                f"resumes the batch plan recorded at ledger entry #{r.entry}: {r.recorded} of its {r.count} "
                f"measurement(s) were bought before it stopped; the {len(plan.measurements)} left are bought "
                "as planned (`--replan` plans afresh)"
            ]
            if r is not None
            else []
        ),
        f"strategy: {plan.strategy} — {len(plan.measurements)} measurement(s); system cost {cost}",
        *([ahead] if ahead else []),
        f"answers {plan.answered} of {len(plan.requests)}; one by one (today's rules"
        f"{', watched claims aside' if plan.left_out else ''}) would answer "
        f"{'' if plan.one_by_one.checked else 'at most '}{plan.one_by_one_answered} at system cost "
        f"{plan.one_by_one.system_cost_after:.6g}",
        plan.why(),
    ]
    lines.append(f"{'request':<12} {'±ε':>9} {'δ':>6} {'alone α':>10}  with the batch")
    for p in plan.requests:
        alone = (
            "refused" if p.alone_alpha is None else "free" if p.alone_alpha == 0 else f"{p.alone_alpha:.4g}"
        )
        inb = {"answerable": "free now", "planned": "free after it", "uncovered": "not covered"}[p.status]
        note = ""
        if p.status == "uncovered":
            offer = p.reason if p.offer_eps is None else f"offer ±{p.offer_eps:.4g} at δ {p.request.delta:g}"
            free = "" if p.free_eps is None else f"; history gives ±{p.free_eps:.4g} free"
            note = f" ({offer}{free})"
        lines.append(f"{p.id:<12} {p.request.eps:>9.4g} {p.request.delta:>6.3g} {alone:>10}  {inb}{note}")
    lines.append(
        "alone α: the privacy loss a fresh answer to that request alone would charge its cells now (today's "
        "rules; the system cost rises only where it passes the most-spent cell)"
    )
    cands = ", ".join(
        f"{c.name} {'' if c.checked else 'at most '}{c.answered} at {c.system_cost_after:.4g}"
        for c in plan.candidates
    )
    lines.append(f"candidates: {cands}")
    lines.extend(f"left out: {why}" for why in plan.left_out)
    return "\n".join(lines)


def plan_json(plan, share: float | None) -> dict:  # type: ignore[no-untyped-def]
    """The plan's JSON with the look-ahead share it was asked to use (``look_ahead_share``: null when off)."""
    return plan.to_json() | {"look_ahead_share": share}


def run(args: argparse.Namespace) -> int:
    action = getattr(args, "batch_command", None)
    if action not in ("plan", "answer"):
        args._parser.print_help()
        return 2
    from dpdesk.store.batch import plan_pending, release_batch
    from dpdesk.store.project import Project

    ids = _ids(args)
    if action == "plan":
        with Project.open(args.path, "r") as p:
            share = look_ahead_from_args(args, p)
            plan = plan_pending(p, ids, look_ahead=share, replan=args.replan)
            accounting = p.accounting
        print(
            json.dumps(plan_json(plan, share), indent=2) if args.json else plan_text(plan, share, accounting)
        )
        return 0
    from dpdesk.commands.confirm import confirmed
    from dpdesk.engine.errors import BudgetError
    from dpdesk.store.errors import StaleAssessment

    out = sys.stderr if args.json else sys.stdout
    with Project.open(args.path, "w") as p:
        share = look_ahead_from_args(args, p)
        plan = plan_pending(p, ids, look_ahead=share, replan=args.replan)
        print(plan_text(plan, share, p.accounting), file=out)
        if not plan.measurements and not plan.ids("answerable"):
            print("nothing to release: the plan covers no request", file=out)
            if args.json:
                print(json.dumps({"plan": plan_json(plan, share), "release": None}))
            return 1
        la = plan.look_ahead
        question = (
            f"release {len(plan.measurements)} measurement(s)"
            + (f" ({la.measurements} of them the look-ahead)" if la else "")
            + ", raising the system cost to "
            f"{plan.system_cost_after:.6g}, and answer {plan.answered} request(s)?"
        )
        if not args.yes and not confirmed(question):
            return 1
        try:
            done = release_batch(p, plan)
        except (BudgetError, StaleAssessment) as exc:
            print(f"dpdesk: {exc}", file=sys.stderr)
            return 1
        for r in done.answers:
            print(r.reply(), file=out)
        if done.left_pending:
            print(f"still pending: {', '.join(done.left_pending)}", file=out)
        if args.json:
            print(json.dumps({"plan": plan_json(plan, share), "release": done.to_json()}))
    return 0
