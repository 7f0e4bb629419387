"""The requester in the ledger table, the CSV and the report; a per-requester account (issue 14)."""

from __future__ import annotations

import csv
import math

from PySide6.QtCore import Qt

from .conftest import WAIT, wait_assessed, wait_released


def _answer(qtbot, win, rid):
    win.requests.select_request(rid)
    a = wait_assessed(qtbot, win, rid)
    panel = win.requests.answer
    qtbot.mouseClick(panel.infer_btn if a.decision == "infer" else panel.spend_btn, Qt.MouseButton.LeftButton)
    wait_released(qtbot, win)


def test_requester_in_ledger_csv_report_and_per_requester_account(
    demo_window, qtbot, dialogs, monkeypatch, tmp_path
):
    from dpdesk.gui.pages import audit_page

    win = demo_window
    for rid in ("q01", "q02", "q03"):
        _answer(qtbot, win, rid)
    win.requests.select_request("q10")
    wait_assessed(qtbot, win, "q10")
    dialogs.text_answer = "Not in the agreed scope."
    qtbot.mouseClick(win.requests.answer.reject_btn, Qt.MouseButton.LeftButton)
    who = {r.id: r.requester for r in win.session.requests()}
    audit = win.audit
    col = audit.model._headers.index("requester")
    assert [audit.model.index(r, col).data() for r in range(4)] == [
        who[q] for q in ("q01", "q02", "q03", "q10")
    ]
    # per requester: counts and the α of their own fresh releases, from the ledger
    ledger = win.session.ledger()
    spent: dict[str, float] = {}
    for e in ledger:
        spent[who[e.request_id]] = spent.get(who[e.request_id], 0.0) + (
            float(e.payload["alpha"]) if e.kind == "fresh" else 0.0
        )
    accounts = {a.requester: a for a in win.session.accounts()}
    for name, alpha in spent.items():
        assert accounts[name].alpha == alpha
    assert (
        accounts[who["q10"]].rejected == 1
        and accounts[who["q10"]].received[-1].reason == "Not in the agreed scope."
    )
    assert sum(a.pending for a in accounts.values()) == 35
    rows = {audit.people_model.index(r, 0).data(): r for r in range(audit.people_model.rowCount())}
    assert set(rows) == {n or "(anonymous)" for n in accounts}
    r = rows[who["q01"]]
    assert int(audit.people_model.index(r, 1).data()) == accounts[who["q01"]].answered
    csv_path = tmp_path / "ledger.csv"
    monkeypatch.setattr(audit_page, "save_file_name", lambda *a: str(csv_path))
    qtbot.mouseClick(audit.csv_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not audit.exporting(), timeout=WAIT)  # written on a worker
    exported = list(csv.DictReader(csv_path.open(encoding="utf-8")))
    assert [(x["request_id"], x["requester"]) for x in exported] == [
        (q, who[q]) for q in ("q01", "q02", "q03", "q10")
    ]
    html_path = tmp_path / "report.html"
    monkeypatch.setattr(audit_page, "save_file_name", lambda *a: str(html_path))
    qtbot.mouseClick(audit.html_btn, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not audit.exporting(), timeout=WAIT)
    text = html_path.read_text(encoding="utf-8")
    assert "<h2>By requester</h2>" in text and f"<td>{who['q01']}</td>" in text


def test_reply_letters_one_per_requester_with_value_interval_confidence(
    demo_window, qtbot, dialogs, monkeypatch, tmp_path
):
    from dpdesk.gui.pages import audit_page

    win = demo_window
    for rid in ("q01", "q02", "q03"):  # q03 = q01 + q02: inferred from history
        _answer(qtbot, win, rid)
    win.requests.select_request("q10")
    wait_assessed(qtbot, win, "q10")
    dialogs.text_answer = "Too fine-grained for the agreement."
    qtbot.mouseClick(win.requests.answer.reject_btn, Qt.MouseButton.LeftButton)
    folder = tmp_path / "letters"
    monkeypatch.setattr(audit_page, "choose_folder", lambda *a: str(folder))
    qtbot.mouseClick(win.audit.letters_btn, Qt.MouseButton.LeftButton)
    who = {r.id: r.requester for r in win.session.requests()}
    people = {who[q] for q in ("q01", "q02", "q03", "q10")}
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        f"{n}{s}" for n in people for s in (".txt", ".html")
    )
    assert dialogs.infos[-1] == (
        "Letters written",
        f"Wrote {len(people)} letter{'s' * (len(people) != 1)} (text and HTML) to {folder}.",
    )
    e = win.session.project.entry_for("q01")
    text = (folder / f"{who['q01']}.txt").read_text(encoding="utf-8")
    req = win.session.request("q01")
    lo, hi = e.payload["interval"]
    assert f"Answer: {int(e.released)} in [{int(lo)}, {int(hi)}]" in text
    # one interval, with the confidence it was released at, in the words the DP world uses
    assert (
        f"(±{req.eps:g} at {100 * (1 - req.delta):g} % confidence) — the true count lies in this interval"
        in text
    )
    # q03 is inferred: a float estimate such as 59950.999999999985, shown as the count it is
    e3 = win.session.project.entry_for("q03")
    v, (lo3, hi3) = e3.payload["estimate"], e3.payload["interval"]
    assert e3.kind == "inferred"
    shown = math.floor(v + 0.5)  # docs/project-file.md, Rounding: the nearest integer, halves up
    text3 = (folder / f"{who['q03']}.txt").read_text(encoding="utf-8")
    assert f"Answer: {shown} in [{math.ceil(lo3 - 1e-6)}, {math.floor(hi3 + 1e-6)}]" in text3
    assert e.hash in text and req.query_text in text
    rejected = (folder / f"{who['q10']}.txt").read_text(encoding="utf-8")
    assert "Not answered. Too fine-grained for the agreement." in rejected
    # univ-econ received only q10's refusal: not told "here are the answers"
    assert "Here are" not in rejected and rejected.startswith(
        f"Dear {who['q10']},\n\nWe could not answer your request"
    )
    assert "<table" in (folder / f"{who['q01']}.html").read_text(encoding="utf-8")
