"""What the Requests page's queue buttons do beyond editing one request: answer every free request at
once, plan a batch of pending counts, and offer a count's requester better terms. Each takes the page
(:class:`~dpdesk.gui.pages.requests_page.RequestsPage`): its session, its answer panel, its selection."""

from __future__ import annotations

from typing import Any

from dpdesk.gui import dialogs
from dpdesk.gui.widgets.models import plural

# the Requests page (typed loosely: it imports this module, and modules of a package form no cycle)
RequestsPage = Any

__all__ = ["answer_all_free", "counter_offer", "plan_batch"]


def answer_all_free(page: RequestsPage) -> None:
    """Release every pending request answerable from history, each as its own ledger entry."""
    if page.free_runner.is_running() or page.answer.release_runner.is_running():
        return
    n = sum(st == "pending" for st in page.statuses.values())
    if not dialogs.confirm(
        page,
        "Answer all free requests",
        f"Assess the {plural(n, 'pending request')} now and release every one history already answers "
        "(cost 0)? Each is recorded in the ledger; the others stay pending. You are told how many were "
        "released.",
    ):
        return
    page.free_btn.setEnabled(False)

    def done(releases) -> None:
        page.free_btn.setEnabled(True)
        page.session.released()
        names = ", ".join(r.request_id for r in releases) or "none"
        left = len(page.session.requests("pending"))
        page.last_free = releases
        dialogs.show_info(
            page,
            "Free requests answered",
            f"Released {plural(len(releases), 'free answer')} from history ({names}); "
            f"{plural(left, 'request')} still pending.",
        )

    def failed(exc: BaseException, trace: str) -> None:
        page.free_btn.setEnabled(True)
        page.session.released()  # some may have been released before the failure: redraw from the ledger
        dialogs.report_exception(exc, trace, parent=page)

    page.free_runner.start(
        page.session.answer_free_job(page.answer.method.currentText()),
        done,
        failed,
        label="answering free requests",
    )


def plan_batch(page: RequestsPage) -> None:
    """Plan the selected pending count requests together (fewer than two selected: every pending one)."""
    from dpdesk.gui.kinds.batch_dialog import BatchDialog

    if page.answer.release_runner.is_running() or page.free_runner.is_running():
        return
    ids = [
        rid
        for rid in page.selected_ids()
        if (r := page.session.request(rid)).status == "pending" and r.kind == "count"
    ]
    page.batch_dialog = BatchDialog(
        page.session, ids if len(ids) >= 2 else None, page.answer.method.currentText(), page
    )
    page.batch_dialog.show()


def counter_offer(page: RequestsPage) -> None:
    """Offer better terms for the selected pending request; the accepted offer becomes its terms."""
    from dpdesk.engine.answering.counteroffer import counter_offer

    a = page.answer.assessment
    rid = page.answer.request_id
    if a is None or rid is None or a.request_id != rid or page.session.request(rid).status != "pending":
        return
    if not hasattr(a, "decision"):  # a max/argmax or posterior request: its price is its own to state
        dialogs.show_info(
            page,
            "No counter-offer",
            f"{rid} is a {page.session.request(rid).kind} request: a "
            "counter-offer narrows a count's ±ε; reject it with a note instead.",
        )
        return
    offer = counter_offer(a, page.session.total_budget)
    options, terms = [], []
    if offer.eps is not None:
        bound = {
            "budget": "what its cells have left",
            "spend policy cap": "the most your spend policy lets one request take",
        }.get(offer.limit, offer.limit)
        than = (
            f"wider than the ±{a.request.eps:g} asked"
            if offer.eps > a.request.eps
            else f"tighter than the ±{a.request.eps:g} asked, for more budget"
        )
        options.append(
            f"the best answer the budget and your cap allow: a fresh answer within ±{offer.eps:g} at "
            f"δ = {offer.delta:g} ({than}; spends at most α = {offer.alpha:.4g}, {bound})"
        )
        terms.append((offer.eps, offer.delta))
    if offer.free_delta is not None:
        options.append(
            f"free from history: ±{a.request.eps:g} at {offer.free_confidence:.0%} confidence "
            f"(δ = {offer.free_delta:g}, spends nothing)"
        )
        terms.append((a.request.eps, offer.free_delta))
    if not options:
        dialogs.show_info(
            page,
            "No counter-offer",
            f"{rid}: its cells have no budget left and history does "
            "not estimate it; nothing better can be offered.",
        )
        return
    req = page.session.request(rid)
    i = dialogs.choose(
        page,
        f"Counter-offer for {rid}",
        f"{rid} asks ±{req.eps:g} at δ = {req.delta:g}. The requester accepted:",
        options,
    )
    if i is None:
        return
    eps, delta = terms[i]
    try:
        page.session.edit_request(rid, req.query_text or req.query.to_json(), eps, delta, req.requester)
    except Exception as exc:
        dialogs.report_exception(exc, parent=page)
