"""Counter-offers (issue 14): the narrowest ±ε the budget allows, or history's free answer at its confidence."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from dpdesk.engine.budget.policy import headroom

from .conftest import wait_assessed, wait_released


def test_counter_offer_for_an_overspending_request_is_the_narrowest_affordable_eps(
    demo_window, qtbot, dialogs
):
    win = demo_window
    page = win.requests
    page.select_request("q34")
    a = wait_assessed(qtbot, win, "q34")
    assert a.decision == "reject"  # ±2 at δ = 0.01 would exceed the total budget
    qtbot.mouseClick(page.offer_btn, Qt.MouseButton.LeftButton)
    message, options = dialogs.choices[-1]
    assert "q34 asks ±2 at 99 % confidence" in message and "a fresh answer within ±" in options[0]
    room, _ = headroom(a.request.query, a.cell_costs, 1.0)
    offered = win.session.request("q34")
    assert offered.delta == 0.01 and offered.eps > 2
    # the offer is affordable, and an ε narrower by more than its rounding (3 digits, ≤ 1 %) is not
    assert a.noise.alpha_for(a.sensitivity, offered.eps, 0.01) <= room
    assert a.noise.alpha_for(a.sensitivity, offered.eps * (1 - 0.011), 0.01) > room
    b = wait_assessed(qtbot, win, "q34")
    assert b.decision == "spend" and b.spend_alpha <= room + 1e-12
    qtbot.mouseClick(page.answer.spend_btn, Qt.MouseButton.LeftButton)
    wait_released(qtbot, win)
    assert win.session.request("q34").status == "answered" and win.session.budget().system_cost <= 1.0 + 1e-12


def test_counter_offer_free_from_history_at_its_confidence(demo_window, qtbot, dialogs):
    win = demo_window
    page = win.requests
    page.select_request("q04")
    wait_assessed(qtbot, win, "q04")
    qtbot.mouseClick(page.answer.spend_btn, Qt.MouseButton.LeftButton)
    wait_released(qtbot, win)
    page.select_request("q37")
    a = wait_assessed(qtbot, win, "q37")
    assert (
        a.decision == "spend"
        and a.confidence_at_eps is not None
        and a.confidence_at_eps < 1 - a.request.delta
    )
    dialogs.choice = 1
    qtbot.mouseClick(page.offer_btn, Qt.MouseButton.LeftButton)
    _message, options = dialogs.choices[-1]
    assert options[1].startswith(
        f"free from history: ±{a.request.eps:g} at {a.confidence_at_eps:.0%} confidence"
    )
    changed = win.session.request("q37")
    assert changed.eps == a.request.eps and 1 - changed.delta <= a.confidence_at_eps
    assert changed.delta == pytest.approx(1 - a.confidence_at_eps, abs=1e-3)
    b = wait_assessed(qtbot, win, "q37")
    assert b.decision == "infer"
    before = win.session.budget().system_cost
    qtbot.mouseClick(page.answer.infer_btn, Qt.MouseButton.LeftButton)
    wait_released(qtbot, win)
    assert win.session.request("q37").status == "answered" and win.session.budget().system_cost == before
    dialogs.choice = None  # cancelling changes nothing
    page.select_request("q06")
    wait_assessed(qtbot, win, "q06")
    old = win.session.request("q06")
    qtbot.mouseClick(page.offer_btn, Qt.MouseButton.LeftButton)
    assert win.session.request("q06") == old


def test_counter_offer_under_a_spend_policy_cap_is_the_best_answer_the_cap_allows(
    demo_window, qtbot, dialogs
):
    """Issue 34 item 8: not only tighter, dearer answers: the best answer the budget and the curator's cap
    allow, which the same policy then answers."""
    from dpdesk.engine.budget.policy import SpendPolicy

    win = demo_window
    page = win.requests
    win.session.set_spend_policy(SpendPolicy(cap=0.03))
    page.select_request("q01")
    a = wait_assessed(qtbot, win, "q01")
    assert a.decision == "reject"  # needs α ≈ 0.05 of a headroom of 1: over the cap of 3 %
    qtbot.mouseClick(page.offer_btn, Qt.MouseButton.LeftButton)
    _message, options = dialogs.choices[-1]
    assert "wider than the ±60 asked" in options[0] and "your spend policy" in options[0]
    offered = win.session.request("q01")
    assert offered.eps > 60 and offered.delta == a.request.delta
    b = wait_assessed(qtbot, win, "q01")
    assert b.decision == "spend" and b.spend_alpha <= 0.03 + 1e-12
