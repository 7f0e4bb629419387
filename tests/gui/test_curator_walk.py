"""A curator's whole day on real widgets (issue 14's scripted walk), from a new project after the demo.

New project from a CSV after the demo was open → schema → budget → add, import, edit, delete requests →
answer free, fresh, reject with a note → counter-offer accepted → answer all free → audit, verify,
report, letters. Only public widgets, buttons, menu actions and the test hooks the app exposes.
"""

from __future__ import annotations

import csv
import math

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
