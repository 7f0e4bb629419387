"""The known-bounds dialog: declare a public table size so inferences use the bounded prior.

Counts are never negative, and a table of at most ``N`` records bounds every count query (DESIGN §2).
``N`` must be public — the population size, a published total — and is typed by the curator: the
dialog never suggests the source's row count, which is private. With it, inferences use the posterior
truncated to the query's bounds and highest-density intervals (dpdesk.engine.prior); budgets never
change.
"""

from __future__ import annotations

from PySide6.QtWidgets import (
    QCheckBox, QDialog, QDialogButtonBox, QDoubleSpinBox, QFormLayout, QLabel, QVBoxLayout, QWidget,
)

from dpdesk.engine.prior import BoundedPrior

EXPLANATION = (
    "If the number of records is publicly known to be at most N (a population size, a published total), "
    "every count lies between 0 and N. dpdesk can then use those bounds as a prior: the posterior is "
    "truncated to them and intervals are highest-density intervals, which answers more requests from "
    "history near 0. Type N yourself — it must be public; dpdesk never reads it from the data. "
    "Budgets do not depend on it. Each inferred answer records the prior it used."
)


class PriorDialog(QDialog):
    """Declare or withdraw a public table size; :meth:`prior` is the result (None for the flat prior)."""

    def __init__(self, current: BoundedPrior | None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Known bounds")
        lay = QVBoxLayout(self)
        text = QLabel(EXPLANATION)
        text.setWordWrap(True)
        lay.addWidget(text)
        self.enabled = QCheckBox("Use known bounds (counts ≥ 0 and a public table size)")
        self.enabled.setChecked(current is not None)
        lay.addWidget(self.enabled)
        form = QFormLayout()
        self.table_size = QDoubleSpinBox()
        self.table_size.setDecimals(0)
        self.table_size.setRange(1.0, 1e15)
        self.table_size.setGroupSeparatorShown(True)
        self.table_size.setValue(current.table_size if current is not None else 1.0)
        form.addRow("At most N records, N =", self.table_size)
        lay.addLayout(form)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        lay.addWidget(self.buttons)
        self.enabled.toggled.connect(self.table_size.setEnabled)
        self.table_size.setEnabled(self.enabled.isChecked())

    def prior(self) -> BoundedPrior | None:
        return BoundedPrior(float(self.table_size.value())) if self.enabled.isChecked() else None
