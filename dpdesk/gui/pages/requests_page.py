"""The Requests page: the queue on the left, the answer panel and the budget panel on the right.

The queue shows every request with its status, filtered by status, searched by any column and sorted
by clicking a header; Import reads a JSON or CSV file through the store; New request opens the query
builder; Edit and Delete change a pending request only; Posterior of proportions opens its dialog (a
Dirichlet posterior released through the same release path). Keyboard: Ctrl+Down / Ctrl+Up select the next / previous
request, Ctrl+I releases an inferred answer, Ctrl+Shift+S spends and releases, Ctrl+Shift+R rejects.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QItemSelectionModel, QSortFilterProxyModel, Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFileDialog,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QSplitter,
    QTableView,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from dpdesk.gui import dialogs
from dpdesk.gui.dialogs.query_builder import QueryBuilderDialog
from dpdesk.gui.pages import queue_actions
from dpdesk.gui.panels.answer_panel import AnswerPanel
from dpdesk.gui.panels.budget_panel import BudgetPanel
from dpdesk.gui.panels.claims_panel import ClaimsPanel
from dpdesk.gui.runtime.redraw import subscribe
from dpdesk.gui.runtime.session import ProjectSession
from dpdesk.gui.runtime.tasks import TaskRunner
from dpdesk.gui.widgets.models import REQUEST_HEADERS, QueueRows, RowsModel, plural, queue_rows
from dpdesk.store import STATUSES
from dpdesk.store.errors import RequestStateError


def open_file_name(parent: QWidget, title: str, filters: str) -> str:
    """File chooser (a hook tests replace)."""
    return QFileDialog.getOpenFileName(parent, title, "", filters)[0]


QUEUE_MIN_WIDTH = 300
RESIZE_ROWS = 200  # columns fit the first rows' contents (measuring thousands of rows stalls the window)


def _scrolling(panel: QWidget) -> QScrollArea:
    area = QScrollArea()
    area.setWidgetResizable(True)
    area.setFrameShape(QFrame.Shape.NoFrame)
    area.setWidget(panel)
    return area


class RequestsPage(QWidget):
    """Queue + answer panel + budget panel for one :class:`ProjectSession`."""

    def __init__(self, session: ProjectSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setObjectName("requestsSplitter")
        left = self._queue_side()
        self.splitter.addWidget(left)
        self.splitter.addWidget(self._answer_side(session))
        self.splitter.setChildrenCollapsible(False)
        left.setMinimumWidth(QUEUE_MIN_WIDTH)
        self.splitter.setStretchFactor(0, 2)
        self.splitter.setStretchFactor(1, 3)
        self.splitter.setSizes([400, 600])
        lay = QVBoxLayout(self)
        lay.addWidget(self.splitter)
        self.answer.sigAssessed.connect(self.budget.set_assessment)
        self.table.selectionModel().currentRowChanged.connect(lambda cur, _prev: self._selected(cur.row()))
        ev = (
            session.state.events
        )  # the queue redraws on its own changes; the answer on history's and settings'
        subscribe(self, (ev.queue_changed,), self._queue_changed)
        subscribe(self, (ev.entry_appended,), self._entries_appended)
        subscribe(self, (ev.settings_changed, ev.claims_changed), lambda *_: self._history_moved(()))
        subscribe(self, (ev.loaded,), lambda *_: self.reload())
        # the keyboard shortcuts (Ctrl+I, Ctrl+Shift+S, Ctrl+Shift+R, Ctrl+Down, Ctrl+Up) are the Release
        # menu's actions (gui/app/menus.py), so the menu shows them
        self.reload()

    def _queue_side(self) -> QWidget:
        """The queue: filter, search, the action buttons, the table, the counts."""
        left = QWidget()
        ll = QVBoxLayout(left)
        ll.setContentsMargins(0, 0, 0, 0)
        ll.addLayout(self._search_bar())
        ll.addLayout(self._actions())
        self.model = RowsModel(REQUEST_HEADERS, self)
        self.statuses: dict[str, str] = {}  # request id → status, of the queue as last read
        self.rows_runner = TaskRunner(self)  # reads a large project's queue off the GUI thread
        ll.addWidget(self._table(), 1)
        self.counts = QLabel("")
        ll.addWidget(self.counts)
        return left

    def _search_bar(self) -> QHBoxLayout:
        bar = QHBoxLayout()
        self.filter = QComboBox()
        self.filter.addItems(["all", *STATUSES])
        self.filter.currentTextChanged.connect(lambda _t: self.reload())
        bar.addWidget(QLabel("show"))
        bar.addWidget(self.filter)
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search id, requester, query…")
        self.search.setClearButtonEnabled(True)
        self.search.textChanged.connect(self._search)
        bar.addWidget(self.search, 1)
        return bar

    def _button(self, text: str, slot: Callable[[], Any], tip: str = "") -> QPushButton:
        btn = QPushButton(text)
        if tip:
            btn.setToolTip(tip)
        btn.clicked.connect(slot)
        return btn

    def _actions(self) -> QGridLayout:
        """The queue's actions, in rows of their own, three buttons each, so the queue stays narrow."""
        self.import_btn = self._button(
            "Import…",
            self.import_file,
            "Queue requests from a JSON list or a CSV with columns query,eps,delta[,requester,id]",
        )
        self.new_btn = self._button("New request…", self.new_request)
        self.posterior_btn = self._button(
            "Posterior of proportions…",
            self.new_posterior,
            "Release the Dirichlet (Beta) posterior of an attribute's shares in a box",
        )
        self.posterior_dialog = None
        self.edit_btn = self._button(
            "Edit…",
            self.edit_request,
            "Change the selected pending request (answered and rejected ones never change)",
        )
        self.delete_btn = self._button(
            "Delete", self.delete_request, "Remove the selected pending request from the queue"
        )
        self.free_btn = self._button(
            "Answer all free",
            self.answer_all_free,
            "Release every pending request that history answers at no cost (each is ledgered)",
        )
        self.free_runner = TaskRunner(self)
        self.offer_btn = self._button(
            "Counter-offer…",
            self.counter_offer,
            "Offer the best answer the remaining budget and the spend policy's cap allow, or the free "
            "answer history gives at a lower confidence; accepting changes the request's terms",
        )
        actions = QGridLayout()
        buttons = (self.import_btn, self.new_btn, self.posterior_btn, self.edit_btn, self.delete_btn)
        for i, w in enumerate((*buttons, self.offer_btn, self.free_btn)):
            actions.addWidget(w, *divmod(i, 3))
        return actions

    def _table(self) -> QTableView:
        # search and sort act on a proxy; rows below are the proxy's (what the curator sees)
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(self.model)
        self.proxy.setFilterKeyColumn(-1)
        self.proxy.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.proxy.setSortRole(Qt.ItemDataRole.UserRole)
        self.table = QTableView()
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.proxy.sort(-1)  # queue order until a header is clicked
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        # several rows can be selected for *Plan batch…*; the current row is the one the answer panel shows
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        self.table.setWordWrap(False)
        self.table.setTabKeyNavigation(False)  # Tab leaves the queue for the next control; arrows move rows
        self.table.horizontalHeader().setResizeContentsPrecision(RESIZE_ROWS)  # not every row of a long queue
        return self.table

    def _answer_side(self, session: ProjectSession) -> QSplitter:
        """The answer panel above, the budget and watched-claims tabs below."""
        right = QSplitter(Qt.Orientation.Vertical)
        right.setObjectName("answerBudgetSplitter")
        self.right_splitter = right
        self.answer = AnswerPanel(session)
        self.budget = BudgetPanel(session)
        self.claims = ClaimsPanel(session)
        # the answer panel scrolls its own evidence; the budget panel scrolls as a whole when short
        right.addWidget(self.answer)
        self.lower = QTabWidget()
        self.lower.setObjectName("budgetClaimsTabs")
        self.lower.addTab(_scrolling(self.budget), "Budget")
        self.lower.addTab(self.claims, "Watched claims")
        right.addWidget(self.lower)
        self.budget.sigWatchCell.connect(self.watch_cell)
        right.setChildrenCollapsible(False)
        right.setSizes([660, 340])  # the answer first; the budget panel scrolls when short
        return right

    # -- what changed ----------------------------------------------------------------------------
    def _queue_changed(self, ids: tuple[str, ...] | None) -> None:
        """Requests added, edited, deleted or decided: the queue is read again; the answer panel shows the
        selected request again when it is one of them (just decided: its outcome, without assessing it
        again)."""
        rid = self.answer.request_id
        if ids is not None and rid in ids and self._decided(rid):
            self.reload(refresh=False)
            self.answer.show_decided()
            return
        self.reload(refresh=ids is None or rid in ids)

    def _decided(self, request_id: str) -> bool:
        """Whether ``request_id`` is still queued and was decided (a deleted one is gone)."""
        try:
            return self.session.request(request_id).status != "pending"
        except RequestStateError:
            return False

    def _entries_appended(self, entries: tuple) -> None:
        """The ledger grew: a pending request selected is assessed against the new history (one the new
        entries decided is shown again when the queue is, on ``queue_changed``)."""
        self._history_moved(tuple(e.request_id for e in entries if e.request_id is not None))

    def _history_moved(self, decided: tuple[str, ...]) -> None:
        rid = self.answer.request_id
        if rid is not None and rid not in decided and self.statuses.get(rid, "pending") == "pending":
            self.answer.refresh()  # same request, new history or settings: assess again

    def watch_claim(self, query: str = "") -> bool:
        """Show the Watched claims tab and ask for a claim (``query`` prefilled)."""
        self.lower.setCurrentWidget(self.claims)
        return self.claims.add_claim(query)

    def watch_cell(self, cell: int) -> bool:
        """The heatmap's "Watch this cell…": a claim about the count of that one cell."""
        schema = self.session.schema
        terms = ", ".join(
            f"{name}={json.dumps(label)}" for name, label in zip(schema.names, schema.cell_labels(cell))
        )
        return self.watch_claim(f"count({terms})")

    def reload(self, refresh: bool = True) -> None:
        """Rebuild the queue (on a worker for a large project: the answer panel does not wait for it);
        ``refresh``: show the selected request in the answer panel again."""
        keep = self.answer.request_id
        if not self.session.loaded:
            self.counts.setText("Reading the ledger…")
            return
        if self.session.large:  # assess now; the list follows when the worker has read it
            rid = keep or self.session.first_pending
            if rid is not None and rid == keep:
                if refresh:
                    self.answer.refresh()
            elif rid is not None:
                self.answer.set_request(rid)
            if self.model.rowCount() == 0:
                self.counts.setText("Reading the request queue…")
        wanted = self.filter.currentText()
        self.session.run(
            self.rows_runner,
            lambda project: queue_rows(project, wanted),
            lambda rows: self._show_rows(rows, keep, refresh),
            label="reading the request queue",
        )

    def _show_rows(self, rows: QueueRows, keep: str | None, refresh: bool = True) -> None:
        fit = self.model.rowCount() == 0  # columns fit the first rows shown; later reloads keep the widths
        self.model.set_rows(rows.rows, rows.ids, rows.tips)
        self.statuses = rows.statuses
        if fit:
            self.table.resizeColumnsToContents()
            self.table.horizontalHeader().setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        n = {s: sum(st == s for st in rows.statuses.values()) for s in STATUSES}
        self.counts.setText(
            f"{plural(len(rows.statuses), 'request')}: {n['pending']} pending, {n['answered']} "
            f"answered, {n['rejected']} rejected"
        )
        # a large project's answer panel was refreshed when the reload began
        large = self.session.large
        self._reselect(self.answer.request_id if large else keep, refresh=refresh and not large)

    def _reselect(self, keep: str | None, refresh: bool = False) -> None:
        """Select ``keep`` if it is shown, else the first shown pending request, else the first shown."""
        ids = [self.request_at(r) for r in range(self.proxy.rowCount())]
        if keep in ids:
            self.select_row(ids.index(keep))
            if refresh:
                self.answer.refresh()  # same request, new history: assess again
        elif ids:
            pending = [i for i, rid in enumerate(ids) if self.statuses.get(rid) == "pending"]
            self.select_row(pending[0] if pending else 0)
        else:
            self.answer.set_request(None)

    def _search(self, text: str) -> None:
        self.proxy.setFilterFixedString(text)
        self._reselect(self.answer.request_id)

    def request_at(self, row: int) -> str:
        """The id of the request shown at ``row``."""
        return self.model.payload(self.proxy.mapToSource(self.proxy.index(row, 0)).row())

    def select_row(self, row: int) -> None:
        index = self.proxy.index(row, 0)
        self.table.selectionModel().setCurrentIndex(
            index, QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows
        )
        self.table.scrollTo(index)
        self._selected(row)

    def select_request(self, request_id: str) -> None:
        for row in range(self.proxy.rowCount()):
            if self.request_at(row) == request_id:
                self.select_row(row)
                return
        raise KeyError(request_id)

    def _selected(self, row: int) -> None:
        rid = self.request_at(row) if 0 <= row < self.proxy.rowCount() else None
        if rid != self.answer.request_id:
            self.answer.set_request(rid)
        pending = rid is not None and self.session.request(rid).status == "pending"
        for btn in (self.edit_btn, self.delete_btn, self.offer_btn):
            btn.setEnabled(pending)

    def current_row(self) -> int:
        return self.table.currentIndex().row()

    def next_request(self) -> None:
        if self.current_row() + 1 < self.proxy.rowCount():
            self.select_row(self.current_row() + 1)

    def previous_request(self) -> None:
        if self.current_row() > 0:
            self.select_row(self.current_row() - 1)

    def import_file(self) -> None:
        path = open_file_name(self, "Import requests", "Requests (*.json *.csv);;All files (*)")
        if not path:
            return
        try:
            added = self.session.import_requests(path)
        except Exception as exc:
            dialogs.report_exception(exc, parent=self)
            return
        dialogs.show_info(self, "Requests imported", f"Queued {plural(len(added), 'request')} from {path}.")

    def new_request(self) -> None:
        """Ask for a request; the dialog stays open until the store accepts it."""
        dlg = QueryBuilderDialog(self.session.schema, self, submit=self.session.add_request)
        if dlg.exec() == QueryBuilderDialog.DialogCode.Accepted:
            self.select_request(dlg.result_value.id)

    def new_posterior(self) -> None:
        """Open the posterior-of-proportions dialog (one at a time; it stays open beside the queue)."""
        from dpdesk.gui.kinds.posterior_dialog import PosteriorDialog

        if self.posterior_dialog is not None and self.posterior_dialog.isVisible():
            self.posterior_dialog.raise_()
            return
        s = self.session
        self.posterior_dialog = PosteriorDialog(
            s.schema, s.plan_inputs, release_job=s.release_job, released=s.released, parent=self
        )
        self.posterior_dialog.show()

    def edit_request(self) -> None:
        """Edit the selected pending request in the request dialog (validated in place by the store)."""
        rid = self.answer.request_id
        if (
            rid is None
            or self.session.request(rid).status != "pending"
            or self.answer.release_runner.is_running()
        ):
            return
        req = self.session.request(rid)
        dlg = QueryBuilderDialog(
            self.session.schema,
            self,
            title=f"Edit request {rid}",
            submit=lambda *values: self.session.edit_request(rid, *values),
        )
        dlg.set_values(req.describe(self.session.schema), req.eps, req.delta, req.requester, req.alpha)
        if req.query_text is None and dlg.query is None:  # an index list the text form cannot say
            dlg.keep_query(req.query)  # kept as recorded unless the curator types a replacement
        if dlg.exec() == QueryBuilderDialog.DialogCode.Accepted:
            self.select_request(rid)

    def delete_request(self) -> None:
        rid = self.answer.request_id
        if (
            rid is None
            or self.session.request(rid).status != "pending"
            or self.answer.release_runner.is_running()
        ):
            return
        if not dialogs.confirm(
            self,
            "Delete request",
            f"Delete pending request {rid}? It was never answered; it leaves the queue for good.",
        ):
            return
        try:
            self.session.delete_request(rid)
        except Exception as exc:
            dialogs.report_exception(exc, parent=self)

    def selected_ids(self) -> list[str]:
        """The selected requests' ids, in the order shown."""
        rows = sorted({i.row() for i in self.table.selectionModel().selectedRows()})
        return [self.request_at(r) for r in rows]

    def answer_all_free(self) -> None:
        """Release every pending request answerable from history, each as its own ledger entry."""
        queue_actions.answer_all_free(self)

    def plan_batch(self) -> None:
        """Plan the selected pending count requests together (fewer than two selected: every pending one)."""
        queue_actions.plan_batch(self)

    def counter_offer(self) -> None:
        """Offer better terms for the selected pending request; the accepted offer becomes its terms."""
        queue_actions.counter_offer(self)
