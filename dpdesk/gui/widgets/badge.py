"""The red PRIVATE badge placed next to every number derived from the raw data.

True counts and the table preview are for the curator's eyes only (DESIGN §4); released answers
and budget figures carry no badge. Run this module to see the badge.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QWidget

STYLE = (
    "QLabel { background: #c0392b; color: white; font-weight: bold; border-radius: 4px; padding: 1px 6px; }"
)


class PrivateBadge(QLabel):
    """``PRIVATE`` in white on red, with a tooltip saying why."""

    def __init__(self, what: str = "these numbers", parent: QWidget | None = None) -> None:
        super().__init__("PRIVATE", parent)
        self.setObjectName("privateBadge")
        self.setStyleSheet(STYLE)
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setToolTip(
            f"{what[:1].upper()}{what[1:]} come from the raw data: for the curator only, never release them."
        )
        self.setSizePolicy(self.sizePolicy().horizontalPolicy(), self.sizePolicy().verticalPolicy())
        self.setMaximumHeight(22)


if __name__ == "__main__":
    from PySide6.QtWidgets import QApplication

    app = QApplication([])
    w = PrivateBadge("the cube preview")
    w.show()
    app.exec()
