"""The mouse wheel scrolls the page; it never changes a setting it passes over (issue 34, item 11).

A combo box or spin box changes its value on every wheel step under the mouse — on a scrolling panel the
curator meant to scroll and silently switched the heatmap's attribute, or a price. :func:`guard_wheel`
makes such widgets take the wheel only once they have focus (a click or Tab), and hands it to the page
otherwise, so the page scrolls on.
"""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, QEvent, QObject, Qt
from PySide6.QtWidgets import QAbstractSlider, QAbstractSpinBox, QComboBox, QWidget

_GUARDED = (QComboBox, QAbstractSpinBox, QAbstractSlider)


class _WheelGuard(QObject):
    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() != QEvent.Type.Wheel or not isinstance(watched, QWidget) or watched.hasFocus():
            return False
        parent = watched.parentWidget()
        if parent is not None:  # the page under it scrolls instead (an ignored wheel climbs to a scroll area)
            QCoreApplication.sendEvent(parent, event)
        return True


def guard_wheel(root: QWidget) -> None:
    """Guard every combo box, spin box and slider inside ``root`` (call again after adding more)."""
    guard = getattr(root, "_wheel_guard", None)
    if guard is None:
        guard = _WheelGuard(root)
        root._wheel_guard = guard  # lives as long as the widgets it guards
    for w in root.findChildren(QWidget):
        if isinstance(w, _GUARDED) and not w.property("wheelGuarded"):
            w.setFocusPolicy(Qt.FocusPolicy.StrongFocus)  # a wheel alone never gives it focus
            w.installEventFilter(guard)
            w.setProperty("wheelGuarded", True)
