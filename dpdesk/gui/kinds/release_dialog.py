"""*Publish release…*: plan a one-shot partition release, preview its cost and guarantees, confirm it.

The curator picks a plan (every cell, marginals of some orders, or an interval tree over an ordered
attribute) and a price (a per-cell privacy loss ε, or an accuracy target ±E at a confidence). *Preview* runs the engine's
:func:`~dpdesk.engine.partition.guarantee.preview` off the GUI thread — public inputs only, nothing
spent — and shows the per-cell charge, the system cost now and after, each guarantee with its kind
(per query from the exact posterior, or the seed's simultaneous bound) and a heatmap of the per-cell
costs after. *Publish…* asks for confirmation and emits ``sigPublish(preview)``; whoever owns the
project records exactly that preview through the release path.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QButtonGroup,
    QCheckBox,
    QComboBox,
    QDialog,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QRadioButton,
    QSpinBox,
    QSplitter,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from dpdesk.engine.budget.person import person_rule
from dpdesk.engine.schema import Schema
from dpdesk.gui import dialogs
from dpdesk.gui.dialogs.spend_dialog import spend_text
from dpdesk.gui.runtime.tasks import TaskRunner
from dpdesk.gui.widgets.confidence_box import ConfidenceBox
from dpdesk.gui.widgets.heatmap_view import HeatmapView, show_cell_costs
from dpdesk.gui.widgets.release_buttons import release_buttons
from dpdesk.gui.widgets.screen_fit import keep_on_screen, scrolling
from dpdesk.gui.widgets.wheel_guard import guard_wheel

KINDS = ("Every cell", "Marginals", "Interval tree")


class PublishReleaseDialog(QDialog):
    """Plan, price and preview a partition release over ``schema`` given the public per-cell costs."""

    sigPublish = Signal(object)  # the confirmed PlanPreview

    def __init__(
        self,
        schema: Schema,
        cell_costs: np.ndarray,
        total_budget: float,
        parent: QWidget | None = None,
        accounting: Any = None,
    ) -> None:
        super().__init__(parent)
        self.accounting = accounting  # a zCDP project's (costs and total in ρ); None: pure ε
        self.setWindowTitle("Publish release")
        self.schema, self.cell_costs, self.total_budget = (
            schema,
            np.asarray(cell_costs, float),
            float(total_budget),
        )
        self.preview_result: Any = None
        self.runner = TaskRunner(self)
        form = QFormLayout()
        self.kind = QComboBox()
        self.kind.addItems(KINDS)
        self.orders = QLineEdit("1,2")
        self.tree_attr = QComboBox()
        self.tree_attr.addItems([a.name for a in schema.attributes if a.kind == "numeric" and a.size > 1])
        self.branching = QSpinBox()
        self.branching.setRange(2, 64)
        self.branching.setValue(2)
        self.depth = QSpinBox()
        self.depth.setRange(0, 64)
        self.depth.setSpecialValueText("up to one root")
        self.cross = QCheckBox("cross every node with the other attributes")
        self.cross.setChecked(True)
        form.addRow("Plan", self.kind)
        form.addRow("Marginal orders", self.orders)
        form.addRow("Tree over", self.tree_attr)
        form.addRow("Branching", self.branching)
        form.addRow("Levels above single labels", self.depth)
        form.addRow("", self.cross)
        price = self._price()
        form.addRow("Price", price)
        self.result = QTextBrowser()
        self.result.setMinimumHeight(90)
        self.result.setText("Preview to see the cost and what the release promises.")
        self.heatmap = HeatmapView()
        self.heatmap.setMinimumHeight(180)
        buttons, self.preview_button, self.publish_button = release_buttons(
            self, "Publish…", self.run_preview, self.publish
        )
        # on a short screen the form scrolls and the curator shares the height between text and heatmap;
        # the buttons stay in view
        shown = QSplitter(Qt.Orientation.Vertical)
        shown.addWidget(self.result)
        shown.addWidget(self.heatmap)
        shown.setChildrenCollapsible(False)
        lay = QVBoxLayout(self)
        lay.addWidget(scrolling(form), 2)
        lay.addWidget(shown, 3)
        lay.addLayout(buttons)
        keep_on_screen(self)
        guard_wheel(self)  # the form scrolls: the wheel never changes a price it passes over
        for w in (self.kind, self.tree_attr):
            w.currentIndexChanged.connect(self._inputs_changed)
        for w in (self.branching, self.depth, self.alpha, self.accuracy, self.delta):
            w.valueChanged.connect(self._inputs_changed)
        self.orders.textChanged.connect(self._inputs_changed)
        self.cross.toggled.connect(self._inputs_changed)
        self.by_alpha.toggled.connect(self._inputs_changed)
        self._inputs_changed()

    def _price(self) -> QHBoxLayout:
        """A per-cell privacy loss ε, or the ε meeting an accuracy target ±E at a confidence."""
        self.by_alpha = QRadioButton("per-cell privacy loss ε")
        self.by_accuracy = QRadioButton("accuracy target ±E")
        self.by_alpha.setChecked(True)
        group = QButtonGroup(self)
        group.addButton(self.by_alpha)
        group.addButton(self.by_accuracy)
        self.alpha = QDoubleSpinBox(
            decimals=4, minimum=0.0001, maximum=1e6, value=min(0.1, self.total_budget)
        )
        self.accuracy = QDoubleSpinBox(decimals=2, minimum=0.01, maximum=1e12, value=50.0)
        self.delta = ConfidenceBox(0.05, smallest=0.0001, decimals=4)  # shows the confidence; its value is δ
        price = QHBoxLayout()
        for w in (
            self.by_alpha,
            self.alpha,
            self.by_accuracy,
            self.accuracy,
            QLabel("at"),
            self.delta,
        ):
            price.addWidget(w)
        return price

    # -- inputs ---------------------------------------------------------------------------------------
    def _inputs_changed(self, *_: Any) -> None:
        k = self.kind.currentIndex()
        self.orders.setEnabled(k == 1)
        for w in (self.tree_attr, self.branching, self.depth, self.cross):
            w.setEnabled(k == 2)
        self.alpha.setEnabled(self.by_alpha.isChecked())
        self.accuracy.setEnabled(self.by_accuracy.isChecked())
        self.preview_result = None  # a preview describes exactly the inputs it was made from
        self.publish_button.setEnabled(False)

    def plan(self):
        """The plan the inputs describe (a one-line DpdeskError when they are bad)."""
        from dpdesk.engine.errors import PlanError
        from dpdesk.engine.partition import plan as P

        k = self.kind.currentIndex()
        if k == 0:
            return P.cells_plan(self.schema)
        if k == 1:
            try:
                orders = [int(t) for t in self.orders.text().split(",") if t.strip()]
            except ValueError:
                raise PlanError(
                    f"marginal orders ({self.orders.text()!r}) must be numbers separated by commas"
                ) from None
            return P.marginals_by_order(self.schema, orders)
        if not self.tree_attr.count():
            raise PlanError("tree: the cube has no ordered (numeric) attribute")
        depth = self.depth.value() or None
        return P.tree_plan(
            self.schema, self.tree_attr.currentText(), self.branching.value(), depth, self.cross.isChecked()
        )

    # -- preview and publish --------------------------------------------------------------------------
    def run_preview(self) -> None:
        from dpdesk.engine.errors import DpdeskError
        from dpdesk.engine.partition.guarantee import preview

        try:
            plan = self.plan()
        except DpdeskError as exc:
            self.result.setText(f"<span style='color:#c0392b'>{exc}</span>")
            return
        kwargs = dict(
            delta=self.delta.value(),
            total_budget=self.total_budget,
            cell_costs=self.cell_costs,
            accounting=self.accounting,
            rule=person_rule(self.schema),
        )
        if self.by_alpha.isChecked():
            kwargs["alpha"] = self.alpha.value()
        else:
            kwargs["accuracy"] = self.accuracy.value()
        self.result.setText("Computing the preview…")
        self.preview_button.setEnabled(False)
        self.runner.start(
            lambda state: preview(plan, **kwargs), self._show, self._failed, label="release preview"
        )

    def _failed(self, exc: BaseException, trace: str) -> None:
        self.preview_button.setEnabled(True)
        title, message = dialogs.explain(exc)
        self.result.setText(f"<span style='color:#c0392b'>{message}</span>")

    def _show(self, pv) -> None:
        self.preview_button.setEnabled(True)
        self.preview_result = pv
        b = pv.budget
        fits = "" if pv.fits else " <b style='color:#c0392b'>— does not fit the total budget</b>"
        lines = [
            f"<b>{pv.plan.description}</b>",
            f"Every cell pays ε = {pv.alpha:.4g} ({pv.plan.coverage} count(s) per record, each at {pv.row_alpha:.4g}; "
            f"discrete Laplace noise of scale {pv.scale:.4g}).",
            (
                f"System cost {b.system_cost:.4g} now → {b.system_cost_after:.4g} after, of {b.total:g}{fits}."
                if b.accounting is None
                else f"System cost {b.words()}{fits}."
            ),
        ]
        lines += [g.text(self.schema) for g in pv.guarantees]
        lines.append(pv.simultaneous.text())
        self.result.setText("<br>".join(lines))
        show_cell_costs(self.heatmap, self.schema, np.asarray(b.cell_costs_after), self.total_budget)
        self.publish_button.setEnabled(pv.fits)

    def publish(self) -> None:
        pv = self.preview_result
        if pv is None or not pv.fits:
            return
        heading, body = spend_text(
            f"{pv.plan.n_rows:,} noisy counts ({pv.plan.description})",
            f"ε = {pv.alpha:.4g} on every cell",
            pv.budget.system_cost,
            pv.budget.system_cost_after,
            pv.budget.total,
        )
        if dialogs.confirm_spend(self, heading, body):
            self.sigPublish.emit(pv)
            self.accept()

    def done(self, result: int) -> None:
        self.runner.shutdown()
        super().done(result)
