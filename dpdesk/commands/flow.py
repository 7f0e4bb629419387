"""The command line's one preview → confirm → release, for a plan of any kind.

Every command that releases (``answer``, ``release publish|select``, ``synth``) and every command that
previews (``assess``) takes its words from the plan's kind (:mod:`dpdesk.engine.registry`); none has a
branch per kind. :func:`release_flow` prints the kind's preview, stops with exit code 1 when the plan
cannot be released or the curator does not confirm, records exactly the plan through
``Project.release`` (fsync'd before anything of it is shown) and prints the kind's outcome and the
ledger head — or, with ``--json``, one object ``{assessment, release}`` on stdout (the words go to
stderr). :func:`plan_options` turns a command's flags into the options the kind's plan takes.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpdesk.commands.confirm import confirmed

if TYPE_CHECKING:
    from dpdesk.engine.kinds.base import Asked, Kind
    from dpdesk.engine.mechanisms.base import ReleasePlan
    from dpdesk.store.project import Project
    from dpdesk.store.release import Release
    from dpdesk.store.watching import ClaimStatus

DECLINED_BY_CLAIM = 3  # the exit code of a request a watched claim declines (2 is bad input)

# flag → the plan option it gives (a count's --table-size and --pace are what-if settings: see below)
_FLAGS = {
    "interval": "--interval",
    "reference_size": "--reference-size",
    "tau": "--tau",
    "table_size": "--table-size",
    "pace": "--pace",
}


def plan_options(args: argparse.Namespace, kind: Kind, where: str) -> dict[str, Any]:
    """The plan options the flags in ``args`` give ``kind`` (``where``: what it is asked for, for the error).

    A flag the kind's plan does not read is one line naming it; ``--table-size`` is a what-if prior for a
    count (its released window trimmed to a table of that size) and the table size an estimate reads
    for the others; ``--pace`` is a what-if spend policy.
    """
    from dpdesk.engine.budget.policy import SpendPolicy
    from dpdesk.engine.errors import DpdeskError
    from dpdesk.engine.inference.prior import BoundedPrior

    given = {name: getattr(args, name) for name in _FLAGS if getattr(args, name, None) is not None}
    takes = kind.takes
    out: dict[str, Any] = {"method": getattr(args, "method", None)}
    if "interval" in given:
        given["interval"] = (args.interval[0], args.interval[1])
    if "pace" in given:
        given["policy"] = SpendPolicy(floor=args.pace[0], cap=args.pace[1])
    if "table_size" in given and "prior" in takes:
        given["prior"] = BoundedPrior(given.pop("table_size"))
    for name, value in given.items():
        if name == "pace":
            continue
        if name not in takes:
            flag = _FLAGS.get(name, "--table-size" if name == "prior" else "--pace")
            raise DpdeskError(f"{flag} does not apply to {where}, a {kind.label}")
        out[name] = value
    if "policy" in given and "policy" not in takes:
        raise DpdeskError(f"--pace does not apply to {where}, a {kind.label}")
    return out


def heading(asked: Asked | None, kind: Kind) -> list[str]:
    """The first line about a queued request (none for a release asked on the spot)."""
    describe = getattr(asked, "describe", None)  # a queued request (store's StoredRequest) describes itself
    if asked is None or asked.id is None or describe is None:
        return []
    return [kind.heading(asked, describe())]


def witness_line(release: Release, path: Path, queued: bool) -> str:
    who = "the requester's witness:" if queued else "keep it:"
    return f"ledger head {release.witness} ({who} dpdesk verify {path} --extends HASH)"


def declined_lines(
    project: Project, plan: ReleasePlan, kind: Kind, asked: Asked | None, statuses: Sequence[ClaimStatus]
) -> list[str]:
    """A queued request watched claims decline: its heading, its preview unless that states a decision,
    the claims' decision, the kind's counter-offer within the claims and how to go on."""
    declined = [s for s in statuses if s.verdict == "declined"]
    reason = declined[0].check.reason if declined[0].check is not None else ""
    lines = [*heading(asked, kind), *([] if kind.preview_decides else kind.preview(plan))]
    lines.append(f"decision: declined by claim {', '.join(s.watched.id for s in declined)} — {reason}")
    lines += kind.offer_lines(plan, kind.claim_offer(plan, statuses), str(project.path))
    lines.append(
        "not answered: accept a counter-offer (dpdesk requests edit), or record the refusal with "
        f"`dpdesk reject {project.path} --request {plan.request_id}`"
    )
    return lines


def release_flow(
    project: Project,
    plan: ReleasePlan,
    kind: Kind,
    args: argparse.Namespace,
    *,
    asked: Asked | None = None,
    keys: tuple[str, str] = ("assessment", "release"),
    after: Callable[[Release], tuple[list[str], Mapping[str, object]]] | None = None,
) -> int:
    """Show ``plan`` in its kind's words, ask, release it and show the outcome (see the module docstring).

    ``after(release)`` runs once the release is recorded (e.g. writing a synthetic table) and gives the
    lines and JSON members to add. A queued request a watched claim declines is never offered for
    confirmation: its decision reads ``declined by claim c1`` with the kind's counter-offer. Exit codes: 0
    released, 1 not released (not releasable, or not confirmed), 3 declined by a watched claim
    (:data:`DECLINED_BY_CLAIM`; 2 is bad input).
    """
    from dpdesk.store.checkpoints import checkpoint

    queued = getattr(asked, "id", None) is not None
    out = sys.stderr if args.json else sys.stdout
    shown = kind.plan_json(plan, cell_costs=getattr(args, "cell_costs", False))
    statuses = project.claim_statuses(plan) if queued and plan.releasable else []
    if any(s.verdict == "declined" for s in statuses):  # never offered for confirmation
        print("\n".join(declined_lines(project, plan, kind, asked, statuses)), file=out)
        if args.json:
            print(json.dumps({keys[0]: shown, keys[1]: None}))
        return DECLINED_BY_CLAIM
    print("\n".join([*heading(asked, kind), *kind.preview(plan), *per_person(project)]), file=out)
    if not plan.releasable:
        if queued:
            rid = getattr(asked, "id", None)
            why = f"not answered: record the refusal with `dpdesk reject {project.path} --request {rid}`"
        else:
            why = f"not released: {plan.reason}"
        print(why, file=out)
        if args.json:
            print(json.dumps({keys[0]: shown, keys[1]: None}))
        return 1
    unconfirmed = "not answered (not confirmed)" if queued else kind.unconfirmed
    if not args.yes and not confirmed(kind.question(plan), unconfirmed):
        return 1
    release = project.release(plan)  # exactly the plan shown; recorded (fsync'd) before it is returned
    lines, extra = after(release) if after is not None else ([], {})
    if args.json:
        print(json.dumps({keys[0]: shown, keys[1]: kind.release_json(release), **extra}), flush=True)
    else:
        text = [*kind.outcome(release, plan, str(project.path)), *lines]
        print("\n".join([*text, witness_line(release, project.path, queued)]), flush=True)
    checkpoint("cli:printed")
    return 0


def per_person(project: Project) -> list[str]:
    """On a project whose people hold up to k > 1 rows: how the per-row α above adds up to the system
    cost, one person's privacy loss ε (docs/person-level.md); nothing otherwise."""
    from dpdesk.engine.budget.person import person_rule

    rule = person_rule(project.schema)
    if rule.rows_are_people:
        return []
    return [
        f"per person: ε is a row's price in each cell it charges; the system cost, one person's privacy "
        f"loss ε, is {rule.how()}"
    ]


def show_plan(
    project: Project, plan: ReleasePlan, kind: Kind, args: argparse.Namespace, asked: Asked | None = None
) -> None:
    """``dpdesk assess`` of a plan of any kind: its report (or JSON), watched claims and the kind's
    counter-offer when they decline it; nothing is spent."""
    from dpdesk.commands.watch import status_line

    claims = project.claim_statuses(plan)  # every kind's verdict before anything is confirmed
    if args.json:
        obj = kind.plan_json(plan, cell_costs=getattr(args, "cell_costs", False))
        print(json.dumps({**obj, "claims": [s.to_json() for s in claims]}))
        return
    declined = [s.watched.id for s in claims if s.verdict == "declined"]
    offer = kind.claim_offer(plan, claims)
    lines = kind.report(plan, *heading(asked, kind), declined=declined)
    lines += [f"  {line}" for line in per_person(project)]
    lines += [f"  claim           {status_line(s, offer)}" for s in claims]
    if offer is not None:
        lines += kind.offer_lines(plan, offer, str(project.path))
    print("\n".join([*lines, kind.previewed]))
