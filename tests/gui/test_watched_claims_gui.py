"""Watched claims in the app (issue 18): the panel, the menu entry, the heatmap's "Watch this cell…", the
answer panel's warning and blocked spend button, removal — on a real window over a real demo project."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from dpdesk.gui.dialogs import claim_dialog

from .conftest import WAIT, wait_assessed, wait_released

SHOTS = os.environ.get("DPDESK_SHOTS")  # a folder: also save screenshots there (to look at them)


def _shot(widget, name: str, tmp_path: Path) -> Path:
    path = Path(SHOTS or tmp_path) / f"claims-{name}.png"
    assert widget.grab().save(str(path))
    return path


def test_claims_panel_blocks_a_release_that_would_make_a_claim_sure(
    demo_window, qtbot, dialogs, monkeypatch, tmp_path
):
    win = demo_window
    page = win.requests
    a = wait_assessed(qtbot, win)
    rid = a.request.id
    assert a.decision == "spend" and a.request.query.text
    seen: list[claim_dialog.ClaimDialog] = []

    def fill(dialog, query=None, low="0", high="100000", threshold="0.8", risk="0.05"):
        seen.append(dialog)
        if query is not None:
            dialog.query.setText(query)
        dialog.low.setText(low)
        dialog.high.setText(high)
        dialog.threshold.setText(threshold)
        dialog.risk.setText(risk)
        dialog.accept()
        return dialog.result() == dialog.DialogCode.Accepted

    # bad input: the dialog names the problem in one line and stays open; nothing is written
    monkeypatch.setattr(
        claim_dialog, "run_dialog", lambda d: fill(d, a.request.query.text, low="9", high="3")
    )
    entries = len(win.session.ledger())
    win.menu_actions["watch_claim"].trigger()
    assert "L₀ (9) is greater than U₀ (3)" in seen[-1].error.text() and "\n" not in seen[-1].error.text()
    assert len(win.session.ledger()) == entries and page.claims.statuses == []
    assert (
        "never by looking at the true counts"
        in seen[-1].findChild(type(seen[-1].error), "claimAdvice").text()
    )

    # Edit ▸ Watch a claim… on the selected request's own query: a touching fresh answer would cross τ
    monkeypatch.setattr(claim_dialog, "run_dialog", lambda d: fill(d, a.request.query.text))
    win.menu_actions["watch_claim"].trigger()
    assert page.lower.currentWidget() is page.claims
    qtbot.waitUntil(lambda: len(page.claims.statuses) == 1, timeout=WAIT)  # read off the GUI thread
    (status,) = page.claims.statuses
    assert status.watched.id == "c1" and page.claims.model.rowCount() == 1
    assert win.session.ledger()[-1].kind == "watch"
    b = wait_assessed(qtbot, win, rid)
    assert b is not a and b.decision == "spend"
    note = page.answer.claims_note
    # even α·10⁻³ would cross (the claim spans every possible count): no fresh answer passes
    assert (
        note.isVisible()
        and "Blocked by watched claim c1" in note.text()
        and "no fresh release of it passes" in note.text()
    )
    assert not page.answer.spend_btn.isEnabled() and page.answer.reject_btn.isEnabled()
    win.resize(1320, 880)
    qtbot.wait(50)
    shot = _shot(win, "blocked", tmp_path)
    assert shot.stat().st_size > 10_000

    # the heatmap's cell menu prefills a claim about that cell's count (cancelled here: nothing written)
    page.lower.setCurrentIndex(0)
    monkeypatch.setattr(claim_dialog, "run_dialog", lambda d: seen.append(d) or False)
    menu = page.budget.cell_menu(0, 0)
    (action,) = menu.actions()
    action.trigger()
    cell = page.budget.cell_for(0, 0)
    labels = win.session.schema.cell_labels(cell)
    prefilled = seen[-1].query.text()
    assert prefilled.startswith("count(") and all(f'"{label}"' in prefilled for label in labels)
    assert page.lower.currentWidget() is page.claims and len(page.claims.statuses) == 1

    # removing the claim (confirmed) unblocks the request, which then spends and releases
    page.claims.table.selectRow(0)
    qtbot.mouseClick(page.claims.remove_btn, Qt.MouseButton.LeftButton)
    assert dialogs.confirms[-1][0] == "Stop watching a claim"
    qtbot.waitUntil(lambda: page.claims.statuses == [], timeout=WAIT)
    assert win.session.ledger()[-1].kind == "unwatch"
    wait_assessed(qtbot, win, rid)
    qtbot.waitUntil(lambda: page.answer.spend_btn.isEnabled(), timeout=WAIT)
    assert not page.answer.claims_note.isVisible()
    qtbot.mouseClick(page.answer.spend_btn, Qt.MouseButton.LeftButton)
    wait_released(qtbot, win)
    assert win.session.request(rid).status == "answered"
    assert "Watched claims" in win.audit.report_html() and "removed at #" in win.audit.report_html()


def test_a_touching_release_moves_the_claims_plot(demo_window, qtbot, dialogs, monkeypatch, tmp_path):
    win = demo_window
    page = win.requests
    a = wait_assessed(qtbot, win)
    # a claim one unit wide: the answer's noise is too wide for Pr(claim) to reach τ = 0.9 — touched, allowed
    monkeypatch.setattr(
        claim_dialog,
        "run_dialog",
        lambda d: (
            d.query.setText(a.request.query.text),
            d.low.setText("100"),
            d.high.setText("101"),
            d.threshold.setText("0.9"),
            d.risk.setText("0.5"),
            d.name.setText("exactly a hundred"),
            d.accept(),
            d.result() == d.DialogCode.Accepted,
        )[-1],
    )
    assert page.watch_claim()
    b = wait_assessed(qtbot, win, a.request.id)
    note = page.answer.claims_note
    assert "Touches watched claim c1 (exactly a hundred)" in note.text(), note.text()
    (status,) = win.session.claim_statuses(b)
    assert status.verdict == "allowed" and status.check.risk <= 0.5
    qtbot.waitUntil(lambda: page.answer.spend_btn.isEnabled(), timeout=WAIT)
    qtbot.mouseClick(page.answer.spend_btn, Qt.MouseButton.LeftButton)
    assert "Touches watched claim c1" in dialogs.confirms[-1][1]  # the confirmation repeats the warning
    wait_released(qtbot, win)
    assert win.session.request(a.request.id).status == "answered"
    qtbot.waitUntil(
        lambda: bool(page.claims.statuses and page.claims.statuses[0].watched.touched), timeout=WAIT
    )
    assert page.claims.statuses[0].watched.touched[-1][0] == win.session.ledger()[-1].seq
    # the one-person DP bound on the claim's cells: e^(their largest cost) = e^α of the one release
    alpha = float(win.session.ledger()[-1].payload["alpha"])
    assert page.claims.statuses[0].odds_factor == pytest.approx(math.exp(alpha), rel=1e-12)
    claims = page.claims
    claims.table.selectRow(0)
    xs, ys = claims.curve.getData()
    assert list(xs)[-1] == win.session.ledger()[-1].seq and all(0.0 <= y <= 1.0 for y in ys)
    assert claims.tau_line.value() == 0.9
    page.lower.setCurrentWidget(claims)
    qtbot.wait(50)
    assert _shot(page, "panel", tmp_path).stat().st_size > 5_000


def test_a_blocked_request_is_released_at_the_largest_alpha_that_passes(
    demo_window, qtbot, dialogs, monkeypatch, tmp_path
):
    """Issue 18 item 3: the answer panel's counter-offer releases the blocked request at the largest α
    that passes the claim (a wider ±ε, stated), through assess → choose (the confirmation) → release."""
    win = demo_window
    panel = win.requests.answer
    a = wait_assessed(qtbot, win)
    rid, eps, delta = a.request.id, a.request.eps, a.request.delta
    assert a.decision == "spend" and not panel.offer_btn.isVisible()

    def fill(dialog):
        dialog.query.setText(a.request.query.text)
        dialog.low.setText("0")
        dialog.high.setText("1000")  # a public bound a small fresh answer cannot make sure
        dialog.threshold.setText("0.8")
        dialog.risk.setText("0.05")
        dialog.accept()
        return True

    monkeypatch.setattr(claim_dialog, "run_dialog", fill)
    win.menu_actions["watch_claim"].trigger()
    qtbot.waitUntil(lambda: panel.claim_blocked and panel.offer_btn.isVisible(), timeout=WAIT)
    blocked = panel.assessment
    offer = panel.claim_offer
    assert not panel.spend_btn.isEnabled() and offer.alpha < blocked.spend_alpha and offer.eps > eps
    assert f"ε = {offer.alpha:.4g}" in panel.offer_btn.text() and panel.offer_btn.isEnabled()
    win.resize(1320, 880)
    qtbot.wait(50)
    assert _shot(win, "counter-offer", tmp_path).stat().st_size > 10_000
    entries = len(win.session.ledger())
    dialogs.choice = None  # cancelled: nothing changes
    qtbot.mouseClick(panel.offer_btn, Qt.MouseButton.LeftButton)
    assert win.session.request(rid).eps == eps and len(win.session.ledger()) == entries
    dialogs.choice = 0
    qtbot.mouseClick(panel.offer_btn, Qt.MouseButton.LeftButton)
    message, options = dialogs.choices[-1]
    assert "blocks the fresh answer" in message and "asks for confirmation" in message
    assert (
        options[0].startswith(f"a fresh answer at ε = {offer.alpha:.4g}") and f"±{offer.eps:g}" in options[0]
    )
    qtbot.waitUntil(lambda: win.session.request(rid).status == "answered", timeout=WAIT)
    wait_released(qtbot, win)
    # the accepted offer was confirmed like every other spend, at the α the button offered
    assert f"It spends ε = {offer.alpha:.6g}" in dialogs.spends[-1][0]
    (entry,) = win.session.ledger()[entries:]
    assert entry.kind == "fresh" and entry.request_id == rid
    assert float(entry.payload["alpha"]) == pytest.approx(offer.alpha, rel=1e-12)
    assert float(entry.payload["eps"]) == pytest.approx(offer.eps) and float(entry.payload["delta"]) == delta
    (w,) = win.session.project.claims()
    assert w.touched == ((entry.seq, w.spent),) and 0 <= w.spent <= w.claim.risk
    assert "Released for" in panel.result.text() and win.session.project.verify().ok
    qtbot.wait(50)
    _shot(win, "counter-offer-released", tmp_path)
