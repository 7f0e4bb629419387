"""The one background-task helper every view uses (after Orange3's ``ConcurrentWidgetMixin``).

A :class:`TaskRunner` runs one function at a time on Qt's thread pool. The function receives a
:class:`TaskState` whose ``progress(fraction)`` and ``cancelled()`` are the plain callbacks the engine
and sources accept. Starting a task cancels the previous one and drops its result; progress is polled
on the GUI thread every 50 ms (so a chatty worker cannot flood the event loop); the result or the
exception arrives on the GUI thread through a relay object that lives there (PLATFORM.md: PySide6
would otherwise run the connected callable in the worker thread). ``shutdown()`` cancels and waits.
"""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QObject, QRunnable, Qt, QThreadPool, QTimer, Signal, Slot


class TaskState:
    """What a running task sees: report progress, ask whether to stop."""

    def __init__(self, task_id: int) -> None:
        self.task_id = task_id
        self._cancel = threading.Event()
        self._progress = 0.0

    def progress(self, fraction: float) -> None:
        self._progress = min(1.0, max(0.0, float(fraction)))

    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def cancel(self) -> None:
        self._cancel.set()

    @property
    def fraction(self) -> float:
        return self._progress


@dataclass(frozen=True)
class _Outcome:
    task_id: int
    ok: bool
    value: Any
    trace: str = ""


class _Relay(QObject):
    """Lives in the GUI thread; workers emit on it, the runner's slot runs in the GUI thread."""

    sigOutcome = Signal(object)


class _Job(QRunnable):
    def __init__(self, fn: Callable[..., Any], state: TaskState, relay: _Relay) -> None:
        super().__init__()
        self.setAutoDelete(True)
        self._fn, self._state, self._relay = fn, state, relay

    def run(self) -> None:
        try:
            out = _Outcome(self._state.task_id, True, self._fn(self._state))
        except BaseException as exc:
            out = _Outcome(self._state.task_id, False, exc, traceback.format_exc())
        self._relay.sigOutcome.emit(out)


class TaskRunner(QObject):
    """Runs one background function at a time for a view; see the module docstring."""

    sigStarted = Signal(str)  # the task's label
    sigProgress = Signal(float)  # 0..1, throttled
    sigFinished = Signal()  # after on_done / on_error of the current task ran (or it was cancelled)

    _pool: QThreadPool | None = None

    def __init__(self, parent: QObject | None = None, pool: QThreadPool | None = None) -> None:
        """``pool``: a thread pool of its own (default: the one all runners share). A task that may outlive
        the views — saving a closed project's cache — runs on its own pool, so the others' ``shutdown``
        (which waits for their pool) does not wait for it."""
        super().__init__(parent)
        self._own_pool = pool
        self._relay = _Relay(self)
        self._relay.sigOutcome.connect(self._on_outcome, Qt.ConnectionType.QueuedConnection)
        self._timer = QTimer(self)
        self._timer.setInterval(50)
        self._timer.timeout.connect(self._poll)
        self._next_id = 0
        self._state: TaskState | None = None
        self._callbacks: tuple[Callable[[Any], None] | None, Callable[[BaseException, str], None] | None] = (
            None,
            None,
        )
        self.label = ""

    @classmethod
    def pool(cls) -> QThreadPool:
        if cls._pool is None:
            cls._pool = QThreadPool()
            cls._pool.setMaxThreadCount(4)
        return cls._pool

    def start(
        self,
        fn: Callable[[TaskState], Any],
        on_done: Callable[[Any], None] | None = None,
        on_error: Callable[[BaseException, str], None] | None = None,
        label: str = "",
    ) -> TaskState:
        """Run ``fn(state)`` off the GUI thread; cancels whatever this runner was doing."""
        self.cancel()
        self._next_id += 1
        state = TaskState(self._next_id)
        self._state = state
        self._callbacks = (on_done, on_error)
        self.label = label
        self.sigStarted.emit(label)
        self.sigProgress.emit(0.0)
        self._timer.start()
        (self._own_pool or self.pool()).start(_Job(fn, state, self._relay))
        return state

    def cancel(self) -> None:
        """Ask the running task to stop; its result, if any, is dropped."""
        if self._state is not None:
            self._state.cancel()
            self._state = None
            self._timer.stop()
            self.sigFinished.emit()

    def is_running(self) -> bool:
        return self._state is not None

    def shutdown(self, timeout_ms: int = 5000) -> None:
        self.cancel()
        (self._own_pool or self.pool()).waitForDone(timeout_ms)

    @Slot()
    def _poll(self) -> None:
        if self._state is not None:
            self.sigProgress.emit(self._state.fraction)

    @Slot(object)
    def _on_outcome(self, out: _Outcome) -> None:
        if self._state is None or out.task_id != self._state.task_id:
            return  # a cancelled or superseded task: drop it
        self._state = None
        self._timer.stop()
        on_done, on_error = self._callbacks
        self._callbacks = (None, None)
        try:
            if out.ok:
                self.sigProgress.emit(1.0)
                if on_done is not None:
                    on_done(out.value)
            elif on_error is not None:
                on_error(out.value, out.trace)
            else:
                from dpdesk.gui import dialogs

                dialogs.report_exception(out.value, out.trace)
        finally:
            self.sigFinished.emit()
