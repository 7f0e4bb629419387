"""Events without Qt: a view connects a plain callable to the events it shows and is called when one
is emitted (on the thread that emits it: the app emits them on the GUI thread only).

>>> seen = []
>>> ev = Event("queue_changed")
>>> ev.connect(seen.append)
>>> ev.emit(("r1",))
>>> seen
[('r1',)]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, TypeVarTuple, Unpack

if TYPE_CHECKING:
    from dpdesk.store.ledger import LedgerEntry

__all__ = ["Event", "ProjectEvents"]

Ts = TypeVarTuple("Ts")


class Event(Generic[*Ts]):
    """One kind of change, carrying values of the types ``Ts``; its callbacks are called in the order
    they connected."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._callbacks: list[Callable[[Unpack[Ts]], object]] = []

    def connect(self, callback: Callable[[Unpack[Ts]], object]) -> None:
        if callback not in self._callbacks:
            self._callbacks.append(callback)

    def disconnect(self, callback: Callable[[Unpack[Ts]], object]) -> None:
        if callback in self._callbacks:
            self._callbacks.remove(callback)

    def emit(self, *args: *Ts) -> None:
        for callback in list(self._callbacks):
            callback(*args)

    def __repr__(self) -> str:
        return f"<event {self.name}: {len(self._callbacks)} callbacks>"


class ProjectEvents:
    """The events of an open project, each carrying what changed.

    - ``queue_changed(ids)``: requests added, edited, deleted or decided (``ids``; None: any of them);
    - ``entry_appended(entries)``: ledger entries recorded since the last emission, in order;
    - ``settings_changed()``: the spend policy, the declared table size or the look-ahead share;
    - ``claims_changed()``: a claim watched or unwatched, or released values moved what one reads;
    - ``loaded()``: a large project's ledger view was read (views waiting for it draw now).
    """

    def __init__(self) -> None:
        self.queue_changed: Event[tuple[str, ...] | None] = Event("queue_changed")
        self.entry_appended: Event[tuple[LedgerEntry, ...]] = Event("entry_appended")
        self.settings_changed: Event[()] = Event("settings_changed")
        self.claims_changed: Event[()] = Event("claims_changed")
        self.loaded: Event[()] = Event("loaded")
