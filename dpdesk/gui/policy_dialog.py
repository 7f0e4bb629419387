"""The spend-policy dialog: pace the project's total budget (dpdesk.engine.policy.SpendPolicy).

Off (greedy) means each fresh answer spends exactly what its request needs. On, every fresh answer
spends at least ``floor`` of its *headroom* (the largest α its cells can still pay for), and a request
needing more than ``cap`` of the headroom is declined. The dialog only edits the two fractions; the
session stores them in the project file, and every fresh ledger entry records the policy it used.
"""

from __future__ import annotations

from PySide6.QtWidgets import (
    QCheckBox, QDialog, QDialogButtonBox, QDoubleSpinBox, QFormLayout, QLabel, QVBoxLayout, QWidget,
)

from dpdesk.engine.policy import SpendPolicy

# what the evaluation (docs/evaluation.md) measured with a fixed budget of 1
SUGGESTED = SpendPolicy(floor=0.1, cap=0.5)

EXPLANATION = (
    "With a fixed total budget, buying exactly what each request needs lets one tight request drain a "
    "cell, and many tiny purchases add little to history. Pacing spends at least the floor of what the "
    "request's cells can still pay — the released answer is then more accurate than asked, and history "
    "answers later requests for free — and declines a request that needs more than the cap. "
    "Changing the policy rewrites nothing already spent; each fresh answer records the policy it used."
)


def _percent_box(value: float, minimum: float) -> QDoubleSpinBox:
    box = QDoubleSpinBox()
    box.setRange(minimum, 100.0)
    box.setDecimals(1)
    box.setSingleStep(5.0)
    box.setSuffix(" %")
    box.setValue(100.0 * value)
    return box


class SpendPolicyDialog(QDialog):
    """Edit a project's spend policy; :meth:`policy` is the result (None for greedy)."""

    def __init__(self, current: SpendPolicy | None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Spend policy")
        start = current or SUGGESTED
        lay = QVBoxLayout(self)
        text = QLabel(EXPLANATION)
        text.setWordWrap(True)
        lay.addWidget(text)
        self.enabled = QCheckBox("Pace the budget")
        self.enabled.setChecked(current is not None)
        lay.addWidget(self.enabled)
        form = QFormLayout()
        self.floor = _percent_box(start.floor, 0.0)
        self.floor.setToolTip("Every fresh answer spends at least this share of what its cells can still pay.")
        self.cap = _percent_box(start.cap, 0.1)
        self.cap.setToolTip("A request needing more than this share of what its cells can still pay is declined.")
        form.addRow("Each fresh answer spends at least", self.floor)
        form.addRow("Decline a request needing more than", self.cap)
        lay.addLayout(form)
        self.problem = QLabel("")
        self.problem.setStyleSheet("QLabel { color: #b00020; }")
        lay.addWidget(self.problem)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        lay.addWidget(self.buttons)
        for w in (self.floor, self.cap):
            w.valueChanged.connect(lambda _v: self._check())
        self.enabled.toggled.connect(lambda _b: self._check())
        self._check()

    def _check(self) -> None:
        on = self.enabled.isChecked()
        self.floor.setEnabled(on)
        self.cap.setEnabled(on)
        bad = on and self.floor.value() > self.cap.value()
        self.problem.setText("The floor must not exceed the cap." if bad else "")
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(not bad)

    def policy(self) -> SpendPolicy | None:
        if not self.enabled.isChecked():
            return None
        return SpendPolicy(floor=self.floor.value() / 100.0, cap=self.cap.value() / 100.0)


def describe(policy: SpendPolicy | None) -> str:
    """One line for the budget panel."""
    if policy is None:
        return "Spend policy: greedy — each fresh answer spends exactly what its request needs."
    return (f"Spend policy: pacing — each fresh answer spends at least {policy.floor:.0%} of what its cells can "
            f"still pay; requests needing more than {policy.cap:.0%} are declined.")
