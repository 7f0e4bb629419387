"""The budget panel: per-cell privacy-cost heatmap, remaining-budget gauge, preview after a release.

The per-cell costs ``B`` (paper Thm 5.4) come from the engine's History (via the session); the
"after" costs come from the selected request's Assessment (``budget.cell_costs_after``). For a cube
of more than two attributes the curator picks the row and column attributes; the other attributes
are either collapsed by taking the maximum (the system cost is a maximum, so this shows where the
budget binds) or fixed to one label each. Collapsing is display only; no cost is computed here.
*Publish release…* opens :class:`~dpdesk.gui.kinds.release_dialog.PublishReleaseDialog` on the costs of now and
releases the confirmed preview through the release path, off the GUI thread; *Max / argmax…* opens
:class:`~dpdesk.gui.kinds.selection_dialog.SelectionDialog`. Right-clicking a heatmap cell offers *Watch this cell…*
(``sigWatchCell``).
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Signal
from PySide6.QtGui import QCursor
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QMenu,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from dpdesk.engine.budget.person import person_rule
from dpdesk.gui import dialogs
from dpdesk.gui.runtime.redraw import subscribe
from dpdesk.gui.runtime.session import ProjectSession
from dpdesk.gui.runtime.tasks import TaskRunner
from dpdesk.gui.widgets.gauge import BudgetGauge
from dpdesk.gui.widgets.glossary import tip
from dpdesk.gui.widgets.heatmap_view import HeatmapView, project_2d
from dpdesk.gui.widgets.screen_fit import keep_on_screen
from dpdesk.gui.widgets.wheel_guard import guard_wheel

SLICES_PER_ROW = 3
HEATMAP_MIN_HEIGHT = 220


class BudgetPanel(QWidget):
    """Heatmap of per-cell costs and the remaining total budget of a :class:`ProjectSession`."""

    sigWatchCell = Signal(int)  # "Watch this cell…" chosen on the heatmap (flat cell index)

    def __init__(self, session: ProjectSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.assessment = None
        lay = QVBoxLayout(self)
        self.gauge = BudgetGauge()
        lay.addWidget(self.gauge)
        lay.addLayout(self._buttons())
        lay.addLayout(self._controls(session.schema))
        lay.addLayout(self._slices(session.schema))
        self.heatmap = HeatmapView()
        self.heatmap.setMinimumHeight(HEATMAP_MIN_HEIGHT)  # never a strip: the panel scrolls instead
        self.heatmap.tooltip_for = self.describe
        self.heatmap.sigCellMenu.connect(lambda r, c: self.cell_menu(r, c).exec(QCursor.pos()))
        lay.addWidget(self.heatmap, 1)
        self.info = QLabel("")
        self.info.setWordWrap(True)
        self.info.setToolTip(tip("cell_cost", "system_cost"))
        lay.addWidget(self.info)
        for w in (self.row_attr, self.col_attr, self.mode):
            w.currentIndexChanged.connect(lambda _i: self.redraw())
        self.preview.toggled.connect(lambda _b: self.redraw())
        ev = session.state.events  # the costs move with the ledger, the policy line with the settings
        subscribe(self, (ev.entry_appended, ev.settings_changed, ev.loaded), lambda *_: self.redraw())
        self._ids = np.zeros((1, 1), dtype=int)
        self.shown_costs = np.zeros(0)
        guard_wheel(self)  # the panel scrolls: the wheel never switches an attribute it passes over
        self.redraw()

    def _buttons(self) -> QHBoxLayout:
        """The spend policy line and the releases started from the budget: a partition, a max/argmax."""
        pol = QHBoxLayout()
        self.policy_label = QLabel("")
        self.policy_label.setWordWrap(True)
        self.policy_btn = QPushButton("Spend policy…")
        self.policy_btn.setToolTip(tip("pacing"))
        self.policy_btn.clicked.connect(self.edit_policy)
        self.publish_btn = QPushButton("Publish release…")
        self.publish_btn.setToolTip(
            "Publish one noisy release of many counts (every cell, marginals or an interval "
            "tree) that later requests are answered from"
        )
        self.publish_btn.clicked.connect(self.publish_release)
        self.window_btn = QPushButton("Heatmap in a window…")
        self.window_btn.setToolTip("The same heatmap, as large as you like, beside the answer panel")
        self.window_btn.clicked.connect(self.open_heatmap_window)
        self.heatmap_window = None
        self.select_btn = QPushButton("Max / argmax…")
        self.select_btn.setToolTip(
            "Release a private maximum value or most frequent label (report-noisy-max)"
        )
        self.select_btn.clicked.connect(self.release_selection)
        self.release_runner = TaskRunner(self)
        pol.addWidget(self.policy_label, 1)
        for btn in (self.policy_btn, self.publish_btn, self.select_btn):
            pol.addWidget(btn)
        return pol

    def _controls(self, schema) -> QGridLayout:
        """Which attributes are rows and columns, how the others are folded, preview and colour scale."""
        controls = QGridLayout()
        self.row_attr, self.col_attr = QComboBox(), QComboBox()
        for box in (self.row_attr, self.col_attr):
            box.addItems(list(schema.names))
        if len(schema.names) > 1:
            self.col_attr.setCurrentIndex(1)
        self.mode = QComboBox()
        self.mode.addItem("max over the other attributes", "max")
        self.mode.addItem("fix the other attributes", "slice")
        self.mode.addItem("average over the other attributes", "mean")
        self._mode_chosen = False  # the curator picked a summary: never switched for them
        self._auto_mean = False  # the average is shown because the max was one colour (said so)
        self.mode.currentIndexChanged.connect(self._mode_picked)  # before the redraw (connected below)
        self.preview = QCheckBox("Preview after the selected request")
        self.preview.setToolTip(
            "Show the costs as they would be after a fresh answer to the selected request; "
            "changed cells are outlined in red."
        )
        controls.addWidget(QLabel("rows"), 0, 0)
        controls.addWidget(self.row_attr, 0, 1)
        controls.addWidget(QLabel("columns"), 0, 2)
        controls.addWidget(self.col_attr, 0, 3)
        controls.addWidget(self.mode, 1, 0, 1, 2)
        controls.addWidget(self.preview, 1, 2, 1, 2)
        self.fit_scale = QCheckBox("Fit colours to the costs shown")
        self.fit_scale.setToolTip(
            "Colour scale from 0 to the largest cost shown (small spends become visible); "
            "off: 0 to the total budget. Cells over the total budget are crossed either way."
        )
        self.fit_scale.toggled.connect(lambda _b: self.redraw())
        controls.addWidget(self.fit_scale, 2, 0, 1, 2)
        # in view at 1024×700 without scrolling: the heatmap as large as the curator wants, in its own window
        controls.addWidget(self.window_btn, 2, 2, 1, 2)
        return controls

    def _slices(self, schema) -> QGridLayout:
        """The fixed-slice choosers: they wrap SLICES_PER_ROW to a row, so many attributes never widen the
        window (shown only when the other attributes are fixed)."""
        self.slices_box = QGridLayout()
        self.slice_combos: dict[int, QComboBox] = {}
        self.slice_labels: dict[int, QLabel] = {}
        for d, attr in enumerate(schema.attributes):
            box = QComboBox()
            box.addItems(list(attr.labels))
            box.currentIndexChanged.connect(lambda _i: self.redraw())
            self.slice_combos[d] = box
            self.slice_labels[d] = QLabel(attr.name, self)
            box.setParent(self)
            box.hide()
            self.slice_labels[d].hide()
        return self.slices_box

    def _mode_picked(self, _index: int) -> None:
        self._mode_chosen, self._auto_mean = True, False

    def _place_slices(self, shown: list[int]) -> None:
        for d, box in self.slice_combos.items():
            for w in (self.slice_labels[d], box):
                self.slices_box.removeWidget(w)
                w.setVisible(d in shown)
        for i, d in enumerate(shown):
            r, c = divmod(i, SLICES_PER_ROW)
            self.slices_box.addWidget(self.slice_labels[d], r, 2 * c)
            self.slices_box.addWidget(self.slice_combos[d], r, 2 * c + 1)

    def edit_policy(self) -> None:
        from dpdesk.gui.dialogs.policy_dialog import SpendPolicyDialog

        SpendPolicyDialog.edit(self.session.spend_policy, self.session.set_spend_policy, self)

    def publish_release(self):  # type: ignore[no-untyped-def]
        """Open the *Publish release* dialog on the costs of now; a confirmed preview is released exactly
        as previewed (refused if the ledger or the settings move meanwhile). Returns the dialog."""
        from dpdesk.engine.partition.release_plan import PartitionReleasePlan
        from dpdesk.gui.kinds.release_dialog import PublishReleaseDialog

        basis = self.session.basis()  # the ledger head of the costs the preview is priced against
        dlg = PublishReleaseDialog(
            self.session.schema,
            self.session.cell_costs(),
            self.session.total_budget,
            self,
            accounting=self.session.accounting,
        )
        dlg.sigPublish.connect(lambda pv: self._publish(PartitionReleasePlan(pv, basis)))
        dlg.open()
        return dlg

    def release_selection(self):  # type: ignore[no-untyped-def]
        """Open the *Max / argmax* dialog (it prices, previews and releases on its own); returns it."""
        from dpdesk.gui.kinds.selection_dialog import SelectionDialog

        dlg = SelectionDialog(self.session, self)
        dlg.open()
        return dlg

    def _publish(self, plan) -> None:  # type: ignore[no-untyped-def]
        self.publish_btn.setEnabled(False)
        self.info.setText(f"Publishing {plan.preview.plan.description}…")
        self.release_runner.start(
            self.session.release_job(plan),
            self._published,
            self._publish_failed,
            label="publishing a release",
        )

    def _published(self, release) -> None:  # type: ignore[no-untyped-def]
        self.publish_btn.setEnabled(True)
        self.session.released()
        dialogs.show_info(
            self,
            "Release published",
            f"Recorded as ledger entry #{release.entry.seq}: {len(release.values):,} noisy counts. "
            f"Export the table with: dpdesk release export {self.session.path} --release "
            f"{release.entry.seq} --out table.csv\nWitness: {release.witness}",
        )

    def _publish_failed(self, exc: BaseException, trace: str) -> None:
        self.publish_btn.setEnabled(True)
        self.session.released()  # the views redraw from the ledger as it is
        dialogs.report_exception(exc, trace, parent=self)

    def set_assessment(self, a) -> None:
        self.assessment = a
        if self.preview.isChecked():  # otherwise nothing shown depends on the assessment
            self.redraw()

    def _after(self) -> np.ndarray | None:
        a = self.assessment
        if not self.preview.isChecked() or a is None or a.budget.cell_costs_after is None:
            return None
        return a.budget.cell_costs_after

    def redraw(self) -> None:
        if not self.session.loaded:
            self.info.setText("Reading the ledger…")
            return
        schema = self.session.schema
        budget = self.session.budget()
        self.gauge.set_budget(budget.remaining, budget.total, budget.system_cost)
        from dpdesk.gui.dialogs.policy_dialog import describe

        self.policy_label.setText(describe(self.session.spend_policy))
        before = self.session.cell_costs()
        after = self._after()
        costs = before if after is None else after
        self.shown_costs = costs
        row, col = self.row_attr.currentIndex(), self.col_attr.currentIndex()
        mode = self.mode.currentData()
        self._place_slices([d for d in self.slice_combos if mode == "slice" and d not in (row, col)])
        if row == col:
            self.info.setText("Choose two different attributes for rows and columns.")
            return
        fixed = {d: box.currentIndex() for d, box in self.slice_combos.items()}
        mat, ids = project_2d(costs, schema.shape, row, col, mode, fixed)
        mat, mode, flattened = self._flatten(mat, mode, costs, schema, row, col, fixed)
        highlight = None
        if after is not None:
            highlight = (np.asarray(after) != np.asarray(before))[ids]
        self._ids = ids
        a_row, a_col = schema.attributes[row], schema.attributes[col]
        top = float(mat.max()) if mat.size else 0.0
        vmax = top if self.fit_scale.isChecked() and top > 0 else budget.total
        rule = person_rule(schema)
        measure = "epsilon" if budget.accounting is None else "rho"
        # a cell is over when what one person can lose through it passes the total: k × its cost (k² × its
        # ρ) when a person's k rows may all fall in it; with one row per cell, a cell's own cost (a person's
        # loss then adds up across cells: the caption says so when that sum passes the total)
        factor = rule.factor(measure) if rule.group_axes is None else 1
        over = factor * mat > budget.total * (1 + 1e-12)
        self.heatmap.set_matrix(
            mat, a_row.labels, a_col.labels, a_row.name, a_col.name, vmax, highlight, over
        )
        what = "now"
        if after is not None:
            decision = getattr(self.assessment, "decision", "spend")  # a max/posterior plan always spends
            what = (
                "after a fresh answer to the selected request (preview)"
                if decision == "spend"
                else f"if the selected request were answered fresh (preview; the engine's decision is "
                f"'{decision}', which costs 0)"
            )
        top_cost = budget.system_cost if after is None else self.assessment.budget.system_cost_after
        acc = budget.accounting
        adds, rho_adds = "the most-spent cell", "the most-spent cell's ρ"
        if not rule.rows_are_people:  # the cells keep a row's cost; a person's rows add up across them
            what, adds, rho_adds = (
                f"{what}, per row",
                f"one person's privacy loss ε: {rule.how()}",
                "one person's ρ",
            )
        self.info.setText(
            flattened
            + (
                f"Per-cell privacy cost {what}; system cost = {adds} = {top_cost:.6g} of {budget.total:g}. "
                if acc is None
                else f"Per-cell privacy cost in ρ (zCDP) {what}; system cost = {rho_adds} "
                f"{top_cost:.6g} of {budget.total:.6g}, i.e. privacy loss ε = {budget.shown(top_cost):.4g} "
                f"of {acc.epsilon:g} at δ = {acc.delta:g} ({acc.conversion} conversion). "
            )
            + "Hover a cell for its labels, cost and the requests that spent it."
            + self._over_words(
                rule, int(over.sum()), factor, top_cost is not None and top_cost > budget.total * (1 + 1e-12)
            )
        )
        self._mirror()

    def _flatten(self, mat, mode, costs, schema, row, col, fixed):
        """The max's matrix, or the mean's when the max is one colour, with the words saying so."""
        flattened = ""
        if mode == "max" and len(schema.shape) > 2 and not self._mode_chosen and mat.size and mat.max() > 0:
            mean, _ = project_2d(costs, schema.shape, row, col, "mean", fixed)
            if float(np.ptp(mat)) == 0.0 and float(np.ptp(mean)) > 0.0:  # one colour: say nothing
                self.mode.blockSignals(True)
                self.mode.setCurrentIndex(self.mode.findData("mean"))
                self.mode.blockSignals(False)
                mat, mode = mean, "mean"
                self._auto_mean = True
        if mode == "mean" and self._auto_mean:
            flattened = (
                "The max over the other attributes is one colour here (every row × column has a cell "
                "at the maximum): showing the average instead. "
            )
        return mat, mode, flattened

    @staticmethod
    def _over_words(rule, marked: int, factor: int, person_over: bool) -> str:
        """What the ✕ marks say: cells over the total budget, per person on a person-level project."""
        if rule.rows_are_people:
            return f" ✕ marks {marked} cell(s) over the total budget." if marked else ""
        text = ""
        if marked and factor > 1:
            text = (
                f" ✕ marks {marked} cell(s) where one person's {rule.k} rows would pass the total budget "
                f"({factor} × the cell's cost)."
            )
        elif marked:
            text = f" ✕ marks {marked} cell(s) whose own cost passes the total budget."
        if person_over and factor == 1:  # one row per cell or slice: no cell alone says it
            text += (
                f" One person's loss, {rule.how()}, passes the total budget: a person's rows add up across "
                "cells, which no single cell's mark shows."
            )
        return text

    def cell_menu(self, r: int, c: int) -> QMenu:
        """The heatmap cell's menu: *Watch this cell…* (a claim about that cell's count)."""
        menu = QMenu(self)
        cell = self.cell_for(r, c)
        action = menu.addAction(f"Watch this cell… ({self.session.schema.describe_cell(cell)})")
        action.setObjectName("watchCell")
        action.triggered.connect(lambda: self.sigWatchCell.emit(cell))
        return menu

    def cell_for(self, r: int, c: int) -> int:
        """The cube cell (flat index) displayed at heatmap position (r, c)."""
        return int(self._ids[r, c])

    def describe(self, r: int, c: int) -> str:
        cell = self.cell_for(r, c)
        schema = self.session.schema
        before = float(self.session.cell_costs()[cell])
        acc = self.session.accounting
        lines = [
            schema.describe_cell(cell),
            f"cost {before:.6g} of {self.session.total_budget:g}"
            if acc is None
            else f"cost ρ = {before:.6g} of {self.session.total_budget:.6g} (ε = {acc.epsilon_of(before):.4g} "
            f"of {acc.epsilon:g} at δ = {acc.delta:g})",
        ]
        rule = person_rule(schema)
        if not rule.rows_are_people and rule.group_axes is None:  # a person's k rows may all fall here
            measure = "epsilon" if acc is None else "rho"
            lines.append(f"one person's {rule.k} rows here: {rule.factor(measure) * before:.6g}")
        after = self._after()
        if after is not None:
            lines.append(f"after the selected request: {float(after[cell]):.6g}")
        if self.session.view().entries_read:
            spent = self.session.spenders(cell)
            lines.append(
                "spent by: "
                + (", ".join(f"{rid} ({share:.4g})" for rid, share in spent) if spent else "nothing yet")
            )
        else:  # a long ledger restored from its cache: its entries are read when the Audit page opens
            lines.append("spent by: shown once the ledger is read (open the Audit page)")
        if self.mode.currentData() == "max" and len(schema.shape) > 2:
            lines.append("(the most-spent cell among the other attributes' labels)")
        if self.mode.currentData() == "mean" and len(schema.shape) > 2:
            lines.append(
                "(the colour is the average over the other attributes' labels; this is the most-spent)"
            )
        return "\n".join(lines)

    def open_heatmap_window(self) -> QDialog:
        """The heatmap in a window of its own (non-modal, fitted to the screen), redrawn with the panel."""
        if self.heatmap_window is None:
            dlg = QDialog(self)
            keep_on_screen(dlg)
            dlg.setWindowTitle(f"Per-cell privacy costs — {self.session.name}")
            dlg.resize(760, 560)
            lay = QVBoxLayout(dlg)
            dlg.view = HeatmapView()
            dlg.view.tooltip_for = self.describe
            dlg.caption = QLabel("")
            dlg.caption.setWordWrap(True)
            lay.addWidget(dlg.view, 1)
            lay.addWidget(dlg.caption)
            self.heatmap_window = dlg
        self._mirror()
        self.heatmap_window.show()
        self.heatmap_window.raise_()
        return self.heatmap_window

    def _mirror(self) -> None:
        """Show in the window what the panel's heatmap shows."""
        dlg = self.heatmap_window
        if dlg is None or self.heatmap.last is None:
            return
        dlg.view.set_matrix(*self.heatmap.last)
        dlg.caption.setText(self.info.text())
