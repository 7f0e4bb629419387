"""The spend-policy dialog: pace the project's total budget (dpdesk.engine.budget.policy.SpendPolicy).

Off (greedy) means each fresh answer spends exactly what its request needs. On, every fresh answer
spends at least ``floor`` of its *headroom* (the largest α its cells can still pay for), and a request
needing more than ``cap`` of the headroom is declined. The dialog only edits the two fractions; the
session stores them in the project file, and every fresh ledger entry records the policy it used.
"""

from __future__ import annotations

from PySide6.QtWidgets import QDoubleSpinBox, QWidget

from dpdesk.engine.budget.policy import SpendPolicy
from dpdesk.gui.dialogs.setting_dialog import SettingDialog

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


class SpendPolicyDialog(SettingDialog):
    """Edit a project's spend policy; :meth:`policy` is the result (None for greedy)."""

    def __init__(self, current: SpendPolicy | None, parent: QWidget | None = None) -> None:
        super().__init__("Spend policy", EXPLANATION, "Pace the budget", current is not None, parent)
        start = current or SUGGESTED
        self.floor = _percent_box(start.floor, 0.0)
        self.cap = _percent_box(start.cap, 0.1)
        self.add_row(
            "Each fresh answer spends at least",
            self.floor,
            "Every fresh answer spends at least this share of what its cells can still pay.",
        )
        self.add_row(
            "Decline a request needing more than",
            self.cap,
            "A request needing more than this share of what its cells can still pay is declined.",
        )

    def problem_text(self) -> str:
        if hasattr(self, "cap") and self.floor.value() > self.cap.value():
            return "The floor must not exceed the cap."
        return ""

    def policy(self) -> SpendPolicy | None:
        if not self.enabled.isChecked():
            return None
        return SpendPolicy(floor=self.floor.value() / 100.0, cap=self.cap.value() / 100.0)

    value = policy


def describe(policy: SpendPolicy | None) -> str:
    """One line for the budget panel."""
    if policy is None:
        return "Spend policy: greedy — each fresh answer spends exactly what its request needs."
    return (
        f"Spend policy: pacing — each fresh answer spends at least {policy.floor:.0%} of what its cells can "
        f"still pay; requests needing more than {policy.cap:.0%} are declined."
    )
