"""The one confirmation every spend of privacy budget goes through (issue 34, item 1).

A fresh count, a counter-offer the requester accepted, a max/argmax, a posterior of proportions, a
partition release and a batch all ask here, in the same words: what is released, the privacy loss it
spends, the system cost before → after and what is left, and that it cannot be undone. *Cancel* is the
default button, so Enter or Escape never spends; the dialog wraps its text to fit a laptop's screen.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QPushButton, QVBoxLayout, QWidget

from dpdesk.gui.widgets.screen_fit import available_area, keep_on_screen, scrolling

TITLE = "Spend privacy budget"
WIDTH = 560  # wide enough for a sentence per line, narrow enough for any screen dpdesk supports


def spend_text(
    what: str, spends: str, cost: float, cost_after: float, total: float, notes: Sequence[str] = ()
) -> tuple[str, str]:
    """The confirmation's heading and body for a release that spends budget.

    ``what`` names the release ("a fresh noisy answer to q37"), ``spends`` the privacy loss it charges
    ("α = 0.0768", "α = 0.1 on every cell of its box"); ``cost`` and ``cost_after`` are the system cost
    before and after it (the engine's numbers) of the ``total`` budget; ``notes`` are further lines (the
    spend policy, watched claims).
    """
    body = [
        f"System cost (the largest privacy loss of any cell): {cost:.6g} → {cost_after:.6g} of the total "
        f"budget {total:g}; remaining {total - cost:.6g} → {total - cost_after:.6g}.",
        *notes,
        "This cannot be undone: the release is recorded in the ledger before it is shown.",
    ]
    return f"Release {what}? It spends {spends}.", "\n\n".join(n for n in body if n)


class SpendConfirmation(QDialog):
    """Heading, wrapped body, *Spend and release* and *Cancel* (the default)."""

    def __init__(self, heading: str, body: str, parent: QWidget | None = None, title: str = TITLE) -> None:
        super().__init__(parent)
        keep_on_screen(self)
        self.setWindowTitle(title)
        width = min(WIDTH, available_area(self).width() - 40)
        lay = QVBoxLayout(self)
        self.heading = QLabel(heading)
        self.heading.setWordWrap(True)
        self.heading.setStyleSheet("font-weight: bold;")
        self.body = QLabel(body)
        self.body.setWordWrap(True)
        self.body.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.body.setFixedWidth(width - 30)
        self.heading.setFixedWidth(width - 30)
        lay.addWidget(self.heading)
        lay.addWidget(scrolling(self.body, 80), 1)
        self.buttons = QDialogButtonBox()
        self.spend_btn = QPushButton("Spend and release")
        self.spend_btn.setAutoDefault(False)
        self.cancel_btn = self.buttons.addButton(QDialogButtonBox.StandardButton.Cancel)
        self.buttons.addButton(self.spend_btn, QDialogButtonBox.ButtonRole.AcceptRole)
        self.cancel_btn.setDefault(True)
        self.cancel_btn.setFocus()
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        lay.addWidget(self.buttons)
        self.setMaximumHeight(available_area(self).height() - 40)
