"""One background task shown as a line: what it does, its progress, and a button to stop it.

A :class:`TaskLine` owns its own :class:`~dpdesk.gui.runtime.tasks.TaskRunner`, so the task it shows never
cancels another view's (an export does not stop the Audit page's table read, nor another export) and is
not cancelled by them. Its button asks the task to stop and **waits for it**: the line stays until the
worker has really stopped (its outcome, usually :class:`~dpdesk.engine.errors.Cancelled`, arrives), so
whatever the task cleans up on the way out (a temporary file) is gone when the line says so.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QThreadPool, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QWidget

from dpdesk.gui.runtime.tasks import TaskRunner, TaskState
from dpdesk.gui.widgets.progress import set_progress


class TaskLine(QWidget):
    """A label, a progress bar and a stop button for one task at a time; hidden while idle."""

    sigStopping = Signal()  # the stop button was pressed; the task's outcome is still to come

    def __init__(
        self, stop_text: str = "Cancel", parent: QWidget | None = None, pool: QThreadPool | None = None
    ) -> None:
        super().__init__(parent)
        self.runner = TaskRunner(self, pool)
        self.state: TaskState | None = None
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.label = QLabel("")
        self.bar = QProgressBar()
        self.bar.setRange(0, 1000)
        self.bar.setTextVisible(True)
        self.bar.setFixedWidth(220)
        self.stop_btn = QPushButton(stop_text)
        lay.addWidget(self.label)
        lay.addWidget(self.bar)
        lay.addWidget(self.stop_btn)
        lay.addStretch(1)
        self.runner.sigProgress.connect(lambda f: set_progress(self.bar, int(round(1000 * f))))
        self.runner.sigFinished.connect(self._finished)
        self.stop_btn.clicked.connect(self.stop)
        self.setVisible(False)

    def start(
        self,
        fn: Callable[[TaskState], Any],
        on_done: Callable[[Any], None] | None,
        on_error: Callable[[BaseException, str], None] | None,
        label: str,
    ) -> TaskState:
        """Run ``fn`` on a worker (see :meth:`TaskRunner.start`), showing ``label`` and its progress."""
        self.label.setText(label[:1].upper() + label[1:] + "…")
        self.bar.setValue(0)
        self.stop_btn.setEnabled(True)
        self.setVisible(True)
        self.state = self.runner.start(fn, on_done, on_error, label=label)
        return self.state

    def is_running(self) -> bool:
        return self.runner.is_running()

    def stop(self) -> None:
        """Ask the task to stop; its outcome still arrives (the line hides then)."""
        if self.state is None or not self.runner.is_running():
            return
        self.state.cancel()
        self.stop_btn.setEnabled(False)
        self.label.setText(f"Stopping: {self.runner.label}…")
        self.sigStopping.emit()

    def _finished(self) -> None:
        if not self.runner.is_running():
            self.state = None
            self.setVisible(False)
