"""The one QApplication and where the window keeps its settings.

Every way of starting Qt — the ``dpdesk`` window, screenshots, the standalone views, the self-test —
goes through :func:`application`, so each gets dpdesk's names, icon, error dialogs and message filter.
"""

from __future__ import annotations

import sys

ORG = "dpdesk"
APP = "dpdesk"


def application():
    """The QApplication (created once) with dpdesk's names, icon and exception dialogs."""
    from PySide6.QtGui import QIcon
    from PySide6.QtWidgets import QApplication

    from dpdesk.appdata.bundled import resource
    from dpdesk.gui.app.messages import quiet_offscreen
    from dpdesk.gui.dialogs import install_excepthook

    app = QApplication.instance()
    if app is None:
        app = QApplication(sys.argv[:1])
    app.setOrganizationName(ORG)
    app.setApplicationName(APP)
    try:
        app.setWindowIcon(QIcon(str(resource("icons", "dpdesk.svg"))))
    except FileNotFoundError:
        pass
    install_excepthook()
    quiet_offscreen()
    return app


def settings_at(path: str | None):
    """QSettings in an INI file at ``path`` (tests, screenshots) or the platform's usual place."""
    from PySide6.QtCore import QSettings

    if path:
        return QSettings(path, QSettings.Format.IniFormat)
    return QSettings(ORG, APP)
