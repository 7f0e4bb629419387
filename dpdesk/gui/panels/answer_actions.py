"""The answer panel's action buttons and what they do once the curator asks: spend and release a plan of
any kind after the one spend confirmation, in the words of the plan's kind; accept a counter-offer within the watched
claims; reject with a note. Each takes the panel (:class:`~dpdesk.gui.panels.answer_panel.AnswerPanel`)."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QHBoxLayout, QPushButton, QVBoxLayout

from dpdesk.gui import dialogs
from dpdesk.gui.dialogs.spend_dialog import spend_text
from dpdesk.gui.panels.claims_panel import offer_options
from dpdesk.gui.widgets.glossary import tip

__all__ = ["SHORTCUTS", "button_row", "offer_within_claims", "reject", "spend_and_release"]

SHORTCUTS = {"infer": "Ctrl+I", "spend": "Ctrl+Shift+S", "reject": "Ctrl+Shift+R"}
BUTTON_TERMS = {"infer": ("inferred",), "spend": ("fresh", "alpha", "fusion"), "reject": ()}

# the answer panel (typed loosely: it imports this module, and modules of a package form no cycle)
AnswerPanel = Any


def button_row(panel: AnswerPanel) -> QVBoxLayout:
    """The panel's buttons (its ``infer_btn``, ``spend_btn``, ``reject_btn``, ``estimate_btn`` and
    ``offer_btn``), connected to its actions. The occasional offers (a zero-cost estimate, a
    counter-offer) get a row of their own, so a long label never clips the three actions on a laptop's
    screen."""
    offers = QHBoxLayout()
    buttons = QHBoxLayout()
    panel.infer_btn = QPushButton("Release inferred answer")
    panel.spend_btn = QPushButton("Spend α and release")
    panel.reject_btn = QPushButton("Reject")
    # issue 17: where history cannot estimate the query, the menu's zero-cost (biased) estimate is offered here
    panel.estimate_btn = QPushButton("Zero-cost estimate…")
    panel.estimate_btn.setToolTip(
        "History does not determine this query: a biased estimate from the released "
        "answers alone (free; it meets no (ε, δ))"
    )
    panel.estimate_btn.clicked.connect(lambda: _zero_cost_estimate(panel))
    offers.addWidget(panel.estimate_btn)
    panel.offer_btn = QPushButton("Counter-offer within the claims…")  # shown only when a claim blocks
    panel.offer_btn.setToolTip(
        "A watched claim blocks the fresh answer asked: release at the largest α that "
        "passes (a wider ±ε) or from history for free, once the requester accepts"
    )
    panel.offer_btn.clicked.connect(panel.offer_within_claims)
    offers.addWidget(panel.offer_btn)
    offers.addStretch(1)
    for btn, kind, slot in (
        (panel.infer_btn, "infer", panel.release_inferred),
        (panel.spend_btn, "spend", panel.spend_and_release),
        (panel.reject_btn, "reject", panel.reject),
    ):
        btn.setToolTip(f"{tip(*BUTTON_TERMS[kind])}<p>Shortcut: {SHORTCUTS[kind]}</p>")
        btn.clicked.connect(slot)
        buttons.addWidget(btn)
    rows = QVBoxLayout()
    rows.addLayout(offers)
    rows.addLayout(buttons)
    return rows


def _zero_cost_estimate(panel: AnswerPanel) -> None:
    action = getattr(panel.window(), "menu_actions", {}).get("new_estimate")  # the one menu table's action
    if action is not None:
        action.trigger()


def spend_and_release(panel: AnswerPanel) -> None:
    """Spend and release the plan shown, after the one spend confirmation (Cancel by default), in the
    words of the plan's kind."""
    from dpdesk.engine.registry import kind as kind_named

    a = panel.assessment
    if a is None or not panel.spend_btn.isEnabled() or a.charge.free:
        return
    kind = panel.kind if panel.kind is not None else kind_named("count")
    what, cost, notes = kind.spend_words(a)
    claims = [line for line in panel.claim_lines if not line.startswith("Watched claims")]
    b = a.budget
    heading, body = spend_text(what, cost, b.system_cost, b.system_cost_after, b.total, [*notes, *claims])
    if dialogs.confirm_spend(panel, heading, body):
        panel._release(a)


def offer_within_claims(panel: AnswerPanel) -> None:
    """A request watched claims block: the requester accepts one offer (it becomes the request's
    terms), which is then assessed again and released at once — the choice is the confirmation."""
    a, rid = panel.assessment, panel.request_id
    if a is None or rid is None or not panel.offer_btn.isEnabled() or not hasattr(a, "decision"):
        return
    offers = offer_options(panel.claim_offer, a.request)
    b = a.budget
    i = dialogs.choose(
        panel,
        f"Counter-offer for {rid}",
        f"A watched claim blocks the fresh answer {rid} asks (±{a.request.eps:g} at δ = {a.request.delta:g}). "
        f"The requester accepted (budget: system cost {b.system_cost:.6g} of {b.total:g}); its terms "
        "become the request's, which is assessed again — a fresh answer then asks for confirmation:",
        [o[0] for o in offers],
    )
    if i is None:
        return
    _words, eps, delta, decision = offers[i]
    req = panel.session.request(rid)
    panel._accepted = (rid, decision, panel.claim_offer.alpha * (1 + 1e-9))
    try:
        panel.session.edit_request(rid, req.query_text or req.query.to_json(), eps, delta, req.requester)
    except Exception as exc:
        panel._accepted = None
        dialogs.report_exception(exc, parent=panel)
        return
    panel.refresh()  # the accepted terms, assessed again (their release follows in _assessed)


def reject(panel: AnswerPanel) -> None:
    if panel.request_id is None or not panel.reject_btn.isEnabled():
        return
    a = panel.assessment
    refused = a is not None and (a.decision == "reject" if hasattr(a, "decision") else not a.releasable)
    offered = a.reason if refused else ""
    reason = dialogs.ask_text(
        panel,
        "Reject request",
        f"Reject {panel.request_id}? The refusal and this note (for the requester) are "
        "recorded in the ledger:",
        offered,
    )
    if reason is None:
        return
    try:
        entry = panel.session.reject(panel.request_id, reason)
    except Exception as exc:
        dialogs.report_exception(exc, parent=panel)
        return
    panel.result.setText(f"Rejected {panel.request_id} (ledger entry #{entry.seq}); nothing was spent.")
