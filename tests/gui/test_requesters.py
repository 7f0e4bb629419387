"""The requester in the ledger table, the CSV and the report; a per-requester account (issue 14)."""

from __future__ import annotations

import csv

from PySide6.QtCore import Qt

from .conftest import wait_assessed, wait_released


def _answer(qtbot, win, rid):
    win.requests.select_request(rid)
    a = wait_assessed(qtbot, win, rid)
    panel = win.requests.answer
    qtbot.mouseClick(panel.infer_btn if a.decision == "infer" else panel.spend_btn, Qt.MouseButton.LeftButton)
    wait_released(qtbot, win)


def test_requester_in_ledger_csv_report_and_per_requester_account(demo_window, qtbot, dialogs, monkeypatch, tmp_path):
    from dpdesk.gui import audit_page

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
    assert [audit.model.index(r, col).data() for r in range(4)] == [who[q] for q in ("q01", "q02", "q03", "q10")]
    # per requester: counts and the α of their own fresh releases, from the ledger
    ledger = win.session.ledger()
    spent: dict[str, float] = {}
    for e in ledger:
        spent[who[e.request_id]] = spent.get(who[e.request_id], 0.0) + (float(e.payload["alpha"]) if e.kind == "fresh" else 0.0)
    accounts = {a.requester: a for a in win.session.accounts()}
    for name, alpha in spent.items():
        assert accounts[name].alpha == alpha
    assert accounts[who["q10"]].rejected == 1 and accounts[who["q10"]].received[-1].reason == "Not in the agreed scope."
    assert sum(a.pending for a in accounts.values()) == 33
    rows = {audit.people_model.index(r, 0).data(): r for r in range(audit.people_model.rowCount())}
    assert set(rows) == {n or "(anonymous)" for n in accounts}
    r = rows[who["q01"]]
    assert int(audit.people_model.index(r, 1).data()) == accounts[who["q01"]].answered
    csv_path = tmp_path / "ledger.csv"
    monkeypatch.setattr(audit_page, "save_file_name", lambda *a: str(csv_path))
    qtbot.mouseClick(audit.csv_btn, Qt.MouseButton.LeftButton)
    exported = list(csv.DictReader(csv_path.open(encoding="utf-8")))
    assert [(x["request_id"], x["requester"]) for x in exported] == [(q, who[q]) for q in ("q01", "q02", "q03", "q10")]
    html_path = tmp_path / "report.html"
    monkeypatch.setattr(audit_page, "save_file_name", lambda *a: str(html_path))
    qtbot.mouseClick(audit.html_btn, Qt.MouseButton.LeftButton)
    text = html_path.read_text(encoding="utf-8")
    assert "<h2>By requester</h2>" in text and f"<td>{who['q01']}</td>" in text


def test_reply_letters_one_per_requester_with_value_interval_confidence(demo_window, qtbot, dialogs, monkeypatch,
                                                                        tmp_path):
    from dpdesk.gui import audit_page

    win = demo_window
    for rid in ("q01", "q03"):
        _answer(qtbot, win, rid)
    win.requests.select_request("q10")
    wait_assessed(qtbot, win, "q10")
    dialogs.text_answer = "Too fine-grained for the agreement."
    qtbot.mouseClick(win.requests.answer.reject_btn, Qt.MouseButton.LeftButton)
    folder = tmp_path / "letters"
    monkeypatch.setattr(audit_page, "choose_folder", lambda *a: str(folder))
    qtbot.mouseClick(win.audit.letters_btn, Qt.MouseButton.LeftButton)
    who = {r.id: r.requester for r in win.session.requests()}
    people = {who[q] for q in ("q01", "q03", "q10")}
    assert sorted(p.name for p in folder.iterdir()) == sorted(f"{n}{s}" for n in people for s in (".txt", ".html"))
    assert dialogs.infos[-1] == ("Letters written", f"Wrote {len(people)} letter{'s' * (len(people) != 1)} "
                                                    f"(text and HTML) to {folder}.")
    e = win.session.project.entry_for("q01")
    text = (folder / f"{who['q01']}.txt").read_text(encoding="utf-8")
    req = win.session.request("q01")
    lo, hi = e.payload["interval"]
    assert f"Answer: {e.released:.6g} in [{lo:.6g}, {hi:.6g}]" in text
    assert f"within ±{req.eps:g} of the answer with probability at least {1 - req.delta:g}" in text
    assert e.hash in text and req.query_text in text
    rejected = (folder / f"{who['q10']}.txt").read_text(encoding="utf-8")
    assert "Not answered. Too fine-grained for the agreement." in rejected
    assert "<table" in (folder / f"{who['q01']}.html").read_text(encoding="utf-8")
