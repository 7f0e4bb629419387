"""``dpdesk answer`` and ``dpdesk reject``: decide a queued request.

``answer`` shows the assessment (decision, cost, budget before and after), asks for confirmation on
stdin unless ``--yes`` (end of input counts as "no"), then releases exactly that assessment — an
inferred answer for free or a fresh noisy one — recorded durably in the ledger *before* it is printed,
with the ledger head it leaves (the requester's witness for ``dpdesk verify --extends``). A request a
watched claim declines is never offered for confirmation: its decision reads ``declined by claim c1``
with the counter-offer within the claims. Exit codes: 0 released, 1 not released (the decision is reject,
or not confirmed), 2 bad input, 3 declined by a watched claim (:data:`DECLINED_BY_CLAIM`).
"""

from __future__ import annotations

import argparse

from dpdesk.commands.confirm import confirmed

DECLINED_BY_CLAIM = 3  # the exit code of a request a watched claim declines (2 is bad input)


def declined_by_claims(p, plan, out) -> int | None:  # type: ignore[no-untyped-def]
    """Print the decision ``declined by claim …`` (and, for a count, the counter-offer within the claims)
    when a watched claim declines ``plan``; its exit code, or None when no claim declines it."""
    statuses = p.claim_statuses(plan)
    declined = [s for s in statuses if s.verdict == "declined"]
    if not declined:
        return None
    ids = ", ".join(s.watched.id for s in declined)
    print(f"decision: declined by claim {ids} — {declined[0].check.reason}", file=out)
    if hasattr(plan, "decision"):  # a count: the counter-offer within the claims
        from dpdesk.commands.assess import claim_offer_text
        from dpdesk.store.watching import offer_within_claims

        offer = offer_within_claims(statuses, plan, float(p.total_budget))
        if offer is not None:
            print(claim_offer_text(offer, plan, str(p.path)), file=out)
    print(
        f"not answered: accept a counter-offer (dpdesk requests edit), or record the refusal with "
        f"`dpdesk reject {p.path} --request {plan.request_id}`",
        file=out,
    )
    return DECLINED_BY_CLAIM


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
    from dpdesk.commands.assess import add_cell_costs_argument
    from dpdesk.commands.posterior import add_reference_argument

    add_cell_costs_argument(a)

    add_reference_argument(a)
    from dpdesk.commands.estimate import add_tau_argument

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
    import json
    import sys

    from dpdesk.commands.assess import assessment_json
    from dpdesk.engine.answering.rounding import accuracy_text
    from dpdesk.engine.errors import DpdeskError
    from dpdesk.store.checkpoints import checkpoint
    from dpdesk.store.project import Project

    if args.query is not None:
        from dpdesk.commands import estimate
        from dpdesk.commands.posterior import is_posterior, run_release

        if estimate.is_estimate(args.query):
            return estimate.run_release(args)
        if not is_posterior(args.query):
            raise DpdeskError(
                "--query takes a posterior of proportions, posterior(...); queue a count request "
                "with `dpdesk requests add` and answer it with --request"
            )
        return run_release(args)
    with Project.open(args.path, "w") as p:
        req = p.request(args.request)
        already = _already(p, args.request)
        if already:
            raise DpdeskError(already)
        if req.kind != "count":
            return answer_plan(p, req, args)
        a = p.assess(args.request, method=args.method)  # the project's settings; the writer lock keeps them
        out = sys.stderr if args.json else sys.stdout
        b = a.budget
        print(
            f"request {req.id}: {req.describe()}  (±{req.eps:g} with probability ≥ {1 - req.delta:g})",
            file=out,
        )
        refused = declined_by_claims(p, a, out) if a.decision == "spend" else None
        if refused is not None:
            if args.json:
                print(json.dumps({"assessment": assessment_json(a, args), "release": None}))
            return refused
        print(f"decision: {a.decision} — {a.reason}", file=out)
        print(
            f"budget: system cost {b.system_cost:.6g} → "
            f"{(b.system_cost_after if a.decision == 'spend' else b.system_cost):.6g} of {b.total:g}",
            file=out,
        )
        if a.decision == "reject":
            print(
                f"not answered: record the refusal with `dpdesk reject {p.path} --request {req.id}`", file=out
            )
            if args.json:
                print(json.dumps({"assessment": assessment_json(a, args), "release": None}))
            return 1
        if not args.yes:
            what = (
                "release the inferred answer (free)"
                if a.decision == "infer"
                else f"spend α = {a.spend_alpha:.6g}"
            )
            if not confirmed(what, "not answered (not confirmed)"):
                return 1
        release = p.release(
            a
        )  # exactly what was shown: the writer lock kept the ledger and settings as assessed
        if args.json:
            print(
                json.dumps({"assessment": assessment_json(a, args), "release": release.to_json()}), flush=True
            )
        else:
            cost = f"α = {release.alpha:.6g}, {release.family} noise" if release.kind == "fresh" else "free"
            if release.fusion_weight is not None:
                cost += f", fused with history (weight {release.fusion_weight:.3g})"
            # as shown everywhere (a count rounded to an integer); --json carries the exact recorded values
            print(
                f"answer {req.id}: {release.entry.shown()}  {release.entry.shown_interval()}  "
                f"({accuracy_text(req.eps, req.delta)}; {release.kind}, {cost}; "
                f"ledger entry {release.entry.seq})",
                flush=True,
            )
            print(
                f"ledger head {release.witness} (the requester's witness: dpdesk verify {p.path} --extends HASH)",
                flush=True,
            )
        checkpoint("cli:printed")
    checkpoint("cli:closed")
    return 0


def answer_plan(p, req, args: argparse.Namespace) -> int:  # type: ignore[no-untyped-def]
    """Answer a queued max/argmax or posterior request: its kind's plan, shown, confirmed, released."""
    import json
    import sys

    from dpdesk.store.checkpoints import checkpoint
    from dpdesk.store.request_kinds import cost_text, kind_named, released_json

    kind = kind_named(req.kind)
    plan = p.assess(req.id, reference_size=getattr(args, "reference_size", None))
    out = sys.stderr if args.json else sys.stdout
    print(f"request {req.id}: {req.describe()}  ({kind.label}; {req.terms()})", file=out)
    print("\n".join(kind.preview(plan)), file=out)
    refused = declined_by_claims(p, plan, out) if plan.releasable else None
    if refused is not None:
        if args.json:
            print(json.dumps({"assessment": plan.to_json(), "release": None}))
        return refused
    if not plan.releasable:
        print(f"not answered: record the refusal with `dpdesk reject {p.path} --request {req.id}`", file=out)
        if args.json:
            print(json.dumps({"assessment": plan.to_json(), "release": None}))
        return 1
    if not args.yes and not confirmed(
        f"release it, each cell of its box paying {cost_text(plan)}?", "not answered (not confirmed)"
    ):
        return 1
    release = p.release(plan)  # exactly the plan shown; recorded (fsync'd) before it is returned
    if args.json:
        print(json.dumps({"assessment": plan.to_json(), "release": released_json(release)}), flush=True)
    else:
        print("\n".join(kind.outcome(release, plan)))
        print(
            f"ledger entry {release.entry.seq}; ledger head {release.witness} (the requester's witness: "
            f"dpdesk verify {p.path} --extends HASH)",
            flush=True,
        )
    checkpoint("cli:printed")
    return 0


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
