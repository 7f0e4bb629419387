"""The known-bounds dialog: declare a public table size so released intervals are trimmed to it.

Counts are never negative, and a table of at most ``N`` records bounds every count query (DESIGN §2).
``N`` must be public — the population size, a published total — and is typed by the curator: the
dialog never suggests the source's row count, which is private. With it, the intervals an inferred
answer releases are the flat prior's intersected with the query's bounds (dpdesk.engine.inference.prior):
narrower near 0 or N, with the same coverage; decisions and budgets never change.
"""

from __future__ import annotations

from PySide6.QtWidgets import QDoubleSpinBox, QWidget

from dpdesk.engine.inference.prior import BoundedPrior
from dpdesk.gui.dialogs.setting_dialog import SettingDialog

EXPLANATION = (
    "If the number of records is publicly known to be at most N (a population size, a published total), "
    "every count lies between 0 and N. dpdesk then trims what it releases to that range: an inferred "
    "answer's interval θ̂ ± a and the credible interval are cut at 0 and N, and an estimate outside them "
    "is moved to the nearest bound. The truth is always inside, so a trimmed interval covers it whenever "
    "the untrimmed one does: the confidence shown still holds for your table, whatever its counts. "
    "The bounds do not answer more requests from history and do not change any budget. "
    "Type N yourself — it must be public; dpdesk never reads it from the data. "
    "Each inferred answer records the prior it used."
)


class PriorDialog(SettingDialog):
    """Declare or withdraw a public table size; :meth:`prior` is the result (None for the flat prior)."""

    def __init__(self, current: BoundedPrior | None, parent: QWidget | None = None) -> None:
        super().__init__(
            "Known bounds",
            EXPLANATION,
            "Use known bounds (counts ≥ 0 and a public table size)",
            current is not None,
            parent,
        )
        self.table_size = QDoubleSpinBox()
        self.table_size.setDecimals(0)
        self.table_size.setRange(1.0, 1e15)
        self.table_size.setGroupSeparatorShown(True)
        self.table_size.setValue(current.table_size if current is not None else 1.0)
        self.add_row("At most N records, N =", self.table_size)

    def prior(self) -> BoundedPrior | None:
        return BoundedPrior(float(self.table_size.value())) if self.enabled.isChecked() else None

    value = prior
