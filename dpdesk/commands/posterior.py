"""Posterior-of-proportions requests on the command line (docs/dirichlet.md §8).

``dpdesk assess PROJECT --query 'posterior(education | age="65-90"; prior=1; budget=0.5)'`` prices and
previews the release against the project's ledger — nothing is spent, no data is read. The preview
shows the per-cell charge, the data-free guarantee of the global mechanism, each mechanism's expected
accuracy at a public reference table (``--reference-size``, or the public ``size=``), and the budget
before and after. ``--json`` prints the preview as one object.

``dpdesk answer PROJECT --query 'posterior(...)'`` shows the same preview, asks for confirmation
(unless ``--yes``; end of input counts as "no"), then releases exactly the previewed plan through the
project's one release path — recorded durably in the ledger before the released Dirichlet is printed.
``--json`` prints ``{"assessment", "release"}`` with the released parameters. Exit codes as for count
requests: 0 released, 1 not released (does not fit, or not confirmed), 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import re
from typing import Any

from dpdesk.commands.confirm import confirmed

_HEAD = re.compile(r"\s*posterior\s*\(")


def is_posterior(text: str | None) -> bool:
    """Whether a ``--query`` text asks for a posterior of proportions."""
    return isinstance(text, str) and _HEAD.match(text) is not None


def add_reference_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--reference-size",
        type=int,
        metavar="M",
        help="posterior: compare each mechanism's expected accuracy at a public reference table of M "
        "records split as the prior (never the data)",
    )


def assess_in_project(project: Any, text: str, reference_size: int | None = None) -> Any:
    """The :class:`~dpdesk.engine.dirichlet.plan.PosteriorAssessment` of ``text`` against ``project``'s ledger."""
    from dpdesk.engine.dirichlet.plan import assess_request
    from dpdesk.engine.dirichlet.request import parse_posterior
    from dpdesk.engine.errors import DpdeskError

    if reference_size is not None and reference_size < 0:
        raise DpdeskError(f"--reference-size ({reference_size}) must be a non-negative whole number")
    query = parse_posterior(text, project.schema)
    public = project.plan_inputs()
    if reference_size is not None:
        public["reference_size"] = reference_size
    return assess_request(query, **public)


def release_json(release: Any) -> dict[str, Any]:
    """The recorded release as JSON, with the released Dirichlet parameters and the noisy values."""
    from dpdesk.engine.dirichlet.plan import PosteriorRelease

    out = release.to_json()
    r = PosteriorRelease.from_payload(release.entry.payload)
    out.update(
        parameters=r.parameters.tolist(),
        noisy_size=r.noisy_size,
        noisy_counts=None if r.noisy_counts is None else list(r.noisy_counts),
    )
    return out


def run_release(args: argparse.Namespace) -> int:
    """``dpdesk answer PROJECT --query 'posterior(...)'``: preview, confirm, release, print."""
    import sys

    from dpdesk.engine.dirichlet.plan import PosteriorRelease
    from dpdesk.engine.dirichlet.summary import preview_lines, release_lines
    from dpdesk.store.checkpoints import checkpoint
    from dpdesk.store.project import Project

    with Project.open(args.path, "w") as p:  # the writer lock keeps the ledger as previewed until release
        plan = assess_in_project(p, args.query, getattr(args, "reference_size", None))
        out = sys.stderr if args.json else sys.stdout
        print("\n".join(preview_lines(plan)), file=out)
        if not plan.releasable:
            print("not released", file=out)
            if args.json:
                print(json.dumps({"assessment": plan.to_json(), "release": None}))
            return 1
        if not args.yes:
            cost = f"α = {plan.alpha:.6g}" + (f" and δ = {plan.delta:.3g}" if plan.delta else "")
            if not confirmed(f"release it, each of the box's cells paying {cost}?"):
                return 1
        release = p.release(plan)  # exactly the plan shown; recorded (fsync'd) before it is returned
        if args.json:
            print(json.dumps({"assessment": plan.to_json(), "release": release_json(release)}), flush=True)
        else:
            posterior = PosteriorRelease.from_payload(release.entry.payload)
            print("\n".join(release_lines(posterior, plan.query)))
            print(
                f"ledger entry {release.entry.seq}; ledger head {release.witness} (keep it: "
                f"dpdesk verify {p.path} --extends HASH checks the ledger still holds this release)",
                flush=True,
            )
        checkpoint("cli:printed")
    return 0


def run_preview(args: argparse.Namespace) -> int:
    """``dpdesk assess PROJECT --query 'posterior(...)'``: print the preview; nothing is spent."""
    from dpdesk.engine.dirichlet.summary import preview_lines
    from dpdesk.store.project import Project

    with Project.open(args.project, mode="r") as project:
        a = assess_in_project(project, args.query, getattr(args, "reference_size", None))
    if args.json:
        print(json.dumps(a.to_json()))
    else:
        print("\n".join(preview_lines(a)))
        print("nothing was spent (preview only)")
    return 0
