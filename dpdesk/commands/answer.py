"""``dpdesk answer`` and ``dpdesk reject``: decide a queued request.

``answer`` shows the assessment (decision, cost, budget before and after), asks for confirmation on
stdin unless ``--yes`` (end of input counts as "no"), then releases exactly that assessment — an
inferred answer for free or a fresh noisy one, a max/argmax, a posterior — recorded durably in the
ledger *before* it is printed, with the ledger head it leaves (the requester's witness for ``dpdesk
verify --extends``). ``--query`` releases a posterior or a zero-cost estimate asked on the spot. The
request's kind makes the plan and its words (:func:`dpdesk.commands.flow.release_flow`). A request a
watched claim declines is never offered for confirmation: its decision reads ``declined by claim c1``
with the counter-offer within the claims. Exit codes: 0 released, 1 not released (the decision is reject,
or not confirmed), 2 bad input, 3 declined by a watched claim
(:data:`~dpdesk.commands.flow.DECLINED_BY_CLAIM`).
"""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    from dpdesk.engine.mechanisms.registry import method_names

    a = subparsers.add_parser(
        "answer",
        help="assess a request, then release its answer (recorded first)",
        description="Assess a queued request and release its answer per the decision.",
    )
    a.add_argument("path", metavar="PATH")
    which = a.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--request", metavar="ID", help="a queued request of any kind (count, max/argmax, posterior)"
    )
    which.add_argument(
        "--query",
        metavar="TEXT",
        help="a posterior of proportions: 'posterior(attr | box; prior=…; budget=…)', "
        "or a zero-cost estimate: 'estimate(count(…))'",
    )
    a.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    a.add_argument("--json", action="store_true", help="print one JSON object (assessment and release)")
    a.add_argument("--method", default=method_names()[0], choices=method_names(), help="posterior method")
    from dpdesk.commands.assess import add_cell_costs_argument, add_reference_argument, add_tau_argument

    add_cell_costs_argument(a)
    add_reference_argument(a)
    add_tau_argument(a)
    a.set_defaults(func=run_answer)
    r = subparsers.add_parser("reject", help="record the refusal of a request (spends nothing)")
    r.add_argument("path", metavar="PATH")
    r.add_argument("--request", required=True, metavar="ID")
    r.add_argument("--reason", default="", metavar="TEXT")
    r.set_defaults(func=run_reject)


def _confidence(entry) -> str:  # type: ignore[no-untyped-def]
    """`` (±a at c % confidence)`` for a count entry that states its promise, else ""."""
    from dpdesk.engine.answering.rounding import accuracy_text

    p = entry.payload
    return f" ({accuracy_text(float(p['eps']), float(p['delta']))})" if "eps" in p and "delta" in p else ""


def _already(p, request_id: str) -> str | None:  # type: ignore[no-untyped-def]
    done = p.entry_for(request_id)
    if done is None:
        return None
    if done.kind == "rejected":
        return f"request {request_id!r} was already rejected (ledger entry {done.seq}); nothing was drawn"
    if "interval" not in done.payload:  # a release of another kind (max/argmax, posterior)
        return f"request {request_id!r} was already answered ({done.kind}, ledger entry {done.seq}); nothing new was drawn"
    return (
        f"request {request_id!r} was already answered ({done.kind}, ledger entry {done.seq}): "
        f"{done.shown()} {done.shown_interval()}{_confidence(done)}; nothing new was drawn"
    )


def run_answer(args: argparse.Namespace) -> int:
    from dpdesk.commands.assess import asked_of
    from dpdesk.commands.flow import plan_options, release_flow
    from dpdesk.engine import registry
    from dpdesk.engine.errors import DpdeskError
    from dpdesk.store.checkpoints import checkpoint
    from dpdesk.store.project import Project

    if args.query is not None and not registry.kind_of_text(args.query).on_the_spot:
        raise DpdeskError(
            "--query takes a posterior of proportions, posterior(...), or a zero-cost estimate, "
            "estimate(...); queue a count request with `dpdesk requests add` and answer it with --request"
        )
    with Project.open(args.path, "w") as p:  # the writer lock keeps the ledger as assessed until release
        asked = asked_of(p, args)
        if asked.id is not None:
            already = _already(p, asked.id)
            if already:
                p.settled()  # shown means stored in the main file
                raise DpdeskError(already)
        kind = registry.kind(asked.kind)
        where = f"request {asked.id}" if asked.id is not None else "this request"
        plan = p.plan(asked, **plan_options(args, kind, where))  # the project's settings
        code = release_flow(p, plan, kind, args, asked=asked)
    if code == 0:
        checkpoint("cli:closed")
    return code


def run_reject(args: argparse.Namespace) -> int:
    from dpdesk.engine.errors import DpdeskError
    from dpdesk.store.project import Project

    with Project.open(args.path, "w") as p:
        p.request(args.request)
        already = _already(p, args.request)
        if already:
            raise DpdeskError(already)
        entry = p.reject(args.request, args.reason)
        print(f"rejected {args.request} (ledger entry {entry.seq})")
    return 0
