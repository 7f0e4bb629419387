"""A choice among a few long options (a counter-offer's terms), wrapped to fit a laptop's screen.

Each option is a radio button with its sentence wrapped beside it; OK returns the index chosen. Used
through :func:`dpdesk.gui.dialogs.choose`. Choosing never spends: a spend that follows asks its own
confirmation (:mod:`dpdesk.gui.dialogs.spend_dialog`).
"""

from __future__ import annotations

from PySide6.QtWidgets import (
    QButtonGroup,
    QDialog,
    QDialogButtonBox,
    QGridLayout,
    QLabel,
    QRadioButton,
    QVBoxLayout,
    QWidget,
)

from dpdesk.gui.widgets.screen_fit import available_area, keep_on_screen

WIDTH = 560


class _Option(QLabel):
    """An option's wrapped sentence; clicking it picks its radio button."""

    def __init__(self, text: str, button: QRadioButton) -> None:
        super().__init__(text)
        self.setWordWrap(True)
        self.button = button

    def mousePressEvent(self, event) -> None:
        self.button.setChecked(True)
        super().mousePressEvent(event)


class ChoiceDialog(QDialog):
    """``message`` above one radio button per option; :attr:`chosen` is the checked option's index."""

    def __init__(self, title: str, message: str, options: list[str], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        keep_on_screen(self)
        self.setWindowTitle(title)
        width = min(WIDTH, available_area(self).width() - 40)
        lay = QVBoxLayout(self)
        self.message = QLabel(message)
        self.message.setWordWrap(True)
        self.message.setFixedWidth(width - 30)
        lay.addWidget(self.message)
        grid = QGridLayout()
        self.group = QButtonGroup(self)
        self.buttons_of: list[QRadioButton] = []
        self.labels: list[QLabel] = []
        for i, text in enumerate(options):
            b = QRadioButton()
            self.group.addButton(b, i)
            label = _Option(text, b)
            label.setFixedWidth(width - 70)
            grid.addWidget(b, i, 0)
            grid.addWidget(label, i, 1)
            self.buttons_of.append(b)
            self.labels.append(label)
        if self.buttons_of:
            self.buttons_of[0].setChecked(True)
        lay.addLayout(grid, 1)  # a counter-offer has two or three options: they need no scrolling
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        lay.addWidget(self.buttons)
        self.setMaximumHeight(available_area(self).height() - 40)

    @property
    def chosen(self) -> int | None:
        i = self.group.checkedId()
        return None if i < 0 else i
