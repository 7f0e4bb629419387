"""The known-bounds dialog: declare a public table size so inferences use the bounded prior.

Counts are never negative, and a table of at most ``N`` records bounds every count query (DESIGN §2).
``N`` must be public — the population size, a published total — and is typed by the curator: the
dialog never suggests the source's row count, which is private. With it, inferences use the posterior
truncated to the query's bounds and highest-density intervals (dpdesk.engine.inference.prior); budgets never
change.
"""

from __future__ import annotations

from PySide6.QtWidgets import QDoubleSpinBox, QWidget

from dpdesk.engine.inference.prior import BoundedPrior
from dpdesk.gui.setting_dialog import SettingDialog

EXPLANATION = (
    "If the number of records is publicly known to be at most N (a population size, a published total), "
    "every count lies between 0 and N. dpdesk can then use those bounds as a prior: the posterior is "
    "truncated to them and intervals are highest-density intervals, which answers more requests from "
    "history near 0. Type N yourself — it must be public; dpdesk never reads it from the data. "
    "Budgets do not depend on it. Each inferred answer records the prior it used."
)


class PriorDialog(SettingDialog):
    """Declare or withdraw a public table size; :meth:`prior` is the result (None for the flat prior)."""

    def __init__(self, current: BoundedPrior | None, parent: QWidget | None = None) -> None:
        super().__init__("Known bounds", EXPLANATION, "Use known bounds (counts ≥ 0 and a public table size)",
                         current is not None, parent)
        self.table_size = QDoubleSpinBox()
        self.table_size.setDecimals(0)
        self.table_size.setRange(1.0, 1e15)
        self.table_size.setGroupSeparatorShown(True)
        self.table_size.setValue(current.table_size if current is not None else 1.0)
        self.add_row("At most N records, N =", self.table_size)

    def prior(self) -> BoundedPrior | None:
        return BoundedPrior(float(self.table_size.value())) if self.enabled.isChecked() else None

    value = prior
