"""The Audit page's exports run on workers, report progress, can be cancelled, and write what they wrote before.

A real window (offscreen) on a real demo project with a few releases. The store's export functions are
wrapped only to see where they run and what progress they report (the real functions do the work); a
worker is held at its first progress report until the test has pressed Cancel, so the cancel happens
midway through a real write.
"""

from __future__ import annotations

import re
import threading

import pytest

from .conftest import WAIT, wait_assessed


@pytest.fixture
def audit_window(qtbot, tmp_path, settings, dialogs):
    from dpdesk.appdata.demo import demo_project
    from dpdesk.gui.app.main_window import MainWindow
    from dpdesk.gui.runtime.scripted import work_through
    from dpdesk.gui.runtime.session import ProjectSession

    path, _ = demo_project(tmp_path / "data")
    s = ProjectSession(path)
    work_through(s, ("q01", "q02", "q03"))
    s.close()
    win = MainWindow(settings)
    qtbot.addWidget(win)
    win.show()
    win.open_project(str(path))
    wait_assessed(qtbot, win)
    win.show_page("audit")
    qtbot.waitUntil(lambda: win.audit.model.rowCount() == 3, timeout=WAIT)
    yield win
    win.close()


class Spy:
    """Wraps a store export: records whether it ran on the GUI thread and the progress it reported;
    with ``hold``, the worker waits at its first report until :meth:`release` (the test cancels meanwhile)."""

    def __init__(self, fn, hold: bool = False) -> None:
        self.fn, self.hold = fn, hold
        self.on_gui_thread: bool | None = None
        self.progress: list[float] = []
        self.reached, self.go = threading.Event(), threading.Event()

    def __call__(self, project, out, *args, progress=None, cancelled=None, **kw):
        self.on_gui_thread = threading.current_thread() is threading.main_thread()

        def report(f: float) -> None:
            self.progress.append(f)
            progress(f)
            if self.hold and not self.reached.is_set():
                self.reached.set()
                self.go.wait(WAIT / 1000)

        return self.fn(project, out, *args, progress=report, cancelled=cancelled, **kw)

    def release(self) -> None:
        self.go.set()


def _old_report(win, images, cells_file=None) -> str:
    """The report exactly as the page built it on the GUI thread before (main at 51f1722)."""
    import numpy as np

    from dpdesk.store.report import build_html

    s = win.session
    budget, costs = s.budget(), s.cell_costs()
    cell_rows = [(s.schema.describe_cell(int(i)), float(costs[i])) for i in np.flatnonzero(costs)]
    return build_html(
        name=s.name,
        path=str(s.path),
        total_budget=budget.total,
        remaining=budget.remaining,
        system_cost=budget.system_cost,
        entries=s.ledger(),
        cell_rows=cell_rows,
        verify=s.verify(),
        images=images,
        charges=s.view().largest_charges(),
        delta_cap=s.project.delta_cap,
        delta_spent=s.view().delta_spent,
        requesters=s.requesters(),
        accounts=s.accounts(),
        claims=[{**c.watched.to_json(), **c.to_json()} for c in s.claim_statuses()],
        cells_file=cells_file,
        n_cells=s.schema.n_cells,
    )


def _undated(text: str) -> str:
    return re.sub(r"generated [0-9T:+-]+ by", "generated … by", text)


def test_exports_run_on_workers_with_progress_and_write_what_the_page_wrote_before(
    audit_window, qtbot, dialogs, monkeypatch, tmp_path
):
    from dpdesk.gui.pages import audit_page
    from dpdesk.store import audit_export
    from dpdesk.store.report import ledger_csv

    win, audit = audit_window, audit_window.audit
    csv_spy, html_spy = Spy(audit_export.export_csv), Spy(audit_export.export_report)
    monkeypatch.setattr(audit_export, "export_csv", csv_spy)
    monkeypatch.setattr(audit_export, "export_report", html_spy)
    csv_path, html_path = tmp_path / "ledger.csv", tmp_path / "report.html"
    monkeypatch.setattr(audit_page, "save_file_name", lambda *a: str(csv_path))
    audit.csv_btn.click()
    assert (
        audit.csv_task.isVisibleTo(audit) and not audit.csv_btn.isEnabled()
    )  # the click returned; a worker writes
    monkeypatch.setattr(audit_page, "save_file_name", lambda *a: str(html_path))
    audit.html_btn.click()  # while the CSV may still be written: neither cancels the other
    qtbot.waitUntil(lambda: not audit.exporting(), timeout=WAIT)
    assert csv_spy.on_gui_thread is False and html_spy.on_gui_thread is False
    for spy in (csv_spy, html_spy):
        assert (
            spy.progress and spy.progress == sorted(spy.progress) and spy.progress[-1] == pytest.approx(1.0)
        )
    assert audit.csv_btn.isEnabled() and audit.html_btn.isEnabled() and not audit.csv_task.isVisibleTo(audit)
    assert sorted(t for t, _ in dialogs.infos) == ["Ledger exported", "Report exported"]
    s = win.session
    with open(csv_path, encoding="utf-8", newline="") as f:
        assert f.read() == ledger_csv(s.ledger(), s.view().largest_charges(), s.requesters())
    text = html_path.read_text(encoding="utf-8")
    cells = tmp_path / "report-cells.csv"  # the whole per-cell table, beside the report (issue 34 item 13)
    assert _undated(text) == _undated(_old_report(win, audit.report_images(), cells.name))
    assert cells.read_text(encoding="utf-8").startswith("cell,cost\n")
    assert "Integrity verified" in text and audit.verdict.text().startswith("✓")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".part")) == []


@pytest.mark.parametrize("kind", ["csv", "html"])
def test_a_cancelled_export_leaves_no_file_and_an_older_one_as_it_was(
    audit_window, qtbot, dialogs, monkeypatch, tmp_path, kind
):
    from dpdesk.gui.pages import audit_page
    from dpdesk.store import audit_export

    audit = audit_window.audit
    name = "export_csv" if kind == "csv" else "export_report"
    spy = Spy(getattr(audit_export, name), hold=True)
    monkeypatch.setattr(audit_export, name, spy)
    out = tmp_path / f"out.{kind}"
    out.write_text("an older export\n", encoding="utf-8")
    monkeypatch.setattr(audit_page, "save_file_name", lambda *a: str(out))
    line, button = (audit.csv_task, audit.csv_btn) if kind == "csv" else (audit.html_task, audit.html_btn)
    button.click()
    qtbot.waitUntil(
        spy.reached.is_set, timeout=WAIT
    )  # the worker is midway (the CSV: its first rows written)
    if kind == "csv":
        assert [p for p in tmp_path.iterdir() if p.name.endswith(".part")]  # the write under way
    line.stop_btn.click()
    assert line.is_running()  # the line waits for the worker to stop, not just drops it
    spy.release()
    qtbot.waitUntil(lambda: not audit.exporting(), timeout=WAIT)
    assert out.read_text(encoding="utf-8") == "an older export\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".part")] == []
    assert "cancelled; nothing was written" in audit.note.text() and button.isEnabled()
    assert not dialogs.errors and not dialogs.infos
