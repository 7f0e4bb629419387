"""Posterior-of-proportions requests on the command line (docs/dirichlet.md §8).

``dpdesk assess PROJECT --query 'posterior(education | age="65-90"; prior=1; budget=0.5)'`` prices and
previews the release against the project's ledger — nothing is spent, no data is read. The preview
shows the per-cell charge, the data-free guarantee of the global mechanism, each mechanism's expected
accuracy at a public reference table (``--reference-size``, or the public ``size=``), and the budget
before and after. ``--json`` prints the preview as one object.
"""

from __future__ import annotations

import argparse
import json
import re
from typing import Any

_HEAD = re.compile(r"\s*posterior\s*\(")


def is_posterior(text: str | None) -> bool:
    """Whether a ``--query`` text asks for a posterior of proportions."""
    return isinstance(text, str) and _HEAD.match(text) is not None


def add_reference_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--reference-size", type=int, metavar="M",
                   help="posterior: compare each mechanism's expected accuracy at a public reference table of M "
                        "records split as the prior (never the data)")


def assess_in_project(project: Any, text: str, reference_size: int | None = None) -> Any:
    """The :class:`~dpdesk.engine.dirichlet.plan.PosteriorAssessment` of ``text`` against ``project``'s ledger."""
    from dpdesk.engine.dirichlet.plan import assess_request
    from dpdesk.engine.dirichlet.request import parse_posterior
    from dpdesk.engine.errors import DpdeskError

    if reference_size is not None and reference_size < 0:
        raise DpdeskError(f"--reference-size ({reference_size}) must be a non-negative whole number")
    query = parse_posterior(text, project.schema)
    public: dict[str, Any] = {"cell_costs": project.history().cell_costs, "total_budget": float(project.total_budget)}
    if reference_size is not None:
        public["reference_size"] = reference_size
    return assess_request(query, **public)


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
