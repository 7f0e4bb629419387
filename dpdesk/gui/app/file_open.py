"""Documents handed over by the platform after start: macOS sends a ``QFileOpenEvent``, not argv.

When Finder opens a ``.dpdesk`` file with dpdesk (a double-click, or a drop on the Dock icon) the app
is started without the path on its command line and then receives a ``QEvent.FileOpen`` on the
application object, also while it is already running. This filter turns that event into the same
call a project path on the command line makes. Other platforms never send it, so it is harmless there.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QFileOpenEvent
from PySide6.QtWidgets import QApplication


class FileOpenHandler(QObject):
    """An application event filter that opens each file in a ``QFileOpenEvent`` with ``open_path``."""

    def __init__(self, open_path: Callable[[str], object], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.open_path = open_path

    @classmethod
    def install(
        cls, app: QApplication, open_path: Callable[[str], object], owner: QObject
    ) -> FileOpenHandler:
        """Filter ``app``'s events for as long as ``owner`` (the window that opens the files) lives."""
        handler = cls(open_path, owner)  # a deleted filter is removed from the application by Qt itself
        app.installEventFilter(handler)
        return handler

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() != QEvent.Type.FileOpen or not isinstance(event, QFileOpenEvent):
            return False
        path = event.file() or event.url().toLocalFile()
        if not path:
            return False  # not a local file (a remote URL): nothing dpdesk can open
        self.open_path(path)
        return True
