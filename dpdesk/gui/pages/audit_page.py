"""The Audit page: the ledger (filter, sort, details), system cost over time, verify, export.

The cost curve is the per-cell costs of paper Thm 5.4 replayed over the ledger (via the session);
*Verify integrity* runs the store's verifier; export writes the self-contained HTML report (plots
embedded as PNG) and a CSV of the ledger. The three run on workers (:mod:`dpdesk.store.audit_export`
through a sibling connection), each on its own :class:`~dpdesk.gui.runtime.task_line.TaskLine` — progress and a
Cancel button — so they never stop one another nor the page's table read; the report's plots are drawn
here first (widgets belong to the GUI thread). A cancelled export leaves no file (written whole or not
at all); the ledger is only read.
"""

from __future__ import annotations

import json
from typing import Any

from PySide6.QtCore import QBuffer, QIODevice, Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTableView,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from dpdesk.engine.errors import Cancelled, DpdeskError
from dpdesk.gui import dialogs
from dpdesk.gui.pages.ledger_table import (
    PEOPLE_HEADERS,
    REPORT_PLOT_SIZE,
    RESIZE_ROWS,
    SHOWN_ITEMS,
    KindFilter,
    LedgerTable,
    draw_cost_curve,
    ledger_table,
    shorten,
    shortened,
)
from dpdesk.gui.runtime.redraw import subscribe
from dpdesk.gui.runtime.session import ProjectSession
from dpdesk.gui.runtime.task_line import TaskLine
from dpdesk.gui.runtime.tasks import TaskRunner
from dpdesk.gui.widgets.models import LEDGER_HEADERS, RowsModel, plural, query_summary
from dpdesk.gui.widgets.plots import pg
from dpdesk.store import audit_export
from dpdesk.store.ledger import thaw


def choose_folder(parent: QWidget, title: str) -> str:
    """Folder chooser (a hook tests replace)."""
    return QFileDialog.getExistingDirectory(parent, title)


def save_file_name(parent: QWidget, title: str, default: str, filters: str) -> str:
    """File chooser for exports (a hook tests replace)."""
    return QFileDialog.getSaveFileName(parent, title, default, filters)[0]


def widget_png(widget: QWidget) -> bytes:
    buf = QBuffer()
    buf.open(QIODevice.OpenModeFlag.WriteOnly)
    widget.grab().save(buf, "PNG")
    return bytes(buf.data())


class AuditPage(QWidget):
    """Ledger browser and integrity tools for a :class:`ProjectSession`."""

    def __init__(self, session: ProjectSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.selected = None  # the ledger entry shown in the details
        lay = QVBoxLayout(self)
        lay.addLayout(self._bar())
        # one line (and runner) per kind of work: an export never cancels the other, a check or the table read
        self.verify_task, self.csv_task, self.html_task = TaskLine(), TaskLine(), TaskLine()
        for line in (self.verify_task, self.csv_task, self.html_task):
            lay.addWidget(line)
        self.note = QLabel("")  # how the last export or check ended when there is no dialog to say it
        self.note.setWordWrap(True)
        self.note.setVisible(False)
        lay.addWidget(self.note)
        self.verdict = QLabel("")
        self.verdict.setWordWrap(True)
        lay.addWidget(self.verdict)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self._tables())
        split.addWidget(self._cost_plot())
        split.setSizes([420, 260])
        lay.addWidget(split, 1)
        self.search.textChanged.connect(self.proxy.setFilterFixedString)
        self.kind.currentTextChanged.connect(self._kind)
        self.table.selectionModel().currentRowChanged.connect(lambda cur, _p: self._show(cur))
        for btn, slot in (
            (self.verify_btn, self.verify_later),
            (self.html_btn, self.export_html),
            (self.csv_btn, self.export_csv),
            (self.table_btn, self.export_release_table),
            (self.synthetic_btn, self.export_synthetic),
            (self.letters_btn, self.export_letters),
        ):
            btn.clicked.connect(slot)
        self.table.horizontalHeader().setResizeContentsPrecision(
            RESIZE_ROWS
        )  # not every row of a long ledger
        self.runner = TaskRunner(self)  # builds a large project's table off the GUI thread
        self._stale = False
        ev = session.state.events  # the ledger table, requesters and curve move with the ledger only
        subscribe(self, (ev.entry_appended, ev.loaded), lambda *_: self.reload())
        self.curve: list[tuple[int, float]] = []
        self.reload()

    def _bar(self) -> QHBoxLayout:
        """Search, the kind filter, verify and the exports."""
        from dpdesk.store.ledger import kinds

        bar = QHBoxLayout()
        self.search = QLineEdit()
        self.search.setPlaceholderText("Filter: request id, query text, kind…")
        self.kind = QComboBox()
        self.kind.addItems(["all", *kinds()])
        self.verify_btn = QPushButton("Verify integrity")
        self.html_btn = QPushButton("Export HTML report…")
        self.csv_btn = QPushButton("Export CSV…")
        self.table_btn = QPushButton("Export release table…")
        self.table_btn.setToolTip(
            "The selected partition release as the count table a data user downloads (CSV or Parquet)"
        )
        self.table_btn.setEnabled(False)
        self.synthetic_btn = QPushButton("Export synthetic table…")
        self.synthetic_btn.setToolTip(
            "A maximum-entropy synthetic table drawn from the released answers only "
            "(free: post-processing, recorded in the ledger)"
        )
        self.synthetic_dialog: Any = None
        self.letters_btn = QPushButton("Reply letters…")
        self.letters_btn.setToolTip(
            "Write one letter per requester (text and HTML): each query, the released value, "
            "its interval and confidence, the ledger witness"
        )
        for w in (self.search, self.kind, self.verify_btn, self.html_btn, self.csv_btn):
            bar.addWidget(w)
        for w in (self.table_btn, self.synthetic_btn, self.letters_btn):
            bar.addWidget(w)
        return bar

    def _tables(self) -> QSplitter:
        """The ledger table beside an entry's details and the requesters' accounts."""
        top = QSplitter(Qt.Orientation.Horizontal)
        self.model = RowsModel(LEDGER_HEADERS, self)
        self.proxy = KindFilter()
        self.proxy.setSourceModel(self.model)
        self.table = QTableView()
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(0, Qt.SortOrder.AscendingOrder)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setStretchLastSection(True)
        top.addWidget(self.table)
        self.details = QPlainTextEdit()
        self.details.setReadOnly(True)
        self.details.setPlaceholderText("Select a ledger entry to see all its fields.")
        self.side = QTabWidget()
        self.side.addTab(self.details, "Entry")
        people = QWidget()
        pl = QVBoxLayout(people)
        pl.setContentsMargins(0, 0, 0, 0)
        self.people_model = RowsModel(PEOPLE_HEADERS, self)
        self.people = QTableView()
        self.people.setModel(self.people_model)
        self.people.verticalHeader().setVisible(False)
        self.people.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.people.horizontalHeader().setStretchLastSection(True)
        pl.addWidget(self.people, 1)
        self.side.addTab(people, "By requester")
        top.addWidget(self.side)
        top.setSizes([800, 400])
        return top

    def _cost_plot(self) -> pg.PlotWidget:
        self.plot = pg.PlotWidget(background="w")
        self.plot.setLabel("bottom", "ledger entry")
        self.plot.setLabel("left", "system cost (max over cells)")
        self.plot.showGrid(x=True, y=True, alpha=0.2)
        self.plot.setMinimumHeight(160)
        return self.plot

    def _kind(self, kind: str) -> None:
        if hasattr(self.proxy, "beginFilterChange"):  # Qt ≥ 6.9; invalidateFilter is deprecated there
            self.proxy.beginFilterChange()
            self.proxy.kind = kind
            self.proxy.endFilterChange()
        else:
            self.proxy.kind = kind
            self.proxy.invalidate()

    def reload(self) -> None:
        """Rebuild the ledger table, the requesters and the cost curve (a large project's on a worker, and
        only while the page is shown: it is read when the curator opens it)."""
        s = self.session
        if not s.loaded or (s.large and not self.isVisible()):
            self._stale = True
            self.verdict.setText("Reading the ledger…" if s.loaded and self.isVisible() else "")
            return
        self._stale = False
        if s.large:
            self.verdict.setText(f"Reading the ledger table ({plural(s.head()[0], 'entry', 'entries')})…")
        s.run(self.runner, ledger_table, self._show_table, label="reading the ledger table")

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self._stale:
            self.reload()
        elif not getattr(self, "_curve_drawn", True):
            self._draw_curve()

    def _show_table(self, t: LedgerTable) -> None:
        if self.session.large:
            self.verdict.setText("")
        fit = self.model.rowCount() == 0  # columns fit the first rows shown; later reloads keep the widths
        self.model.set_rows(t.rows, t.entries)
        self.people_model.set_rows(
            [(a.requester or "(anonymous)", a.answered, a.rejected, a.pending, a.alpha) for a in t.accounts],
            t.accounts,
        )
        if fit:
            self.people.resizeColumnsToContents()
            self.table.resizeColumnsToContents()
        else:  # an entry of a new kind ('rejected', 'unwatch') widens its column, never narrows it
            k = LEDGER_HEADERS.index("kind")
            width = self.table.columnWidth(k)
            self.table.resizeColumnToContents(k)
            self.table.setColumnWidth(k, max(width, self.table.columnWidth(k)))
        self.curve = t.curve
        self._curve_drawn = False
        if self.isVisible():  # a hidden page draws its curve when it is shown
            self._draw_curve()

    def _draw_curve(self) -> None:
        draw_cost_curve(self.plot, self.curve, self.session.total_budget, self.session.accounting)
        self._curve_drawn = True

    def _show(self, proxy_index) -> None:
        self.selected = None
        self.table_btn.setEnabled(False)
        if not proxy_index.isValid():
            self.details.setPlainText("")
            return
        entry = self.selected = self.model.payload(self.proxy.mapToSource(proxy_index).row())
        self.table_btn.setEnabled(entry.kind == "partition")
        head = ""
        if "query" in entry.payload:
            head = f"query: {query_summary(entry.payload, self.session.schema)}\n"
        if (
            entry.released is not None
        ):  # the figure shown everywhere; the recorded payload below keeps it exact
            head += f"released (as shown): {entry.stated()}\n"
        shown = shorten(json.loads(json.dumps(shortened(entry.to_json()), default=thaw)))
        body = json.dumps(shown, indent=2, ensure_ascii=False)
        self.details.setPlainText(
            f"{head}(lists over {SHOWN_ITEMS} items shortened here; the CSV and the report "
            f"hold them in full)\n{body}"
        )

    def verify(self):
        """Check the project's integrity here, on the GUI thread (quick on a short ledger; the button uses
        :meth:`verify_later`)."""
        return self._show_verdict(self.session.verify())

    def verify_later(self) -> None:
        """*Verify integrity* on a worker (a long ledger's replay takes minutes), with progress and Cancel."""
        if self.verify_task.is_running():
            return
        job = self.session.state.verify_job()
        self.verify_btn.setEnabled(False)
        self._say("")
        self.verify_task.start(
            job,
            self._show_verdict,
            self._failed("The integrity check", self.verify_btn),
            label="checking the ledger's integrity",
        )

    def _failed(self, what: str, button: QPushButton):
        def failed(exc: BaseException, trace: str) -> None:
            button.setEnabled(True)
            if isinstance(exc, Cancelled):
                self._say(f"{what} was cancelled; nothing was written.")
            else:
                self._say(f"{what} failed; nothing was written.")
                dialogs.report_exception(exc, trace, parent=self)

        return failed

    def _say(self, text: str) -> None:
        self.note.setText(text)
        self.note.setVisible(bool(text))

    def exporting(self) -> bool:
        """Whether an export or a check is still running."""
        return any(t.is_running() for t in (self.verify_task, self.csv_task, self.html_task))

    def _show_verdict(self, report):
        self.verify_btn.setEnabled(True)
        if report.ok:
            self.verdict.setText(
                f"✓ Integrity verified: {report.entries} entries, hash chain intact, "
                + (
                    f"budget recomputed ({report.system_cost:.6g} of {report.total_budget:g})."
                    if report.accounting is None
                    else f"budget recomputed (ε = {report.epsilon_spent:.6g} of {report.accounting.epsilon:g} "
                    f"at δ = {report.accounting.delta:g}; largest cell's ρ {report.system_cost:.6g})."
                )
            )
            self.verdict.setStyleSheet("color: #237a36; font-weight: bold;")
        else:
            self.verdict.setText("✗ Integrity check failed: " + "; ".join(report.problems))
            self.verdict.setStyleSheet("color: #a8321f; font-weight: bold;")
        return report

    def report_images(self) -> dict[str, bytes]:
        """The report's plots as PNG, drawn here (widgets belong to the GUI thread) at a fixed size."""
        from dpdesk.gui.panels.budget_panel import BudgetPanel

        s = self.session
        heat = BudgetPanel(s)
        heat.resize(960, 640)
        big = pg.PlotWidget(background="w")  # drawn at a fixed size: readable whatever the window's size
        draw_cost_curve(big, self.curve, s.total_budget, s.accounting)
        big.resize(*REPORT_PLOT_SIZE)
        curve_png = widget_png(big)
        big.deleteLater()
        images = {
            "System cost over the ledger": curve_png,
            "Per-cell privacy cost (max over the other attributes)": widget_png(heat.heatmap),
        }
        heat.deleteLater()
        return images

    def report_html(self) -> str:
        """The audit report, built here on the GUI thread (the export button builds it on a worker)."""
        return self.session.state.report_html(self.report_images())

    def export_html(self) -> None:
        """Write the audit report on a worker (its integrity check replays the ledger), with progress and Cancel."""
        if self.html_task.is_running():
            return
        path = save_file_name(
            self, "Export audit report", f"{self.session.path.stem}-audit.html", "HTML (*.html)"
        )
        if not path:
            return
        job = self.session.state.report_job(path, self.report_images())

        def done(report) -> None:
            self.html_btn.setEnabled(True)
            self._show_verdict(report)  # the report states the same check
            cells = audit_export.cells_file_for(path)
            beside = f" and its per-cell table to {cells.name}" if cells.exists() else ""
            dialogs.show_info(self, "Report exported", f"Wrote the audit report to {path}{beside}.")

        self.html_btn.setEnabled(False)
        self._say("")
        self.html_task.start(
            job,
            done,
            self._failed("The report export", self.html_btn),
            label=f"writing the audit report (checking the ledger first) to {path}",
        )

    def export_release_table(self) -> None:
        """Write the selected partition release as a count table (unclipped: what inference must use)."""
        from dpdesk.store.release_table import partition_release, write_table

        entry = self.selected
        if entry is None or entry.kind != "partition":
            return
        path = save_file_name(
            self,
            "Export release table",
            f"{self.session.path.stem}-release-{entry.seq}.csv",
            "CSV (*.csv);;Parquet (*.parquet)",
        )
        if not path:
            return
        try:
            table = write_table(partition_release(self.session.view(), entry.seq), path)
        except Exception as exc:
            dialogs.report_exception(exc, parent=self)
            return
        dialogs.show_info(
            self,
            "Release table exported",
            f"Wrote {len(table):,} noisy counts of release #{entry.seq} to {path}.",
        )

    def export_synthetic(self) -> None:
        """Open the synthetic-table dialog (one at a time), priced on the ledger of the moment it previews."""
        from dpdesk.gui.kinds.synthetic_dialog import SyntheticDialog

        if self.synthetic_dialog is not None and self.synthetic_dialog.isVisible():
            self.synthetic_dialog.raise_()
            return
        s = self.session
        self.synthetic_dialog = SyntheticDialog(
            s.schema,
            s.state.synthetic_inputs,
            default_path=str(s.path.with_name(f"{s.path.stem}-synthetic.csv")),
            release_job=s.release_job,
            released=s.released,
            choose_file=lambda *a: save_file_name(*a),
            parent=self,
        )  # looked up when used: the hook tests replace
        self.synthetic_dialog.show()

    def export_csv(self) -> None:
        """Write the ledger CSV on a worker, with progress and Cancel."""
        if self.csv_task.is_running():
            return
        path = save_file_name(
            self, "Export ledger CSV", f"{self.session.path.stem}-ledger.csv", "CSV (*.csv)"
        )
        if not path:
            return
        job = self.session.state.csv_job(path)

        def done(entries: int) -> None:
            self.csv_btn.setEnabled(True)
            dialogs.show_info(
                self,
                "Ledger exported",
                f"Wrote {plural(entries, 'ledger entry', 'ledger entries')} to {path}.",
            )

        self.csv_btn.setEnabled(False)
        self._say("")
        self.csv_task.start(
            job, done, self._failed("The CSV export", self.csv_btn), label=f"writing the ledger CSV to {path}"
        )

    def export_letters(self) -> None:
        """One reply letter per requester who received something, as .txt and .html in a chosen folder."""
        from dpdesk.store.letters import guarantee_sentence, write_letters

        folder = choose_folder(self, "Folder for the reply letters")
        if not folder:
            return
        try:
            written = write_letters(
                folder,
                self.session.accounts(),
                self.session.name,
                guarantee_sentence(self.session.accounting),
            )
        except (OSError, DpdeskError) as exc:  # a full disk, or a name in the folder that is not a file
            dialogs.report_exception(exc, parent=self)
            return
        people = len(written) // 2
        dialogs.show_info(
            self, "Letters written", f"Wrote {plural(people, 'letter')} (text and HTML) to {folder}."
        )
