"""Views subscribe to the model's events (:mod:`dpdesk.gui.model.events`) through :func:`subscribe`: the
view's slot is called when one of the events it shows is emitted, and the subscription ends with the
widget (a closed page is never called again)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from PySide6.QtWidgets import QWidget

from dpdesk.gui.model.events import Event

__all__ = ["subscribe"]


def subscribe(
    widget: QWidget, events: Iterable[Event[*tuple[Any, ...]]], slot: Callable[..., object]
) -> None:
    """Call ``slot(*args)`` whenever one of ``events`` is emitted, for as long as ``widget`` lives."""
    events = tuple(events)
    alive = [True]

    def heard(*args: Any) -> None:  # whatever the events carry
        if alive[0]:
            slot(*args)

    for event in events:
        event.connect(heard)

    def gone(*_args: object) -> None:
        alive[0] = False
        for event in events:
            event.disconnect(heard)

    widget.destroyed.connect(gone)
