"""Zero-cost estimates on the command line: ``estimate(<count query>)`` (issue 17, seed §3).

``dpdesk assess PROJECT --query 'estimate(count(age="20-30"))' [--tau T] [--table-size N]`` shows the
kernel-PCA shrinkage estimate of the query from the project's released answers: its value at the τ
chosen by 5-fold cross-validation (or given), the cross-validation's error estimate over queries like
the history's, and the history's own unbiased estimate when there is one. It is **biased** and meets
no (ε, δ). Nothing is spent and nothing is recorded.

``dpdesk answer PROJECT --query 'estimate(...)'`` shows the same preview, asks for confirmation (unless
``--yes``) and records it through the one release path: a zero-cost ledger entry of kind
``estimate``, recorded before it is printed. ``--json`` prints ``{"assessment", "release"}``. Exit
codes: 0 recorded (or previewed), 1 not confirmed, 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from typing import Any

from dpdesk.commands.confirm import confirmed

_HEAD = re.compile(r"\s*estimate\s*\((.*)\)\s*$", re.S)


def is_estimate(text: str | None) -> bool:
    """Whether a ``--query`` text asks for a zero-cost estimate, ``estimate(...)``."""
    return isinstance(text, str) and re.match(r"\s*estimate\s*\(", text) is not None


def add_tau_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--tau",
        type=float,
        metavar="T",
        help="estimate(...)/synth: the shrinkage trade-off τ (default: chosen by 5-fold cross-validation "
        "on the released answers; 'inf' for estimate gives the unbiased estimate where one exists)",
    )


def inner_query(text: str) -> str:
    from dpdesk.engine.errors import QueryError

    m = _HEAD.match(text)
    if m is None or not m.group(1).strip():
        raise QueryError(
            f'estimate(...) takes one count query, e.g. estimate(count(age="20-30")): got {text.strip()!r}'
        )
    return m.group(1)


def plan_in_project(project: Any, args: argparse.Namespace) -> Any:
    from dpdesk.store.estimating import estimate_plan

    return estimate_plan(
        project,
        inner_query(args.query),
        tau=getattr(args, "tau", None),
        table_size=getattr(args, "table_size", None),
    )


def run_preview(args: argparse.Namespace) -> int:
    """``dpdesk assess PROJECT --query 'estimate(...)'``: print the estimate; nothing is spent or recorded."""
    from dpdesk.store.project import Project

    with Project.open(args.project, mode="r") as project:
        plan = plan_in_project(project, args)
    if args.json:
        print(json.dumps(plan.to_json()))
    else:
        print("\n".join(plan.lines()))
        print("nothing was recorded (preview only)")
    return 0


def run_release(args: argparse.Namespace) -> int:
    """``dpdesk answer PROJECT --query 'estimate(...)'``: preview, confirm, record, print."""
    from dpdesk.store.checkpoints import checkpoint
    from dpdesk.store.project import Project

    with Project.open(
        args.path, "w"
    ) as p:  # the writer lock keeps the ledger as previewed until it is recorded
        plan = plan_in_project(p, args)
        out = sys.stderr if args.json else sys.stdout
        print("\n".join(plan.lines()), file=out)
        if not args.yes and not confirmed(
            "record this biased estimate (free) in the ledger?", "not recorded (not confirmed)"
        ):
            return 1
        release = p.release(plan)
        if args.json:
            print(json.dumps({"assessment": plan.to_json(), "release": release.to_json()}), flush=True)
        else:
            tau = "∞" if not math.isfinite(plan.tau) else f"{plan.tau:.4g}"
            print(
                f"estimate of {plan.text}: {plan.value:.6g} (biased, τ = {tau}; free; ledger entry {release.entry.seq})"
            )
            print(
                f"ledger head {release.witness} (dpdesk verify {p.path} --extends HASH checks the ledger still "
                "holds it)",
                flush=True,
            )
        checkpoint("cli:printed")
    return 0
