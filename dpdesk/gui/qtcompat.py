"""Work around a reference-counting bug of PySide6 6.12.0 on Python 3.11.

Measured here: with PySide6-Essentials 6.12.0 on CPython 3.11, every call of a Qt method that returns
nothing (``QPainter.drawLine``, ``QPen.setWidth``, …) drops one reference to ``None`` that it never
took, and some calls do the same to ``True``/``False``. On Python ≥ 3.12 these objects are immortal
and nothing happens; on 3.11 their count reaches zero after a few thousand paints and the interpreter
aborts (``Fatal Python error: none_dealloc`` / ``bool_dealloc``). :func:`guard_singletons` detects the
leak with a probe and, only if present, gives the three singletons a reference count they cannot
exhaust. Remove this module once PySide6 is pinned to a version without the bug.
"""

from __future__ import annotations

import ctypes
import sys

_GUARDED = False
_HEADROOM = 1 << 40


def leaks_references() -> bool:
    """True if a void Qt call lowers ``None``'s reference count (the PySide6 6.12.0 bug)."""
    from PySide6.QtGui import QPen

    pen = QPen()
    before = sys.getrefcount(None)
    for _ in range(50):
        pen.setWidth(1)
    return sys.getrefcount(None) < before - 25


def guard_singletons() -> bool:
    """Apply the workaround if this PySide6 needs it; returns whether it was applied."""
    global _GUARDED
    if _GUARDED or sys.version_info >= (3, 12) or sys.implementation.name != "cpython":
        return _GUARDED
    if not leaks_references():
        return False
    for obj in (None, True, False):
        # ob_refcnt is the first field of every CPython object
        ctypes.c_ssize_t.from_address(id(obj)).value += _HEADROOM
    _GUARDED = True
    return True
