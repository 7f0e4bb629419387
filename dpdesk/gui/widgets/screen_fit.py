"""Every window of the app stays inside the screen area it can use (issue 34, item 2).

A laptop screen leaves about 1024×700 pixels to a window once the desktop's panels are counted.
:func:`fit_window` sizes a top-level window to the *available* area of its screen (its frame included)
and moves it inside; :func:`initial_size` is the window's first size on that screen. :class:`_FitOnShow`,
installed on each window by :func:`keep_on_screen`, does the same for every dialog and message box as it is
shown, so no OK or Cancel lands off the screen. A window never grows past the area either: its contents scroll
(the main window's pages, long dialogs) instead of pushing its edges out.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QRect, QSize, QTimer
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QFrame, QLabel, QLayout, QScrollArea, QWidget

# a frame the window manager has not reported yet (before the first show): title bar and borders
_FRAME_GUESS = QSize(8, 36)


def available_area(widget: QWidget | None = None) -> QRect:
    """The screen area a window may use (the desktop's panels and docks excluded)."""
    screen = None
    if widget is not None:
        parent = widget.parentWidget()
        anchor = parent.window() if parent is not None else widget
        screen = anchor.screen() if anchor is not None else None
    screen = screen or QGuiApplication.primaryScreen()
    return screen.availableGeometry() if screen is not None else QRect(0, 0, 1024, 700)


def _frame_extra(widget: QWidget) -> QSize:
    frame, inner = QWidget.frameGeometry(widget), QWidget.geometry(widget)
    visible = QWidget.isVisible(widget)
    if visible and frame.size() != inner.size():
        return frame.size() - inner.size()
    return _FRAME_GUESS if not visible else QSize(0, 0)


def initial_size(widget: QWidget, preferred: QSize) -> QSize:
    """``preferred``, made small enough that the window and its frame fit the available area."""
    area, extra = available_area(widget), _frame_extra(widget)
    return QSize(
        min(preferred.width(), area.width() - extra.width()),
        min(preferred.height(), area.height() - extra.height()),
    )


def fit_window(widget: QWidget) -> None:
    """Shrink ``widget`` (a top-level window) to the available area if it is larger, and move it inside.

    A window whose minimum size exceeds the area keeps its minimum (its layout must scroll instead; the
    tests check that none does at 1024×700) but is still moved to the area's top-left corner.
    """
    if widget.isMaximized() or widget.isFullScreen():
        return
    # QWidget's own methods: a dialog may name an attribute of its own ``size`` (a spin box)
    area, extra = available_area(widget), _frame_extra(widget)
    size = QWidget.size(widget)
    want = QSize(
        max(min(size.width(), area.width() - extra.width()), QWidget.minimumWidth(widget)),
        max(min(size.height(), area.height() - extra.height()), QWidget.minimumHeight(widget)),
    )
    if want != size:
        QWidget.resize(widget, want)
    frame = QWidget.frameGeometry(widget)
    if not frame.isValid():
        return
    x = min(max(frame.x(), area.left()), max(area.left(), area.right() + 1 - frame.width()))
    y = min(max(frame.y(), area.top()), max(area.top(), area.bottom() + 1 - frame.height()))
    if (x, y) != (frame.x(), frame.y()):
        QWidget.move(widget, x, y)


class _FitOnShow(QObject):
    """Fits the one window it watches each time that window is shown."""

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Show and isinstance(watched, QWidget):
            fit_window(watched)
            # the frame is known once the window manager has placed the window: fit again then
            QTimer.singleShot(0, self, lambda: fit_window(watched))
        return False


def keep_on_screen(window: QWidget) -> QWidget:
    """Fit ``window`` (a dialog or the main window) to the available screen area whenever it is shown.

    One filter per window, owned by it (an application-wide filter would see every event of the app).
    """
    fitter = _FitOnShow(window)
    window.installEventFilter(fitter)
    window._screen_fitter = fitter  # its Python side lives as long as the window (it overrides a virtual)
    return window


def scrolling(content: QWidget | QLayout, min_height: int = 120) -> QScrollArea:
    """``content`` in a frameless scroll area that asks for little height: a dialog's form scrolls on a short
    screen instead of pushing the dialog's buttons off it."""
    if isinstance(content, QLayout):
        holder = QWidget()
        holder.setLayout(content)
        content = holder
    area = QScrollArea()
    area.setWidgetResizable(True)
    area.setFrameShape(QFrame.Shape.NoFrame)
    area.setWidget(content)
    area.setMinimumHeight(max(0, min(min_height, content.sizeHint().height())))
    return area


def wrapped_min_height(layout: QLayout, width: int) -> int:
    """The least height a vertical ``layout`` needs at ``width``: each shown item's minimum, or, for a
    word-wrapped label (or a row holding one), its height at that width — Qt's own minimum counts a wrapped
    label as one line, so a splitter would squeeze the panel until its rows overlap."""
    m = layout.contentsMargins()
    inner = max(1, width - m.left() - m.right())
    heights = []
    for i in range(layout.count()):
        item = layout.itemAt(i)
        if item is None or item.isEmpty():  # a hidden widget or an empty row takes no room
            continue
        h = item.minimumSize().height()
        widget = item.widget()
        # a row, or a label: its wrapped lines; a composite widget scrolls its own words (its minimum holds)
        if item.hasHeightForWidth() and (widget is None or isinstance(widget, QLabel)):
            h = max(h, item.heightForWidth(inner))
        heights.append(h)
    spacing = max(layout.spacing(), 0)
    return sum(heights) + spacing * max(0, len(heights) - 1) + m.top() + m.bottom()
