"""Issue 34 item 7: every kind shows its watched claims' verdict before anything is confirmed, and a blocked
count's note and counter-offer button state one and the same α."""

from __future__ import annotations

from PySide6.QtCore import Qt

from .conftest import wait_assessed


def _watch(win, monkeypatch, query: str, low: str, high: str) -> None:
    from dpdesk.gui.dialogs import claim_dialog

    def fill(dialog):
        dialog.query.setText(query)
        dialog.low.setText(low)
        dialog.high.setText(high)
        dialog.threshold.setText("0.8")
        dialog.risk.setText("0.05")
        dialog.accept()
        return True

    monkeypatch.setattr(claim_dialog, "run_dialog", fill)
    win.menu_actions["watch_claim"].trigger()


def test_a_queued_argmax_shows_the_claim_that_blocks_it_before_any_confirmation(
    demo_window, qtbot, dialogs, monkeypatch
):
    win = demo_window
    panel = win.requests.answer
    rid = win.session.add_request('argmax(income | sex="Female")', alpha=0.5, requester="press").id
    _watch(win, monkeypatch, 'count(sex="Female", income=">50K")', "0", "5000")
    win.requests.select_request(rid)
    qtbot.waitUntil(
        lambda: panel.assessment is not None and not panel.runner.is_running() and panel.kind is not None,
        timeout=30000,
    )
    assert panel.claims_note.isVisible() and "Blocked by watched claim c1" in panel.claims_note.text()
    assert panel.decision.text() == "CANNOT ANSWER" and not panel.spend_btn.isEnabled()
    entries = len(win.session.ledger())
    panel.spend_and_release()  # the shortcut's slot: nothing to confirm, nothing released
    assert not dialogs.spends and len(win.session.ledger()) == entries


def test_a_blocked_counts_note_and_button_state_one_alpha(demo_window, qtbot, dialogs, monkeypatch):
    win = demo_window
    panel = win.requests.answer
    a = wait_assessed(qtbot, win)
    _watch(win, monkeypatch, a.request.query.text, "0", "1000")
    qtbot.waitUntil(lambda: panel.claim_blocked and panel.offer_btn.isVisible(), timeout=20000)
    offer = panel.claim_offer
    assert f"up to ε = {offer.alpha:.4g} passes the claims" in panel.claims_note.text()
    assert f"ε = {offer.alpha:.4g}" in panel.offer_btn.text()
    shown = {
        float(x.split()[0].rstrip(",;)"))
        for x in panel.claims_note.text().split("ε = ")[1:] + panel.offer_btn.text().split("ε = ")[1:]
    }
    assert shown == {float(f"{offer.alpha:.4g}")}  # no second, larger "largest α" beside it
    qtbot.mouseClick(panel.reject_btn, Qt.MouseButton.LeftButton)  # the curator may still refuse it
