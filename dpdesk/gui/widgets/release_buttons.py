"""The button row of a dialog that prices a release before making it: Preview, the release, Close."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QDialog, QHBoxLayout, QPushButton


def release_buttons(
    dialog: QDialog,
    release_text: str,
    on_preview: Callable[[], object],
    on_release: Callable[[], object],
) -> tuple[QHBoxLayout, QPushButton, QPushButton]:
    """``(row, preview, release)``: right-aligned, the release button off until a preview enables it."""
    preview, release, close = QPushButton("Preview"), QPushButton(release_text), QPushButton("Close")
    release.setEnabled(False)
    row = QHBoxLayout()
    row.addStretch(1)
    for b in (preview, release, close):
        row.addWidget(b)
    preview.clicked.connect(on_preview)
    release.clicked.connect(on_release)
    close.clicked.connect(dialog.reject)
    return row, preview, release
