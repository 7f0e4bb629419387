"""``dpdesk export PATH --history OUT.json``: the released history (DESIGN §6), releasable values only."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "export",
        help="write the released history (DESIGN §6 format)",
        description="Write the fresh answers released so far (query, ε, answer, noise family) with the "
        "schema and total budget. Never counts, never the data.",
    )
    p.add_argument("path", metavar="PATH")
    p.add_argument("--history", required=True, metavar="OUT", help="the .history.json file to write")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from dpdesk.store.atomic import write_atomically
    from dpdesk.store.project import Project

    with Project.open(args.path, "r") as p:
        obj = p.export_history()
    out = Path(args.history)
    write_atomically(
        out, lambda tmp: tmp.write_text(json.dumps(obj, indent=1) + "\n", encoding="utf-8", newline="\n")
    )
    print(f"wrote {len(obj['rows'])} released answer(s) to {out}")
    return 0
