"""Qt's own log messages: drop the offscreen plugin's harmless notice, pass everything else on."""

from __future__ import annotations

import sys

_previous_handler = None


def quiet_offscreen() -> None:
    """Drop the offscreen plugin's harmless 'propagateSizeHints' notice (PLATFORM.md); pass the rest on.

    Installed once per process; a handler installed before it still receives the other messages.
    """
    global _previous_handler
    from PySide6.QtCore import qInstallMessageHandler

    if _previous_handler is not None:
        return

    def handler(mode, context, message):
        if "propagateSizeHints" in message:
            return
        if callable(_previous_handler):
            _previous_handler(mode, context, message)
        else:
            sys.stderr.write(message + "\n")

    _previous_handler = qInstallMessageHandler(handler) or True
