"""The main window: Start, Data, Requests and Audit pages around one open project.

It owns the :class:`~dpdesk.gui.runtime.session.ProjectSession`, builds the project pages when a project
opens, remembers recent projects and the window layout in ``QSettings``, and shuts background tasks
down on close. Opening the demo copies the bundled files into a fresh project in the background.

Closing a long project writes its ledger-view cache (``store/view_cache.py``: the next opening reads it
instead of replaying the ledger) on a worker with a line in the status bar and a *Skip* button; the pages
are gone at once. Quitting meanwhile waits for it (a second close, or *Skip*, skips it): the cache is
only an accelerator, checked when read, so a skipped one costs the next opening a replay, nothing more.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QByteArray, QSettings, QSize, QThreadPool
from PySide6.QtGui import QAction, QCloseEvent, QIcon
from PySide6.QtWidgets import QFileDialog, QFrame, QLabel, QMainWindow, QScrollArea, QTabWidget, QWidget

from dpdesk.appdata.bundled import resource
from dpdesk.engine.mechanisms.registry import POSTERIOR_METHODS
from dpdesk.gui import dialogs
from dpdesk.gui.app.menus import build_menus, update_actions
from dpdesk.gui.pages.data_page import DataPage
from dpdesk.gui.pages.start_page import StartPage
from dpdesk.gui.runtime.redraw import subscribe
from dpdesk.gui.runtime.task_line import TaskLine
from dpdesk.gui.runtime.tasks import TaskRunner
from dpdesk.gui.widgets.screen_fit import fit_window, initial_size, keep_on_screen

if TYPE_CHECKING:
    # the project pages pull in the engine (scipy, pandas) and pyqtgraph: imported when a project
    # opens, so the window paints first
    from dpdesk.gui.pages.audit_page import AuditPage
    from dpdesk.gui.pages.requests_page import RequestsPage
    from dpdesk.gui.runtime.session import ProjectSession


MAX_RECENT = 10
PREFERRED_SIZE = QSize(1320, 880)  # the first size where the screen leaves room for it
PAGES = ("start", "data", "requests", "audit")


def _placeholder(text: str) -> QLabel:
    label = QLabel(text)
    label.setStyleSheet("color: #666; font-size: 14px;")
    label.setWordWrap(True)
    label.setMargin(40)
    return label


class MainWindow(QMainWindow):
    """dpdesk's window."""

    def __init__(
        self, settings: QSettings, demo_folder: Path | None = None, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.settings = settings
        self.demo_folder = demo_folder
        self.session: ProjectSession | None = None
        self.runner = TaskRunner(self)
        self.setWindowTitle("dpdesk")
        try:
            self.setWindowIcon(QIcon(str(resource("icons", "dpdesk.svg"))))
        except FileNotFoundError:
            pass
        self.tabs = QTabWidget()
        # the pages never push the window's edges out: when the window is smaller than a page needs
        # (it never is at 1024×700 and up), the page scrolls inside it
        self.page_area = QScrollArea()
        self.page_area.setWidgetResizable(True)
        self.page_area.setFrameShape(QFrame.Shape.NoFrame)
        self.page_area.setWidget(self.tabs)
        self.setCentralWidget(self.page_area)
        keep_on_screen(self)
        self.start = StartPage()
        self.data = DataPage()
        self.requests: RequestsPage | None = None
        self.audit: AuditPage | None = None
        self.tabs.addTab(self.start, "Start")
        self.tabs.addTab(self.data, "Data")
        self.tabs.addTab(_placeholder("Open a project to work through its requests."), "Requests")
        self.tabs.addTab(_placeholder("Open a project to audit its ledger."), "Audit")
        self.start.sigNew.connect(self.new_project)
        self.start.sigOpen.connect(self.choose_project)
        self.start.sigOpenPath.connect(self.open_project)
        self.start.sigDemo.connect(self.open_demo)
        self.data.sigProjectCreated.connect(self.open_project)
        self.budget_label = QLabel("")
        self.statusBar().addPermanentWidget(self.budget_label)
        # a closed project's cache is written on a pool of its own: other runners' shutdown does not wait for it
        self.closing = TaskLine("Skip", pool=QThreadPool(self))
        self.closing.stop_btn.setToolTip(
            "Close without writing the cache (the next opening replays the ledger)"
        )
        self.statusBar().addWidget(self.closing, 1)
        self._closing_session: ProjectSession | None = None
        self._quit_when_closed = False
        self.start.set_recent(self.recent())
        self.menu_actions = build_menus(self)
        self.menu_actions["about"].setMenuRole(QAction.MenuRole.AboutRole)  # macOS: the application menu
        update_actions(self.menu_actions, False)
        self.resize(initial_size(self, PREFERRED_SIZE))
        geometry = self.settings.value("window/geometry")
        if isinstance(geometry, QByteArray):
            self.restoreGeometry(geometry)
            fit_window(self)  # restored within the screen it opens on now (a smaller one, perhaps)

    # -- recent projects -----------------------------------------------------------------------
    def recent(self) -> list[str]:
        value = self.settings.value("recent", [])
        if isinstance(value, str):
            value = [value]
        return [str(v) for v in (value or [])]

    def _remember(self, path: str) -> None:
        items = [path] + [p for p in self.recent() if p != path]
        self.settings.setValue("recent", items[:MAX_RECENT])
        self.start.set_recent(items[:MAX_RECENT])

    # -- opening -------------------------------------------------------------------------------
    def page(self, name: str) -> QWidget:
        return self.tabs.widget(PAGES.index(name))

    def show_page(self, name: str) -> None:
        self.tabs.setCurrentIndex(PAGES.index(name))

    def new_project(self) -> None:
        self.close_project()
        self.show_page("data")

    def close_project_to_start(self) -> None:
        """File ▸ Close project: back to the Start page with nothing open."""
        self.close_project()
        self.show_page("start")

    def _on_requests(self, action: str) -> None:
        """A Requests-page action from the menu: show the page and run it (nothing without a project)."""
        if self.requests is not None:
            self.show_page("requests")
            getattr(self.requests, action)()

    def new_request(self) -> None:
        self._on_requests("new_request")

    def import_requests(self) -> None:
        self._on_requests("import_file")

    def new_posterior(self) -> None:
        if self.requests is not None:
            self.show_page("requests")
            self.requests.new_posterior()

    def new_estimate(self) -> None:
        """Edit ▸ Zero-cost estimate…: the selected request's query, estimated from released answers only."""
        from dpdesk.gui.kinds.estimate_dialog import EstimateDialog

        s = self.session
        if s is None:
            return
        rid = self.requests.answer.request_id if self.requests is not None else None
        text = s.request(rid).describe(s.schema) if rid is not None else ""
        self.estimate_dialog = EstimateDialog(
            s.state.estimate_inputs,
            text=text,
            release_job=s.release_job,
            released=s.released,
            parent=self,
            schema=s.schema,
        )
        self.estimate_dialog.show()

    def export_synthetic(self) -> None:
        if self.audit is not None:
            self.show_page("audit")
            self.audit.export_synthetic()

    def show_about(self) -> None:
        from dpdesk.gui.dialogs.about_dialog import show_about

        show_about(self)

    def edit_request(self) -> None:
        self._on_requests("edit_request")

    def delete_request(self) -> None:
        self._on_requests("delete_request")

    def answer_all_free(self) -> None:
        self._on_requests("answer_all_free")

    def _on_answer(self, action: str) -> None:
        """An answer-panel action from the menu or its shortcut: on the Requests page only."""
        if self.requests is not None and self.tabs.currentWidget() is self.requests:
            getattr(self.requests.answer, action)()

    def release_inferred(self) -> None:
        self._on_answer("release_inferred")

    def spend_and_release(self) -> None:
        self._on_answer("spend_and_release")

    def reject_request(self) -> None:
        self._on_answer("reject")

    def next_request(self) -> None:
        if self.requests is not None and self.tabs.currentWidget() is self.requests:
            self.requests.next_request()

    def previous_request(self) -> None:
        if self.requests is not None and self.tabs.currentWidget() is self.requests:
            self.requests.previous_request()

    def watch_claim(self) -> None:
        self._on_requests("watch_claim")

    def plan_batch(self) -> None:
        self._on_requests("plan_batch")

    def show_glossary(self) -> None:
        from dpdesk.gui.widgets.glossary import GlossaryDialog

        GlossaryDialog(self).show()

    def choose_project(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Open project", "", "dpdesk projects (*.dpdesk);;All files (*)"
        )
        if path:
            self.open_project(path)

    def open_demo(self) -> None:
        from dpdesk.appdata.demo import demo_project

        folder = self.demo_folder
        self.close_project()  # the demo open here may be the untouched copy to reopen
        self.start.status.setText("Opening the demo…")
        self.start.demo_btn.setEnabled(False)

        def done(found: tuple[Path, bool]) -> None:
            path, reused = found
            self.start.demo_btn.setEnabled(True)
            self.start.status.setText(
                f"Demo project {'reopened (still untouched)' if reused else 'created'} at {path}"
            )
            self.open_project(str(path))

        def failed(exc: BaseException, trace: str) -> None:
            self.start.demo_btn.setEnabled(True)
            self.start.status.setText("")
            dialogs.report_exception(exc, trace, parent=self)

        self.runner.start(lambda _st: demo_project(folder), done, failed, label="opening the demo")

    def open_project(self, path: str) -> bool:
        from dpdesk.gui.pages.audit_page import AuditPage
        from dpdesk.gui.pages.requests_page import RequestsPage
        from dpdesk.gui.runtime.session import ProjectSession

        if self._closing_session is not None and self._closing_session.path.resolve() == Path(path).resolve():
            self._finish_closing()  # its cache is still being written: skip that, the file is opened again
        self.close_project()
        try:
            session = ProjectSession(path, self)
        except Exception as exc:
            dialogs.report_exception(exc, parent=self)
            return False
        self.session = session
        self.requests = RequestsPage(session)
        self.audit = AuditPage(session)
        self._replace(2, self.requests, "Requests")
        self._replace(3, self.audit, "Audit")
        self.data.set_session(session)
        ev = session.state.events  # the remaining budget moves with the ledger
        subscribe(self, (ev.entry_appended, ev.loaded), lambda *_: self._update_status())
        self._update_status()
        self.setWindowTitle(f"dpdesk — {session.name} ({session.path})")
        self._remember(str(Path(path).resolve()))
        self._restore_layout()
        self.show_page("requests")
        update_actions(self.menu_actions, True)
        # a long ledger is read on a worker; the pages show that they wait and redraw when it arrives
        session.start_loading(lambda exc, trace: dialogs.report_exception(exc, trace, parent=self))
        return True

    def _replace(self, index: int, widget: QWidget, title: str) -> None:
        old = self.tabs.widget(index)
        current = self.tabs.currentIndex()
        self.tabs.removeTab(index)
        self.tabs.insertTab(index, widget, title)
        self.tabs.setCurrentIndex(current)
        if old is not None:
            old.deleteLater()

    def close_project(self) -> None:
        if self.session is None:
            return
        self._save_layout()
        for page in (self.requests, self.audit):
            if page is not None:  # every runner of the page (assessment, release, free answers) stops
                for runner in page.findChildren(TaskRunner):
                    runner.shutdown()
        self.data.runner.cancel()
        self.data.set_session(None)
        self._replace(2, _placeholder("Open a project to work through its requests."), "Requests")
        self._replace(3, _placeholder("Open a project to audit its ledger."), "Audit")
        self.requests = self.audit = None
        session, self.session = self.session, None
        job = session.cache_job()
        if job is None:
            session.close()
        else:
            self._finish_closing()  # one cache write at a time (an earlier project's, if still under way, is skipped)
            self._closing_session = session
            self.closing.start(
                job,
                lambda _written: self._closed(),
                lambda _exc, _trace: self._closed(),
                label=f"saving {session.name}'s ledger view cache (the next opening reads it "
                "instead of replaying the ledger)",
            )
        self.budget_label.setText("")
        self.setWindowTitle("dpdesk")
        update_actions(self.menu_actions, False)

    def _closed(self) -> None:
        """The cache write ended (written, skipped or failed: it is optional): close its project now."""
        session, self._closing_session = self._closing_session, None
        if session is not None:
            session.close(save_cache=False)  # never again on the GUI thread
        if self._quit_when_closed:
            self.close()

    def _finish_closing(self) -> None:
        """Skip a cache write under way: stop its worker, wait for it, and close its project now."""
        if self._closing_session is None:
            return
        self.closing.runner.shutdown(
            timeout_ms=120000
        )  # the worker stops at its next check (≈ 64 ledger rows)
        quit_after, self._quit_when_closed = self._quit_when_closed, False
        self._closed()
        self._quit_when_closed = quit_after

    def _update_status(self) -> None:
        if self.session is None:
            return
        if not self.session.loaded:
            self.budget_label.setText(f"{self.session.name} · reading the ledger…")
            return
        b = self.session.budget()
        self.budget_label.setText(f"{self.session.name} · remaining budget {b.remaining:.4g} of {b.total:g}")

    # -- layout persistence --------------------------------------------------------------------
    def _save_layout(self) -> None:
        s = self.settings
        s.setValue("window/geometry", self.saveGeometry())
        s.setValue("window/page", self.tabs.currentIndex())
        if self.requests is not None:
            s.setValue("requests/splitter", self.requests.splitter.saveState())
            s.setValue("requests/right", self.requests.right_splitter.saveState())
            s.setValue("requests/method", self.requests.answer.method.currentText())
        s.setValue("data/splitter", self.data.splitter.saveState())

    def _restore_layout(self) -> None:
        s = self.settings
        for key, splitter in (
            ("requests/splitter", self.requests.splitter if self.requests else None),
            ("requests/right", self.requests.right_splitter if self.requests else None),
            ("data/splitter", self.data.splitter),
        ):
            state = s.value(key)
            if splitter is not None and isinstance(state, QByteArray):
                splitter.restoreState(state)
        method = s.value("requests/method")
        if self.requests is not None and method in POSTERIOR_METHODS:
            self.requests.answer.method.setCurrentText(str(method))

    def closeEvent(self, event: QCloseEvent) -> None:
        if (
            self.closing.is_running()
        ):  # asked again while the cache is written: skip it (the window closes then)
            if self._quit_when_closed:
                self.closing.stop()
            self._quit_when_closed = True
            event.ignore()
            return
        self._save_layout()
        self.settings.sync()
        self.runner.shutdown()
        self.data.runner.shutdown()
        self.close_project()
        if self.closing.is_running():  # finish writing the cache first, with its progress and Skip
            self._quit_when_closed = True
            event.ignore()
            return
        super().closeEvent(event)
