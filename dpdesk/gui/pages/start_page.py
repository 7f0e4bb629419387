"""The start page: new project, open project, recent projects, and Open demo.

It only emits what the curator chose; the main window does the opening.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QPixmap
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from dpdesk.appdata.bundled import resource


class StartPage(QWidget):
    """Entry points into a project."""

    sigNew = Signal()
    sigOpen = Signal()
    sigOpenPath = Signal(str)
    sigDemo = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        outer = QHBoxLayout(self)
        outer.addStretch(1)
        col = QVBoxLayout()
        outer.addLayout(col, 3)
        outer.addStretch(1)
        head = QHBoxLayout()
        icon = QLabel()
        try:
            icon.setPixmap(
                QPixmap(str(resource("icons", "dpdesk.png"))).scaledToHeight(
                    72, Qt.TransformationMode.SmoothTransformation
                )
            )
        except FileNotFoundError:
            pass
        head.addWidget(icon)
        title = QLabel(
            "<h1>dpdesk</h1><p>Answer counting queries under differential privacy, "
            "with inference from what you already released.</p>"
        )
        title.setWordWrap(True)
        head.addWidget(title, 1)
        col.addSpacing(30)
        col.addLayout(head)
        buttons = QHBoxLayout()
        self.new_btn = QPushButton("New project…")
        self.open_btn = QPushButton("Open project…")
        self.demo_btn = QPushButton("Open demo")
        self.demo_btn.setToolTip(
            "Copy the bundled census-like demo (60,000 rows, 37 requests) into a fresh project "
            "in your data folder. The bundled files are never changed."
        )
        self.demo_btn.setStyleSheet("QPushButton { font-weight: bold; padding: 6px 14px; }")
        for b in (self.new_btn, self.open_btn, self.demo_btn):
            buttons.addWidget(b)
        buttons.addStretch(1)
        col.addLayout(buttons)
        col.addSpacing(12)
        col.addWidget(
            QLabel("<b>Recent projects</b> — double-click one (or select it and press Enter) to open it")
        )
        self.recent = QListWidget()
        col.addWidget(self.recent, 1)
        self.status = QLabel("")
        self.status.setWordWrap(True)
        col.addWidget(self.status)
        col.addSpacing(30)
        self.new_btn.clicked.connect(self.sigNew)
        self.open_btn.clicked.connect(self.sigOpen)
        self.demo_btn.clicked.connect(self.sigDemo)
        self.recent.itemActivated.connect(self._open_recent)

    def _open_recent(self, item: QListWidgetItem) -> None:
        path = item.data(Qt.ItemDataRole.UserRole)
        if path:  # the empty list's hint has none
            self.sigOpenPath.emit(path)

    def set_recent(self, paths: list[str]) -> None:
        self.recent.clear()
        if not paths:
            hint = QListWidgetItem(
                "No recent projects yet: create one from a table (New project…), open a .dpdesk file "
                "(Open project…), or try the demo."
            )
            hint.setFlags(Qt.ItemFlag.NoItemFlags)  # a hint, not a project: nothing to open
            self.recent.addItem(hint)
            return
        for p in paths:
            # the name, then the full path on its own line: two projects of the same name stay apart
            item = QListWidgetItem(f"{Path(p).name}\n    {p}")
            item.setData(Qt.ItemDataRole.UserRole, p)
            item.setToolTip(p)
            if not Path(p).exists():
                item.setText(f"{Path(p).name}  (missing)\n    {p}")
            self.recent.addItem(item)
