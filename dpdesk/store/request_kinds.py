"""The kinds of request the queue holds, and how a queued request of each kind becomes a release plan.

One table, :data:`KINDS`. A request's text says its kind by its head:

==============  =========================================  =========================================
kind            text form                                  what the requester states besides it
==============  =========================================  =========================================
``count``       ``count(age="0-30")``, ``[1, 0, 2, …]``    accuracy ``(ε, δ)``: ±ε with probability
                                                           ≥ 1 − δ (the engine decides α)
``selection``   ``max(age | sex="F")``, ``argmax(edu)``    accuracy ``(ε, δ)`` — at most ε records
                                                           above the released value (max), its count
                                                           within ε of the largest (argmax), at
                                                           1 − δ — or a per-cell budget ``α``
``posterior``   ``posterior(edu | age="65-90"; prior=1)``  a budget ``α`` (or ``budget=`` in the
                                                           text), or for the global mechanism an
                                                           accuracy ``(ε, δ)`` = ``within``/``failure``
==============  =========================================  =========================================

Each kind stores the same row (store/db.py format 5): its text, the cells it reads (a count's
coefficients, another kind's box — what "who asked about these cells" and the audit read), ``eps``,
``delta`` and ``alpha`` (empty where the kind takes none). Reading a request checks it completely —
the same checks its plan makes, at zero cost — so a request that is queued can always be assessed.
:func:`plan_for` prices a queued selection or posterior request from the ledger's public inputs
(``Project.plan_inputs``) into the engine's :class:`~dpdesk.engine.mechanisms.base.ReleasePlan`, carrying
the request id; ``Project.release`` records exactly it and marks the request answered. Count requests
are assessed against history by ``Project.assess`` (the engine's workflow).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.mechanisms.base import ReleasePlan
from dpdesk.engine.queries.query import Query
from dpdesk.engine.schema import Schema

__all__ = [
    "DEFAULT_REFERENCE_SIZE",
    "KINDS",
    "RequestKind",
    "cost_text",
    "kind_named",
    "kind_of_text",
    "plan_for",
    "read_kind_request",
    "released_json",
    "terms_text",
]

# A posterior request's expected accuracies are compared at a public reference table of this many
# records split as its prior (never the data), unless its size is public or the caller gives another.
DEFAULT_REFERENCE_SIZE = 100
SELECTION_DELTA = 0.05  # the δ of a max/argmax's public accuracy statement when the request gives α only


@dataclass(frozen=True)
class Read:
    """A request checked for its kind: the cells it reads and what it states besides its text."""

    kind: str
    text: str | None
    cells: Query
    eps: float | None
    delta: float | None
    alpha: float | None


@dataclass(frozen=True)
class RequestKind:
    """One queueable kind: its stored name, words for it, how its text is recognised and read."""

    name: str
    label: str
    example: str
    head: re.Pattern[str] | None  # None: anything no other kind claims (a count's text or coefficients)
    read: Callable[[Schema, Any, float | None, float | None, float | None], Read]
    preview: Callable[[Any], list[str]] | None = None  # a plan's words before the curator confirms
    outcome: Callable[[Any, Any], list[str]] | None = None  # (release, plan) → what was released, in words

    def claims(self, query: Any) -> bool:
        return self.head is not None and isinstance(query, str) and self.head.match(query) is not None


def _read_count(
    schema: Schema, query: Any, eps: float | None, delta: float | None, alpha: float | None
) -> Read:
    from dpdesk.engine.budget.accounting import check_requirement
    from dpdesk.engine.queries.text import query_from_input

    if alpha is not None:
        raise DpdeskError("a count request states its accuracy (eps, delta), not alpha: the engine decides α")
    if eps is None or delta is None:
        raise DpdeskError(
            f"a count request needs {'eps' if eps is None else 'delta'} "
            "(±eps with probability at least 1 − delta)"
        )
    check_requirement(eps, delta)
    q = query_from_input(query, schema.n_cells, schema.shape, schema)
    return Read("count", q.text, q, eps, delta, None)


def _selection_price(eps: float | None, delta: float | None, alpha: float | None) -> dict[str, Any]:
    """``plan_selection``'s price from what a max/argmax request states."""
    if alpha is not None:
        if eps is not None:
            raise DpdeskError("a max/argmax request gives a budget alpha or an accuracy eps, not both")
        return {"alpha": alpha, "delta": SELECTION_DELTA if delta is None else delta}
    if eps is None or delta is None:
        raise DpdeskError(
            "a max/argmax request needs a budget alpha, or an accuracy eps with its delta "
            "(max: at most eps records above the released value; argmax: its count within eps of "
            "the largest; with probability at least 1 − delta)"
        )
    return {"accuracy": eps, "delta": delta}


def _read_selection(
    schema: Schema, query: Any, eps: float | None, delta: float | None, alpha: float | None
) -> Read:
    from dpdesk.engine.selection.mechanism import box_query
    from dpdesk.engine.selection.plan import plan_selection
    from dpdesk.engine.selection.query import parse_selection

    q = parse_selection(query, schema)
    plan = plan_selection(
        q, schema, total_budget=1.0, **_selection_price(eps, delta, alpha)
    )  # checks the price
    return Read("selection", q.text, box_query(schema.shape, plan._box()), eps, delta, alpha)


def _posterior_outside(eps: float | None, delta: float | None, alpha: float | None) -> dict[str, Any]:
    """What a posterior request states outside its text, as ``assess_request`` options."""
    out: dict[str, Any] = {}
    if alpha is not None:
        out["budget"] = alpha
    if (eps is None) != (delta is None):
        raise DpdeskError(
            "a posterior request's accuracy target needs both eps (the Hellinger distance) "
            "and delta (the failure probability)"
        )
    if eps is not None:
        out.update(within=eps, failure=delta)
    return out


def _read_posterior(
    schema: Schema, query: Any, eps: float | None, delta: float | None, alpha: float | None
) -> Read:
    from dpdesk.engine.dirichlet.plan import assess_request
    from dpdesk.engine.dirichlet.request import parse_posterior

    q = parse_posterior(query, schema)
    assess_request(q, **_posterior_outside(eps, delta, alpha))  # every check its plan makes, at zero cost
    return Read("posterior", q.text, q.box_query(), eps, delta, alpha)


def cost_text(plan: Any) -> str:
    """What every charged cell of a plan pays: ``α = 0.5`` (and ``δ = 1e-07`` for an (α, δ) release)."""
    alpha = sum(
        t.scale for t in plan.charge.terms
    )  # one 0/1 box term for these kinds: the α of each of its cells
    return f"α = {alpha:.6g}" + (f" and δ = {plan.charge.delta:.3g}" if plan.charge.delta else "")


def released_json(release: Any) -> dict[str, Any]:
    """A recorded release of a queued request as JSON: the store's fields plus what the kind released."""
    p = release.entry.payload
    out: dict[str, Any] = release.to_json()
    for key in ("label", "index", "noisy_size", "noisy_counts"):
        if key in p:
            out[key] = p[key]
    if release.kind == "posterior":
        out["parameters"] = out["values"]
    return out


def selection_preview(plan: Any) -> list[str]:
    """A max/argmax plan in words: mechanism, per-cell α, budget before and after, public accuracy."""
    b, rnm = plan.budget, plan.rnm
    lines = [
        f"{rnm.query.text}: report-noisy-max, every cell of the box pays α = {rnm.alpha:.6g}; system cost "
        f"{b.system_cost:.6g} now → {b.system_cost_after:.6g} after (total {b.total:g})",
        f"public accuracy: {rnm.accuracy_text(plan.schema, plan.delta)}",
    ]
    return lines + ([] if plan.releasable else [f"NOT releasable: {plan.reason}"])


def selection_outcome(release: Any, plan: Any) -> list[str]:
    p = release.entry.payload
    return [f"released: {p['label']} (the {p['kind']} of {p['attribute']}; {p['accuracy']})"]


def posterior_preview(plan: Any) -> list[str]:
    from dpdesk.engine.dirichlet.summary import preview_lines

    return preview_lines(plan)


def posterior_outcome(release: Any, plan: Any) -> list[str]:
    from dpdesk.engine.dirichlet.plan import PosteriorRelease
    from dpdesk.engine.dirichlet.summary import release_lines

    return release_lines(PosteriorRelease.from_payload(release.entry.payload), plan.query)


KINDS: tuple[RequestKind, ...] = (
    RequestKind(
        "selection",
        "max / argmax",
        'max(age | sex="Female")',
        re.compile(r"\s*(max|argmax)\s*\("),
        _read_selection,
        selection_preview,
        selection_outcome,
    ),
    RequestKind(
        "posterior",
        "posterior of proportions",
        'posterior(education | age="65-90"; prior=1)',
        re.compile(r"\s*posterior\s*\("),
        _read_posterior,
        posterior_preview,
        posterior_outcome,
    ),
    RequestKind("count", "count", 'count(age="0-30")', None, _read_count),
)


def kind_named(name: str) -> RequestKind:
    for k in KINDS:
        if k.name == name:
            return k
    raise DpdeskError(f"unknown request kind {name!r} (known: {', '.join(k.name for k in KINDS)})")


def kind_of_text(query: Any) -> RequestKind:
    """The kind a request's text (or coefficients) asks for."""
    return next((k for k in KINDS if k.claims(query)), kind_named("count"))


def read_kind_request(
    schema: Schema, query: Any, eps: float | None, delta: float | None, alpha: float | None
) -> Read:
    """Check a request of any kind completely; every problem is one line naming it."""
    if alpha is not None and not alpha > 0:
        raise DpdeskError(f"alpha ({alpha:g}) must be positive")
    return kind_of_text(query).read(schema, query, eps, delta, alpha)


def terms_text(kind: str, eps: float | None, delta: float | None, alpha: float | None) -> str:
    """What a request states besides its text, in words (``ε=50, δ=0.05``; ``α=0.5``; ``as stated``)."""
    parts = []
    if eps is not None:
        parts.append(f"ε={eps:g}")
    if delta is not None:
        parts.append(f"δ={delta:g}")
    if alpha is not None:
        parts.append(f"α={alpha:g}")
    return ", ".join(parts) or ("price in the text" if kind == "posterior" else "—")


def plan_for(
    request: Any, schema: Schema, public: dict[str, Any], *, reference_size: int | None = None
) -> ReleasePlan:
    """The release plan of a queued selection or posterior ``request`` (a ``StoredRequest``), priced from
    ``public`` (``Project.plan_inputs()``: the ledger's per-cell α and δ, total budget, δ cap, basis)."""
    if request.kind == "selection":
        from dpdesk.engine.selection.plan import plan_selection
        from dpdesk.engine.selection.query import parse_selection

        return plan_selection(
            parse_selection(request.query_text, schema),
            schema,
            cell_costs=np.asarray(public["cell_costs"]),
            total_budget=public["total_budget"],
            basis=public["basis"],
            request_id=request.id,
            **_selection_price(request.eps, request.delta, request.alpha),
        )
    if request.kind == "posterior":
        from dpdesk.engine.dirichlet.plan import assess_request
        from dpdesk.engine.dirichlet.request import parse_posterior

        q = parse_posterior(request.query_text, schema)
        ref = DEFAULT_REFERENCE_SIZE if reference_size is None else reference_size
        extra = {} if "size" in q.options else {"reference_size": ref}
        return assess_request(
            q,
            **_posterior_outside(request.eps, request.delta, request.alpha),
            **public,
            **extra,
            request_id=request.id,
        )
    raise DpdeskError(f"request {request.id!r} is a {request.kind} request: assess it against history")
