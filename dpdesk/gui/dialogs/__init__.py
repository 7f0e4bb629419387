"""Every message box the app shows goes through these functions, so tests can intercept them.

Tests replace ``show_error``, ``show_info``, ``confirm``, ``confirm_spend``, ``ask_text`` or ``choose`` with ``monkeypatch.setattr`` on this
module; callers always call them as ``dialogs.show_error(...)`` for that reason. Errors say what went
wrong and what to do. :func:`install_excepthook` turns any uncaught exception into such a dialog
instead of a crash or a frozen window.
"""

from __future__ import annotations

import sys
import traceback
from types import TracebackType

from PySide6.QtWidgets import QApplication, QMessageBox, QWidget

from dpdesk.engine.errors import Cancelled, DpdeskError, SchemaError


def _parent(parent: QWidget | None) -> QWidget | None:
    return parent if parent is not None else QApplication.activeWindow()


def show_error(parent: QWidget | None, title: str, message: str, detail: str = "") -> None:
    box = QMessageBox(
        QMessageBox.Icon.Critical, title, message, QMessageBox.StandardButton.Ok, _parent(parent)
    )
    if detail:
        box.setDetailedText(detail)
    box.exec()


def show_info(parent: QWidget | None, title: str, message: str) -> None:
    QMessageBox.information(_parent(parent), title, message)


def confirm(parent: QWidget | None, title: str, message: str) -> bool:
    answer = QMessageBox.question(
        _parent(parent),
        title,
        message,
        QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel,
        QMessageBox.StandardButton.Cancel,
    )
    return answer == QMessageBox.StandardButton.Yes


def confirm_spend(parent: QWidget | None, heading: str, body: str) -> bool:
    """The one confirmation before privacy budget is spent (:mod:`dpdesk.gui.dialogs.spend_dialog`); Cancel is
    the default. ``heading`` and ``body`` come from :func:`~dpdesk.gui.dialogs.spend_dialog.spend_text`."""
    from dpdesk.gui.dialogs.spend_dialog import SpendConfirmation

    dlg = SpendConfirmation(heading, body, _parent(parent))
    return dlg.exec() == SpendConfirmation.DialogCode.Accepted


def ask_text(parent: QWidget | None, title: str, label: str, text: str = "") -> str | None:
    """A multi-line note (None: cancelled)."""
    from PySide6.QtWidgets import QInputDialog

    value, ok = QInputDialog.getMultiLineText(_parent(parent), title, label, text)
    return value.strip() if ok else None


def choose(parent: QWidget | None, title: str, message: str, options: list[str]) -> int | None:
    """The index of the option chosen (None: cancelled); long options wrap (:mod:`dpdesk.gui.dialogs.choice_dialog`)."""
    from dpdesk.gui.dialogs.choice_dialog import ChoiceDialog

    dlg = ChoiceDialog(title, message, options, _parent(parent))
    return dlg.chosen if dlg.exec() == ChoiceDialog.DialogCode.Accepted else None


def explain(exc: BaseException) -> tuple[str, str]:
    """A title and a curator-facing message for ``exc``."""
    if isinstance(exc, SchemaError):  # before any project exists there is nothing to release or spend
        return "Schema problem", f"{exc}\n\nCorrect the schema and try again; nothing was created."
    if isinstance(exc, DpdeskError):
        return "Cannot do that", f"{exc}\n\nNothing was released or spent. Correct the input and try again."
    if isinstance(exc, OSError):
        where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
        return "File problem", f"{exc.strerror or exc}{where}\n\nCheck that the file exists and is readable."
    return (
        "Unexpected error",
        f"{type(exc).__name__}: {exc}\n\nThe project file is unchanged unless a release was confirmed. "
        "Save the details below and report them; you can keep working.",
    )


def report_exception(exc: BaseException, trace: str = "", parent: QWidget | None = None) -> None:
    if isinstance(exc, Cancelled):
        return
    title, message = explain(exc)
    show_error(parent, title, message, trace if not isinstance(exc, DpdeskError) else "")


def _hook(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
    if issubclass(kind, KeyboardInterrupt):
        sys.__excepthook__(kind, exc, tb)
        return
    trace = "".join(traceback.format_exception(kind, exc, tb))
    sys.stderr.write(trace)
    try:
        report_exception(exc, trace)
    except Exception:
        pass


def install_excepthook() -> None:
    """Show uncaught exceptions (e.g. inside slots) as dialogs rather than aborting."""
    sys.excepthook = _hook
