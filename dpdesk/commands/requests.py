"""``dpdesk requests add|import|list``: queue data users' requests in a project."""

from __future__ import annotations

import argparse

from dpdesk.store import STATUSES


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "requests",
        help="queue and list requests in a project",
        description="Queue and list data users' requests in a project file.",
    )
    sub = p.add_subparsers(dest="requests_command", metavar="ACTION", parser_class=type(p))
    add = sub.add_parser("add", help="queue one request")
    add.add_argument("path", metavar="PATH")
    add.add_argument(
        "--query",
        required=True,
        metavar="Q",
        help="a count ('count(age=\"0-30\")', or JSON coefficients), max(A | box), argmax(A | box), "
        "or posterior(A | box; prior=…)",
    )
    from dpdesk.commands.terms import add_accuracy, add_confidence, add_epsilon

    add_accuracy(
        add,
        "count: the half-width ±A of the wanted interval (> 0); max/argmax: at most A records above / "
        "within A of the largest count; posterior: a Hellinger distance",
    )
    add_confidence(add, "the probability that the answer is within ±A, e.g. 0.95 or 95%%", numeric=False)
    add_epsilon(add, "max/argmax, posterior: the privacy loss ε every cell pays, instead of an accuracy")
    add.add_argument("--requester", default="", metavar="NAME")
    add.add_argument("--id", metavar="ID", help="request id (default r<N>)")
    edit = sub.add_parser("edit", help="change a pending request's terms (an accepted counter-offer)")
    edit.add_argument("path", metavar="PATH")
    edit.add_argument("--request", required=True, metavar="ID")
    add_accuracy(edit, "the new accuracy ±A (default: unchanged)")
    add_confidence(edit, "the new confidence, e.g. 0.95 or 95%% (default: unchanged)", numeric=False)
    add_epsilon(edit, "the new privacy loss ε of a max/argmax or posterior request")
    imp = sub.add_parser(
        "import",
        help="queue every request of a JSON list or a CSV (query[,accuracy,confidence,epsilon,requester,id]; "
        "the former eps, delta (1 − confidence) and alpha still work)",
    )
    imp.add_argument("path", metavar="PATH")
    imp.add_argument("file", metavar="FILE")
    lst = sub.add_parser("list", help="list requests (read-only)")
    lst.add_argument("path", metavar="PATH")
    lst.add_argument("--status", choices=STATUSES)
    lst.add_argument("--json", action="store_true")
    p.set_defaults(func=run, _parser=p)


def run(args: argparse.Namespace) -> int:
    from dpdesk.store.project import Project

    action = getattr(args, "requests_command", None)
    if action == "add":
        with Project.open(args.path, "w") as p:
            r = p.add_request(args.query, args.eps, args.delta, args.requester, args.id, args.alpha)
            print(f"queued {r.id}: {r.describe()} ({r.kind}; {r.terms()})")
        return 0
    if action == "edit":
        with Project.open(args.path, "w") as p:
            old = p.request(args.request)
            r = p.edit_request(
                old.id,
                old.query_text or old.query.to_json(),
                old.eps if args.eps is None else args.eps,
                old.delta if args.delta is None else args.delta,
                old.requester,
                old.alpha if args.alpha is None else args.alpha,
            )
            print(f"edited {r.id}: {r.describe()} ({r.kind}; {r.terms()})")
        return 0
    if action == "import":
        with Project.open(args.path, "w") as p:
            added = p.import_requests(args.file)
            print(f"queued {len(added)} request(s): {', '.join(r.id for r in added)}")
        return 0
    if action == "list":
        import json

        with Project.open(args.path, "r") as p:
            rows = p.requests(args.status)
        if args.json:
            print(json.dumps([r.to_json() for r in rows], indent=2))
        for r in [] if args.json else rows:
            print(f"{r.id}\t{r.status}\t{r.kind}\t{r.terms()}\t{r.requester or '-'}\t{r.describe()}")
        return 0
    args._parser.print_help()
    return 2
