"""The remaining-budget gauge: a bar and a number that turn to a warning colour near exhaustion.

It shows the engine's ``BudgetPreview`` (remaining = total − system cost, computed by the engine);
the only thing decided here is the colour: warning below 20 % of the total, danger below 5 %.
"""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QWidget

from dpdesk.gui.widgets.glossary import tip
from dpdesk.gui.widgets.progress import set_progress

WARN_FRACTION = 0.20
DANGER_FRACTION = 0.05
COLOURS = {"ok": "#2e8b57", "warn": "#e08a00", "danger": "#c0392b"}


def level(remaining: float, total: float) -> str:
    if remaining <= DANGER_FRACTION * total:
        return "danger"
    if remaining <= WARN_FRACTION * total:
        return "warn"
    return "ok"


class BudgetGauge(QWidget):
    """``remaining / total`` as a bar, plus the exact figures."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(QLabel("Remaining budget ε"))
        self.setToolTip(tip("remaining", "system_cost", "total"))
        self.bar = QProgressBar()
        self.bar.setRange(0, 1000)
        self.bar.setTextVisible(False)
        self.bar.setMinimumWidth(160)
        lay.addWidget(self.bar, 1)
        self.number = QLabel("—")
        self.number.setObjectName("remainingNumber")
        lay.addWidget(self.number)
        self.state = "ok"
        self.remaining = float("nan")

    def set_budget(self, remaining: float, total: float, system_cost: float) -> None:
        self.remaining = remaining
        state, self.state = self.state, level(remaining, total)
        colour = COLOURS[self.state]
        set_progress(self.bar, int(round(1000 * max(0.0, remaining) / total)))
        if state != self.state or not self.bar.styleSheet():  # restyled only when the level changes
            self.bar.setStyleSheet(f"QProgressBar::chunk {{ background: {colour}; }}")
        self.number.setText(f"{remaining:.4g} of {total:.4g}  (spent {system_cost:.4g})")
        self.number.setStyleSheet(f"QLabel {{ color: {colour}; font-weight: bold; }}")
        self.setToolTip(
            "Remaining = total budget − system cost (the most-spent cell), recomputed from the ledger."
        )


if __name__ == "__main__":
    from PySide6.QtWidgets import QApplication

    app = QApplication([])
    g = BudgetGauge()
    g.set_budget(0.12, 1.0, 0.88)
    g.show()
    app.exec()
