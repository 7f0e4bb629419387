"""The Audit page: the ledger (filter, sort, details), system cost over time, verify, export.

The cost curve is the per-cell costs of paper Thm 5.4 replayed over the ledger (via the session);
*Verify integrity* runs the store's verifier; export writes the self-contained HTML report (plots
embedded as PNG) and a CSV of the ledger. The three run on workers (:mod:`dpdesk.store.audit_export`
through a sibling connection), each on its own :class:`~dpdesk.gui.task_line.TaskLine` — progress and a
Cancel button — so they never stop one another nor the page's table read; the report's plots are drawn
here first (widgets belong to the GUI thread). A cancelled export leaves no file (written whole or not
at all); the ledger is only read.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from PySide6.QtCore import QBuffer, QIODevice, QSortFilterProxyModel, Qt
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
from dpdesk.gui.models import LEDGER_HEADERS, RowsModel, ledger_rows, plural, query_summary
from dpdesk.gui.plots import pg
from dpdesk.gui.session import ProjectSession
from dpdesk.gui.task_line import TaskLine
from dpdesk.gui.tasks import TaskRunner
from dpdesk.store import audit_export
from dpdesk.store.ledger import thaw
from dpdesk.store.requesters import accounts, requester_of


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


DETAIL_VALUES = 24  # released values shown in an entry's details (a partition release may hold millions)


def _shortened(obj: dict) -> dict:
    """The entry for display: a long list of released values cut to its first :data:`DETAIL_VALUES`."""
    payload = dict(obj.get("payload", {}))
    values = thaw(payload.get("values", ()))
    flat = [v for g in values for v in (g if isinstance(g, list) else [g])]
    if len(flat) > DETAIL_VALUES:
        payload["values"] = (
            f"{len(flat):,} values: {', '.join(map(str, flat[:DETAIL_VALUES]))}, … (export the table)"
        )
        return {**obj, "payload": payload}
    return obj


class _Proxy(QSortFilterProxyModel):
    def __init__(self) -> None:
        super().__init__()
        self.kind = "all"
        self.setSortRole(Qt.ItemDataRole.UserRole)
        self.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.setFilterKeyColumn(-1)

    def filterAcceptsRow(self, row: int, parent) -> bool:
        if self.kind != "all":
            if self.sourceModel().index(row, 2, parent).data() != self.kind:
                return False
        return super().filterAcceptsRow(row, parent)


def staircase(curve: list[tuple[int, float]]) -> tuple[np.ndarray, np.ndarray]:
    """The cost after each ledger entry as a step line that holds its last level (never drops to 0)."""
    if not curve:
        return np.zeros(1), np.zeros(1)
    xs, ys = [], []
    for (x, y), (x_next, _) in zip(curve, [*curve[1:], (curve[-1][0] + 0.5, None)]):
        xs += [x, x_next]
        ys += [y, y]
    return np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)


def draw_cost_curve(plot: pg.PlotWidget, curve: list[tuple[int, float]], total: float) -> None:
    """System cost after each ledger entry as a held step line, with the total budget marked."""
    plot.clear()
    plot.setLabel("bottom", "ledger entry")
    plot.setLabel("left", "system cost (max over cells)")
    plot.showGrid(x=True, y=True, alpha=0.2)
    xs, ys = staircase(curve)
    plot.addItem(
        pg.PlotDataItem(xs, ys, pen=pg.mkPen("#1f5fa8", width=2), fillLevel=0, brush=(31, 95, 168, 40))
    )
    last = int(curve[-1][0]) if curve else 1
    # ledger entries are whole numbers: integer ticks, about ten of them
    plot.getAxis("bottom").setTickSpacing(max(1, math.ceil(last / 10)), 1)
    plot.setXRange(0, max(last, 1) + 0.5, padding=0.02)
    plot.addItem(
        pg.InfiniteLine(
            pos=total,
            angle=0,
            pen=pg.mkPen("#c0392b", width=1.5, style=Qt.PenStyle.DashLine),
            label=f"total budget {total:g}",
            labelOpts={"position": 0.1, "color": "#c0392b"},
        )
    )
    plot.setYRange(0, total * 1.08)


SHOWN_ITEMS = 12
RESIZE_ROWS = 200  # columns fit the first rows' contents (measuring thousands of rows stalls the window)


@dataclass(frozen=True)
class LedgerTable:
    """What the page shows of a ledger, read in one go (worker-thread safe: no Qt)."""

    entries: list[Any]
    rows: list[tuple]
    accounts: list[Any]
    curve: list[tuple[int, float]]


def ledger_table(project: Any) -> LedgerTable:
    """The ledger table's rows, the requesters' accounts and the cost curve of ``project`` (a Project)."""
    view, reqs, schema = project.view(), project.requests(), project.schema
    entries = list(view.entries)
    return LedgerTable(
        entries,
        ledger_rows(entries, schema, requester_of(reqs)),
        accounts(entries, reqs, describe=lambda r: r.describe(schema), schema=schema),
        view.cost_curve(),
    )


REPORT_PLOT_SIZE = (960, 420)
PEOPLE_HEADERS = ("requester", "answered", "rejected", "pending", "α spent")


def _shorten(obj: Any) -> Any:
    """``obj`` with every list longer than SHOWN_ITEMS cut to its first items and a count."""
    if isinstance(obj, dict):
        return {k: _shorten(v) for k, v in obj.items()}
    if isinstance(obj, list):
        items = [_shorten(v) for v in obj[:SHOWN_ITEMS]]
        return (
            items + [f"… {len(obj) - SHOWN_ITEMS} more ({len(obj)} in all)"]
            if len(obj) > SHOWN_ITEMS
            else items
        )
    return obj


class AuditPage(QWidget):
    """Ledger browser and integrity tools for a :class:`ProjectSession`."""

    def __init__(self, session: ProjectSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.selected = None  # the ledger entry shown in the details
        lay = QVBoxLayout(self)
        bar = QHBoxLayout()
        self.search = QLineEdit()
        self.search.setPlaceholderText("Filter: request id, query text, kind…")
        self.kind = QComboBox()
        from dpdesk.store.ledger import kinds

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
        for w in (
            self.search,
            self.kind,
            self.verify_btn,
            self.html_btn,
            self.csv_btn,
            self.table_btn,
            self.synthetic_btn,
            self.letters_btn,
        ):
            bar.addWidget(w)
        lay.addLayout(bar)
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
        top = QSplitter(Qt.Orientation.Horizontal)
        self.model = RowsModel(LEDGER_HEADERS, self)
        self.proxy = _Proxy()
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
        split.addWidget(top)
        self.plot = pg.PlotWidget(background="w")
        self.plot.setLabel("bottom", "ledger entry")
        self.plot.setLabel("left", "system cost (max over cells)")
        self.plot.showGrid(x=True, y=True, alpha=0.2)
        self.plot.setMinimumHeight(160)
        split.addWidget(self.plot)
        split.setSizes([420, 260])
        lay.addWidget(split, 1)
        self.search.textChanged.connect(self.proxy.setFilterFixedString)
        self.kind.currentTextChanged.connect(self._kind)
        self.table.selectionModel().currentRowChanged.connect(lambda cur, _p: self._show(cur))
        self.verify_btn.clicked.connect(self.verify_later)
        self.html_btn.clicked.connect(self.export_html)
        self.csv_btn.clicked.connect(self.export_csv)
        self.table_btn.clicked.connect(self.export_release_table)
        self.synthetic_btn.clicked.connect(self.export_synthetic)
        self.letters_btn.clicked.connect(self.export_letters)
        self.table.horizontalHeader().setResizeContentsPrecision(
            RESIZE_ROWS
        )  # not every row of a long ledger
        self.runner = TaskRunner(self)  # builds a large project's table off the GUI thread
        self._stale = False
        session.sigChanged.connect(self.reload)
        self.curve: list[tuple[int, float]] = []
        self.reload()

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
            self.verdict.setText(
                f"Reading the ledger table ({plural(s.project.head()[0], 'entry', 'entries')})…"
            )
        s.run(self.runner, ledger_table, self._show_table, label="reading the ledger table")

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self._stale:
            self.reload()

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
        self.curve = t.curve
        draw_cost_curve(self.plot, self.curve, self.session.total_budget)

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
        shown = _shorten(json.loads(json.dumps(_shortened(entry.to_json()), default=thaw)))
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
        project = self.session.project

        def job(state) -> Any:
            with project.sibling() as sibling:
                return sibling.verify(progress=state.progress, cancelled=state.cancelled)

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
                f"budget recomputed ({report.system_cost:.6g} of {report.total_budget:g})."
            )
            self.verdict.setStyleSheet("color: #237a36; font-weight: bold;")
        else:
            self.verdict.setText("✗ Integrity check failed: " + "; ".join(report.problems))
            self.verdict.setStyleSheet("color: #a8321f; font-weight: bold;")
        return report

    def report_images(self) -> dict[str, bytes]:
        """The report's plots as PNG, drawn here (widgets belong to the GUI thread) at a fixed size."""
        from dpdesk.gui.budget_panel import BudgetPanel

        s = self.session
        heat = BudgetPanel(s)
        heat.resize(960, 640)
        big = pg.PlotWidget(background="w")  # drawn at a fixed size: readable whatever the window's size
        draw_cost_curve(big, self.curve, s.total_budget)
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
        return audit_export.report_html(self.session.project, self.report_images())[0]

    def export_html(self) -> None:
        """Write the audit report on a worker (its integrity check replays the ledger), with progress and Cancel."""
        if self.html_task.is_running():
            return
        path = save_file_name(
            self, "Export audit report", f"{self.session.path.stem}-audit.html", "HTML (*.html)"
        )
        if not path:
            return
        images, project = self.report_images(), self.session.project

        def job(state) -> Any:
            with project.sibling() as sibling:
                return audit_export.export_report(
                    sibling, path, images, progress=state.progress, cancelled=state.cancelled
                )

        def done(report) -> None:
            self.html_btn.setEnabled(True)
            self._show_verdict(report)  # the report states the same check
            dialogs.show_info(self, "Report exported", f"Wrote the audit report to {path}.")

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
        from dpdesk.gui.synthetic_dialog import SyntheticDialog
        from dpdesk.store.estimating import ledger_inputs

        if self.synthetic_dialog is not None and self.synthetic_dialog.isVisible():
            self.synthetic_dialog.raise_()
            return
        s = self.session
        self.synthetic_dialog = SyntheticDialog(
            s.schema,
            lambda: ledger_inputs(s.project)[0],
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
        project = self.session.project

        def job(state) -> int:
            with project.sibling() as sibling:
                return audit_export.export_csv(
                    sibling, path, progress=state.progress, cancelled=state.cancelled
                )

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
        from dpdesk.store.letters import write_letters

        folder = choose_folder(self, "Folder for the reply letters")
        if not folder:
            return
        try:
            written = write_letters(folder, self.session.accounts(), self.session.name)
        except (OSError, DpdeskError) as exc:  # a full disk, or a name in the folder that is not a file
            dialogs.report_exception(exc, parent=self)
            return
        people = len(written) // 2
        dialogs.show_info(
            self, "Letters written", f"Wrote {plural(people, 'letter')} (text and HTML) to {folder}."
        )
