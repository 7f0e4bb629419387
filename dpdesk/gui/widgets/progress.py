"""Progress bars that never repaint the window from inside a handler."""

from __future__ import annotations

from PySide6.QtWidgets import QProgressBar

__all__ = ["set_progress"]


def set_progress(bar: QProgressBar, value: int) -> None:
    """Set a progress bar's value and let the event loop paint it.

    ``QProgressBar.setValue`` repaints at once, and an immediate repaint paints every region of the window
    waiting to be painted with it (plots just redrawn included), inside the caller's handler; with updates
    off while the value changes, the bar is painted with the rest, when the event loop gets to it.
    """
    if bar.value() == value:
        return
    bar.setUpdatesEnabled(False)
    bar.setValue(value)
    bar.setUpdatesEnabled(True)  # schedules the bar's paint (never a repaint now)
