"""A curator setting that is off by default or on with a few values: the shared dialog layout.

An explanation, an on/off checkbox, a form of value widgets (enabled only while on), a line naming
what is wrong with the values (OK is disabled until it is empty) and OK/Cancel. Subclasses add their
rows, say what is wrong in :meth:`SettingDialog.problem_text` and give the result in
:meth:`SettingDialog.value`; :meth:`SettingDialog.edit` is the whole round trip from a panel.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtWidgets import QCheckBox, QDialog, QDialogButtonBox, QFormLayout, QLabel, QVBoxLayout, QWidget

from dpdesk.gui import dialogs
from dpdesk.gui.widgets.screen_fit import keep_on_screen


class SettingDialog(QDialog):
    @classmethod
    def edit(cls, current: Any, store: Callable[[Any], object], parent: QWidget | None = None) -> None:
        """Show the dialog for ``current``; on OK pass the new value to ``store`` (errors become a dialog)."""
        dlg = cls(current, parent)
        if dlg.exec() != cls.DialogCode.Accepted:
            return
        try:
            store(dlg.value())
        except Exception as exc:
            dialogs.report_exception(exc, parent=parent)

    def __init__(
        self, title: str, explanation: str, switch: str, on: bool, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        keep_on_screen(self)
        self.setWindowTitle(title)
        lay = QVBoxLayout(self)
        text = QLabel(explanation)
        text.setWordWrap(True)
        lay.addWidget(text)
        self.enabled = QCheckBox(switch)
        self.enabled.setChecked(on)
        lay.addWidget(self.enabled)
        self.form = QFormLayout()
        lay.addLayout(self.form)
        self.problem = QLabel("")
        self.problem.setStyleSheet("QLabel { color: #b00020; }")
        lay.addWidget(self.problem)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        lay.addWidget(self.buttons)
        self._values: list[QWidget] = []
        self.enabled.toggled.connect(lambda _b: self.check())

    def add_row(self, label: str, widget: QWidget, tooltip: str = "") -> None:
        if tooltip:
            widget.setToolTip(tooltip)
        self.form.addRow(label, widget)
        self._values.append(widget)
        if hasattr(widget, "valueChanged"):
            widget.valueChanged.connect(lambda _v: self.check())
        self.check()

    def problem_text(self) -> str:
        """What is wrong with the values ('' when nothing is)."""
        return ""

    def value(self) -> Any:
        """The setting the dialog shows (None when switched off)."""
        raise NotImplementedError

    def check(self) -> None:
        on = self.enabled.isChecked()
        for w in self._values:
            w.setEnabled(on)
        bad = self.problem_text() if on else ""
        self.problem.setText(bad)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(not bad)
