"""Help → About: which dpdesk this is, under which licence, on which Qt, OpenDP, DuckDB and file format.

The facts are gathered by :func:`about_facts` (no widget needed, so a bug report can quote the same
lines: the dialog's *Copy details* button puts them on the clipboard). Versions of optional
components are read from their installed metadata (no import of DuckDB or OpenDP).
"""

from __future__ import annotations

import platform
import sys

from PySide6 import __version__ as pyside_version
from PySide6.QtCore import Qt, qVersion
from PySide6.QtGui import QGuiApplication, QIcon
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QGridLayout, QLabel, QVBoxLayout, QWidget

from dpdesk import __version__
from dpdesk.appdata.bundled import resource
from dpdesk.gui.widgets.screen_fit import keep_on_screen

LICENCE = "MIT License"
SUMMARY = (
    "Answers counting queries under differential privacy, infers what it can from answers already "
    "released, and keeps a verifiable ledger of the privacy budget spent."
)


def _installed(distribution: str) -> str:
    from importlib import metadata  # imported when the dialog opens: it is not free at start-up

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"


def about_facts() -> tuple[tuple[str, str], ...]:
    """``(label, value)`` pairs: dpdesk's version and licence, its main components, the file format."""
    from dpdesk.store.db import APPLICATION_ID, FORMAT_VERSION

    marker = APPLICATION_ID.to_bytes(4, "big").decode("ascii")
    frozen = " (standalone bundle)" if getattr(sys, "frozen", False) else ""
    return (
        ("dpdesk", f"{__version__}{frozen}"),
        ("Licence", LICENCE),
        ("Project file format", f"{FORMAT_VERSION} (SQLite, application id {marker})"),
        ("Qt", f"{qVersion()} (PySide6 {pyside_version})"),
        ("OpenDP", _installed("opendp")),
        ("DuckDB", _installed("duckdb")),
        ("Python", f"{platform.python_version()} on {platform.system()} {platform.machine()}"),
    )


def facts_text(facts: tuple[tuple[str, str], ...]) -> str:
    return "\n".join(f"{label}: {value}" for label, value in facts)


class AboutDialog(QDialog):
    """The About box: icon, name, version, a one-line summary, the component versions, the licence."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        keep_on_screen(self)
        self.setWindowTitle("About dpdesk")
        self.facts = about_facts()
        layout = QVBoxLayout(self)
        head = QLabel(f"<h2>dpdesk {__version__}</h2><p>{SUMMARY}</p>")
        head.setWordWrap(True)
        try:
            icon = QLabel()
            icon.setPixmap(QIcon(str(resource("icons", "dpdesk.svg"))).pixmap(64, 64))
            layout.addWidget(icon, alignment=Qt.AlignmentFlag.AlignHCenter)
        except FileNotFoundError:
            pass
        layout.addWidget(head)
        grid = QGridLayout()
        self.values: dict[str, QLabel] = {}
        for row, (label, value) in enumerate(self.facts):
            grid.addWidget(QLabel(f"{label}:"), row, 0, Qt.AlignmentFlag.AlignRight)
            shown = QLabel(value)
            shown.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            grid.addWidget(shown, row, 1)
            self.values[label] = shown
        layout.addLayout(grid)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.copy_btn = buttons.addButton("Copy details", QDialogButtonBox.ButtonRole.ActionRole)
        self.copy_btn.clicked.connect(self.copy_details)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.setMinimumWidth(440)

    def copy_details(self) -> None:
        """Put the facts on the clipboard, one ``label: value`` line each (for a bug report)."""
        QGuiApplication.clipboard().setText(facts_text(self.facts))


def show_about(window: QWidget) -> None:
    """Help → About dpdesk (the menu row is in gui/app/menus.py; on macOS Qt moves it to the application menu)."""
    dialog = AboutDialog(window)
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    dialog.open()  # window-modal, does not block the caller
