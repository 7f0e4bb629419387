"""A curator's whole day on real widgets (issue 14's scripted walk), from a new project after the demo.

New project from a CSV after the demo was open → schema → budget → add, import, edit, delete requests →
answer free, fresh, reject with a note → counter-offer accepted → answer all free → audit, verify,
report, letters. Only public widgets, buttons, menu actions and the test hooks the app exposes.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pandas as pd
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialogButtonBox

from .conftest import WAIT, wait_assessed, wait_released
from .test_request_editing import drive_modal


def _fill(qtbot, text, eps, delta, requester):
    def steps(dlg):
        dlg.text.setText(text)
        dlg.eps.setValue(eps)
        dlg.delta.setValue(delta)
        dlg.requester.setText(requester)
        qtbot.mouseClick(dlg.buttons.button(QDialogButtonBox.StandardButton.Ok), Qt.MouseButton.LeftButton)

    return steps


def _click(qtbot, button):
    assert button.isEnabled(), button.text()
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def test_a_curators_day(demo_window, qtbot, dialogs, monkeypatch, tmp_path):
    from dpdesk.gui.pages import audit_page, data_page, requests_page

    win = demo_window
    # -- a new project from an own CSV, after the demo was open
    rows = [("north", 3)] * 900 + [("south", 12)] * 700 + [("east", 30)] * 350 + [("west", 7)] * 50
    table = tmp_path / "clinic.csv"
    pd.DataFrame(rows, columns=["region", "visits"]).to_csv(table, index=False)
    win.menu_actions["new_project"].trigger()
    page = win.data
    page.open_table(str(table))
    qtbot.waitUntil(lambda: page.source is not None and not page.runner.is_running(), timeout=WAIT)
    page.editor.set_attribute("region", "region", "categorical", ["east", "north", "south", "west"])
    page.editor.set_attribute("visits", "visits", "numeric", [0, 10, 100])
    page.reviewed.setChecked(True)
    target = tmp_path / "clinic.dpdesk"
    monkeypatch.setattr(data_page, "ask_new_project", lambda parent: (str(target), 1.0, 0.0))
    _click(qtbot, page.create_btn)
    qtbot.waitUntil(lambda: win.session is not None and win.session.path == target, timeout=WAIT)
    assert win.session.schema.shape == (4, 2) and win.session.total_budget == 1.0
    req = win.requests
    # -- add, import, edit, delete requests
    drive_modal(qtbot, _fill(qtbot, 'count(region="north")', 30, 0.05, "health-office"))
    _click(qtbot, req.new_btn)
    queued = tmp_path / "queue.csv"
    with queued.open("w", encoding="utf-8", newline="") as f:
        csv.writer(f).writerows(
            [
                ("query", "eps", "delta", "requester"),
                ('count(region="south")', 30, 0.05, "health-office"),
                ('count(region=["north", "south"])', 80, 0.05, "press"),
                ('count(region="east")', 0.5, 0.01, "insurer"),
                ('count(visits="0 to <10")', 25, 0.05, "press"),
                ('count(region="west")', 25, 0.05, "nobody"),
            ]
        )
    monkeypatch.setattr(requests_page, "open_file_name", lambda *a: str(queued))
    win.menu_actions["import_requests"].trigger()
    ids = [r.id for r in win.session.requests()]
    assert not dialogs.errors, dialogs.errors
    assert len(ids) == 6
    north, south, both, east, visits, west = ids
    req.select_request(visits)
    wait_assessed(qtbot, win, visits)
    drive_modal(qtbot, _fill(qtbot, 'count(visits="0 to <10")', 60, 0.05, "press"))
    _click(qtbot, req.edit_btn)
    assert win.session.request(visits).eps == 60
    req.select_request(west)
    wait_assessed(qtbot, win, west)
    _click(qtbot, req.delete_btn)
    assert west not in [r.id for r in win.session.requests()]
    panel = req.answer
    # -- fresh answers, then a free one from history
    for rid in (north, south):
        req.select_request(rid)
        assert wait_assessed(qtbot, win, rid).decision == "spend"
        _click(qtbot, panel.spend_btn)
        wait_released(qtbot, win)
    req.select_request(both)
    assert wait_assessed(qtbot, win, both).decision == "infer"
    cost = win.session.budget().system_cost
    _click(qtbot, panel.infer_btn)
    wait_released(qtbot, win)
    assert win.session.budget().system_cost == cost
    # -- reject with a note
    req.select_request(visits)
    wait_assessed(qtbot, win, visits)
    dialogs.text_answer = "Visit counts are outside the agreement."
    _click(qtbot, panel.reject_btn)
    assert win.session.project.entry_for(visits).payload["reason"] == dialogs.text_answer
    # -- a counter-offer, accepted, then answered
    req.select_request(east)
    assert wait_assessed(qtbot, win, east).decision == "reject"
    dialogs.choice = 0
    _click(qtbot, req.offer_btn)
    assert win.session.request(east).eps > 0.5
    assert wait_assessed(qtbot, win, east).decision == "spend"
    _click(qtbot, panel.spend_btn)
    wait_released(qtbot, win)
    # -- answer all free: a repeat of a released count is free
    drive_modal(qtbot, _fill(qtbot, 'count(region="north")', 90, 0.05, "press"))
    _click(qtbot, req.new_btn)
    repeat = win.session.requests()[-1].id
    win.menu_actions["answer_all_free"].trigger()
    qtbot.waitUntil(lambda: not req.free_runner.is_running(), timeout=WAIT)
    assert win.session.project.entry_for(repeat).kind == "inferred"
    assert dialogs.infos[-1] == (
        "Free requests answered",
        f"Released 1 free answer from history ({repeat}); 0 requests still pending.",
    )
    assert all(r.status != "pending" for r in win.session.requests())
    # -- audit: verify, report, CSV, letters
    win.show_page("audit")
    audit = win.audit
    _click(qtbot, audit.verify_btn)  # on a worker
    qtbot.waitUntil(lambda: not audit.exporting(), timeout=WAIT)
    assert audit.verdict.text().startswith("✓") and win.session.budget().system_cost <= 1.0
    report, ledger_csv, letters = tmp_path / "report.html", tmp_path / "ledger.csv", tmp_path / "letters"
    monkeypatch.setattr(audit_page, "save_file_name", lambda *a: str(report))
    _click(qtbot, audit.html_btn)
    monkeypatch.setattr(audit_page, "save_file_name", lambda *a: str(ledger_csv))
    _click(qtbot, audit.csv_btn)
    monkeypatch.setattr(audit_page, "choose_folder", lambda *a: str(letters))
    _click(qtbot, audit.letters_btn)
    qtbot.waitUntil(
        lambda: not audit.exporting(), timeout=WAIT
    )  # the report and the CSV are written on workers
    assert "Integrity verified" in report.read_text(encoding="utf-8")
    exported = list(csv.DictReader(ledger_csv.open(encoding="utf-8")))
    assert [r["request_id"] for r in exported] == [north, south, both, visits, east, repeat]
    assert {r["requester"] for r in exported} == {"health-office", "press", "insurer"}
    assert sorted(p.name for p in letters.iterdir()) == sorted(
        f"{n}.{s}" for n in ("health-office", "press", "insurer") for s in ("txt", "html")
    )
    press = (letters / "press.txt").read_text(encoding="utf-8")
    assert "Visit counts are outside the agreement." in press
    # the inferred count is a float estimate in the ledger, one integer wherever people read it
    inferred = win.session.project.entry_for(both)
    estimate = inferred.payload["estimate"]
    shown = math.floor(estimate + 0.5)  # docs/project-file.md, Rounding: the nearest integer, halves up
    row = next(r for r in exported if r["request_id"] == both)
    assert row["released"] == str(shown) and f"Answer: {shown} in [" in press
    assert f"<td>{shown} in [" in report.read_text(encoding="utf-8")


# --------------------------------------------------------------------------------------------------------
# Issue 34: the same day on a table the project has never seen (tests/data/clinic.csv: a boolean and two
# numeric columns), on a laptop's screen, through every release kind, a watched claim, a counter-offer and
# the letters; every window and dialog met on the way inside the screen.


def _on_screen(w) -> None:
    from PySide6.QtWidgets import QApplication

    area = QApplication.primaryScreen().availableGeometry()
    assert area.width() <= 1024 and area.height() <= 700
    assert area.contains(w.frameGeometry()), f"{type(w).__name__} at {w.frameGeometry()} off {area}"


def _ask(qtbot, win, text, eps=None, delta=None, alpha=None, requester=""):
    """Queue a request through the New request… dialog (a real modal dialog, driven)."""

    def steps(dlg):
        _on_screen(dlg)
        dlg.text.setText(text)
        if eps is not None:
            dlg.eps.setValue(eps)
            dlg.delta.setValue(delta)
        if alpha is not None:
            dlg.price.setCurrentIndex(1)
            dlg.alpha.setValue(alpha)
        dlg.requester.setText(requester)
        assert dlg.query is not None, dlg.status.text()
        qtbot.mouseClick(dlg.buttons.button(QDialogButtonBox.StandardButton.Ok), Qt.MouseButton.LeftButton)

    drive_modal(qtbot, steps)
    _click(qtbot, win.requests.new_btn)
    return win.session.requests()[-1].id


def _decide(qtbot, win, rid, expect):
    from .conftest import WAIT

    page, panel = win.requests, win.requests.answer
    page.select_request(rid)
    qtbot.waitUntil(
        lambda: (
            panel.assessment is not None
            and panel.assessment.request_id == rid
            and not panel.runner.is_running()
        ),
        timeout=WAIT,
    )
    a = panel.assessment
    if expect == "infer":
        assert a.decision == "infer"
        _click(qtbot, panel.infer_btn)
    else:
        assert panel.spend_btn.isEnabled(), (panel.reason.text(), panel.claims_note.text())
        _click(qtbot, panel.spend_btn)
    wait_released(qtbot, win)
    qtbot.waitUntil(lambda: win.session.request(rid).status == "answered", timeout=WAIT)
    return win.session.project.entry_for(rid)


def test_a_day_on_a_table_the_project_has_never_seen(qtbot, settings, dialogs, monkeypatch, tmp_path):
    import numpy as np

    from dpdesk.engine.budget.policy import SpendPolicy
    from dpdesk.gui.app.main_window import MainWindow
    from dpdesk.gui.dialogs import claim_dialog
    from dpdesk.gui.kinds.batch_dialog import BatchDialog
    from dpdesk.gui.pages import audit_page, data_page

    from .conftest import WAIT

    source = Path(__file__).resolve().parents[1] / "data" / "clinic.csv"
    table = tmp_path / "clinic.csv"
    table.write_bytes(source.read_bytes())
    win = MainWindow(settings, demo_folder=tmp_path / "data")
    qtbot.addWidget(win)
    win.show()
    _on_screen(win)
    # -- a project from the new table: the boolean previews as the cube will match it
    win.menu_actions["new_project"].trigger()
    page = win.data
    page.open_table(str(table))
    qtbot.waitUntil(lambda: page.source is not None and not page.runner.is_running(), timeout=WAIT)
    assert sorted(set(page.preview_frame["smoker"].astype(str))) == ["false", "true"]  # one spelling
    page.editor.set_attribute("region", "region", "categorical", ["north", "south", "east", "west"])
    page.editor.set_attribute("smoker", "smoker", "categorical", ["true", "false"])
    page.editor.set_attribute("age", "age", "numeric", [18, 40, 65, 91])
    page.editor.set_attribute("visits", "visits", "numeric", [0, 3, 6, 41])
    page.reviewed.setChecked(True)
    target = tmp_path / "clinic.dpdesk"
    monkeypatch.setattr(data_page, "ask_new_project", lambda parent: (str(target), 3.0, 0.0))
    _click(qtbot, page.create_btn)
    qtbot.waitUntil(lambda: win.session is not None and win.session.path == target, timeout=WAIT)
    s = win.session
    assert s.schema.attribute("age").labels == ("18 to <40", "40 to <65", "65 to 91")  # half-open, said so
    assert s.schema.shape == (4, 2, 3, 3)
    _on_screen(win)
    # -- count requests through the dialog: a fresh answer, then history's free answer to a wider one
    smokers = _ask(qtbot, win, 'count(smoker="true")', 40, 0.05, requester="health-board")
    north = _ask(qtbot, win, 'count(region="north", smoker="true")', 40, 0.05, requester="health-board")
    young = _ask(qtbot, win, 'count(age="18 to <40", smoker="true")', 30, 0.05, requester="press")
    again = _ask(qtbot, win, 'count(smoker="true")', 120, 0.05, requester="press")
    fresh = _decide(qtbot, win, smokers, "spend")
    assert fresh.kind == "fresh" and dialogs.spends  # the one spend confirmation
    assert _decide(qtbot, win, again, "infer").kind == "inferred"
    _decide(qtbot, win, north, "spend")

    # -- a claim watched on the young smokers; their request is blocked and counter-offered within it
    def fill(dialog):
        _on_screen(dialog)
        dialog.query.setText('count(age="18 to <40", smoker="true")')
        dialog.low.setText("0")
        dialog.high.setText("2000")
        dialog.threshold.setText("0.8")
        dialog.risk.setText("0.05")
        dialog.accept()
        return True

    monkeypatch.setattr(claim_dialog, "run_dialog", fill)
    win.menu_actions["watch_claim"].trigger()
    panel = win.requests.answer
    win.requests.select_request(young)
    qtbot.waitUntil(lambda: panel.claim_blocked and panel.offer_btn.isVisible(), timeout=WAIT)
    offer = panel.claim_offer
    dialogs.choice = 0
    _click(qtbot, panel.offer_btn)
    qtbot.waitUntil(lambda: win.session.request(young).status == "answered", timeout=WAIT)
    wait_released(qtbot, win)
    assert float(win.session.project.entry_for(young).payload["alpha"]) <= offer.alpha * (1 + 1e-9)
    # -- the plain counter-offer under a spend policy's cap: the best answer the cap allows
    s.set_spend_policy(SpendPolicy(cap=0.05))
    tight = _ask(qtbot, win, 'count(region="west", visits="6 to 41")', 3, 0.05, requester="insurer")
    win.requests.select_request(tight)
    qtbot.waitUntil(
        lambda: panel.assessment is not None and panel.assessment.request_id == tight, timeout=WAIT
    )
    assert panel.assessment.decision == "reject"
    dialogs.choice = 0
    _click(qtbot, win.requests.offer_btn)
    assert win.session.request(tight).eps > 3
    _decide(qtbot, win, tight, "spend")
    s.set_spend_policy(None)
    # -- a rejection, with a note; its requester's letter says so
    refused = _ask(
        qtbot, win, 'count(region="east", age="65 to 91", visits="0 to <3")', 1, 0.01, requester="marketing"
    )
    win.requests.select_request(refused)
    wait_assessed(qtbot, win, refused)
    dialogs.text_answer = "Too fine for the data agreement."
    _click(qtbot, panel.reject_btn)
    # -- max/argmax and a posterior of proportions, queued and released from the answer panel
    top = _ask(qtbot, win, 'argmax(region | smoker="false")', alpha=0.2, requester="press")
    assert _decide(qtbot, win, top, "spend").kind == "selection"
    shares = _ask(
        qtbot, win, 'posterior(smoker | region="south", age="65 to 91")', alpha=0.3, requester="health-board"
    )
    assert _decide(qtbot, win, shares, "spend").kind == "posterior"
    assert (
        "band including the Laplace noise" in panel.result.text()
        or "band of the released" in panel.result.text()
    )
    # -- the kinds' own windows open inside the screen: the posterior dialog, max/argmax, the heatmap window
    _click(qtbot, win.requests.posterior_btn)
    post = win.requests.posterior_dialog
    qtbot.waitUntil(post.isVisible, timeout=WAIT)
    _on_screen(post)
    post.close()
    pick = win.requests.budget.release_selection()
    qtbot.waitUntil(pick.isVisible, timeout=WAIT)
    _on_screen(pick)
    pick.close()
    heat = win.requests.budget.open_heatmap_window()
    qtbot.waitUntil(heat.isVisible, timeout=WAIT)
    _on_screen(heat)
    heat.close()
    # -- a partition release (the visits marginal) from the budget panel
    d = win.requests.budget.publish_release()
    qtbot.waitUntil(d.isVisible, timeout=WAIT)
    _on_screen(d)
    d.kind.setCurrentIndex(1)
    d.orders.setText("1")
    d.alpha.setValue(0.1)
    d.run_preview()
    qtbot.waitUntil(lambda: d.preview_result is not None, timeout=WAIT)
    assert "Thm" not in d.result.toPlainText()
    d.publish_button.click()
    qtbot.waitUntil(
        lambda: not win.requests.budget.release_runner.is_running() and bool(dialogs.infos), timeout=WAIT
    )
    assert any(e.kind == "partition" for e in s.ledger())
    # -- a batch of two pending counts
    b1 = _ask(qtbot, win, 'count(region="north", age="40 to <65")', 60, 0.05, requester="press")
    b2 = _ask(qtbot, win, 'count(region="north", age="65 to 91")', 60, 0.05, requester="press")
    batch = BatchDialog(s, [b1, b2], "fft", win)
    qtbot.addWidget(batch)
    batch.show()
    _on_screen(batch)
    qtbot.waitUntil(lambda: batch.plan is not None and not batch.runner.is_running(), timeout=WAIT)
    assert batch.plan.why() in batch.summary.text().replace("&#x27;", "'")
    assert batch.release_button.isEnabled(), batch.summary.text()
    batch.release_button.click()
    qtbot.waitUntil(lambda: not batch.runner.is_running(), timeout=WAIT)
    assert batch.outcome is not None, batch.summary.text()
    assert s.request(b1).status == s.request(b2).status == "answered"
    batch.close()
    # -- a zero-cost estimate and a synthetic table, both recorded free
    before = s.budget().system_cost
    win.requests.select_request(b1) if s.request(b1).status == "pending" else None
    win.menu_actions["new_estimate"].trigger()
    est = win.estimate_dialog
    qtbot.waitUntil(est.isVisible, timeout=WAIT)
    _on_screen(est)
    est.query.setText('count(region="west", smoker="false")')
    est.by_cv.setChecked(False)
    est.tau.setValue(5.0)
    est.preview_button.click()
    qtbot.waitUntil(lambda: est.plan is not None or "color:#c0392b" in est.result.toHtml(), timeout=WAIT)
    assert est.plan is not None, est.result.toPlainText()
    text = est.result.toPlainText()
    assert "error: within ±" in text or "NO ERROR BOUND" in text
    est.record_button.click()
    qtbot.waitUntil(lambda: est.release is not None, timeout=WAIT)
    win.menu_actions["export_synthetic"].trigger()
    syn = win.audit.synthetic_dialog
    qtbot.waitUntil(syn.isVisible, timeout=WAIT)
    _on_screen(syn)
    syn.rows.setValue(300)
    syn.by_cv.setChecked(False)
    syn.tau.setValue(0.1)
    syn.path.setText(str(tmp_path / "synthetic.csv"))
    syn.preview_button.click()
    qtbot.waitUntil(lambda: syn.plan is not None or "color:#c0392b" in syn.result.toHtml(), timeout=WAIT)
    assert syn.plan is not None, syn.result.toPlainText()
    syn.export_button.click()
    qtbot.waitUntil(lambda: (tmp_path / "synthetic.csv").exists(), timeout=WAIT)
    assert s.budget().system_cost == before  # both free
    kinds = {e.kind for e in s.ledger()}
    assert {
        "fresh",
        "inferred",
        "rejected",
        "selection",
        "posterior",
        "partition",
        "estimate",
        "synthetic",
        "batch",
        "measurement",
    } <= kinds
    # -- audit: verify, the report (its per-cell table attached), the letters
    win.show_page("audit")
    _on_screen(win)
    audit = win.audit
    _click(qtbot, audit.verify_btn)
    qtbot.waitUntil(lambda: not audit.exporting(), timeout=WAIT)
    assert audit.verdict.text().startswith("✓")
    letters = tmp_path / "letters"
    monkeypatch.setattr(audit_page, "choose_folder", lambda *a: str(letters))
    _click(qtbot, audit.letters_btn)
    qtbot.waitUntil(
        lambda: letters.exists() and any(letters.iterdir()) and not audit.exporting(), timeout=WAIT
    )
    texts = {p.stem: p.read_text(encoding="utf-8") for p in letters.glob("*.txt")}
    board = next(t for name, t in texts.items() if name.startswith("health-board"))
    assert "at 95 % confidence" in board and "shares " in board  # the counts' promise, the posterior's bands
    refusal = next(t for name, t in texts.items() if name.startswith("marketing"))
    assert "We could not answer your request" in refusal and "Here are" not in refusal
    assert "Too fine for the data agreement." in refusal and "agreement.." not in refusal
    assert np.isfinite(s.budget().remaining)
