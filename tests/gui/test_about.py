"""Help → About: the real dialog from the real menu names dpdesk's version, licence, components and file format."""

from __future__ import annotations

from importlib import metadata


def test_help_about_names_versions_licence_and_file_format(qtbot, settings, tmp_path):
    from PySide6.QtCore import qVersion
    from PySide6.QtWidgets import QApplication

    from dpdesk import __version__
    from dpdesk.gui.app.main_window import MainWindow
    from dpdesk.gui.dialogs.about_dialog import AboutDialog
    from dpdesk.store.db import FORMAT_VERSION

    win = MainWindow(settings, demo_folder=tmp_path)
    qtbot.addWidget(win)
    win.show()
    menus = {a.text().replace("&", ""): a.menu() for a in win.menuBar().actions()}
    about = [a for a in menus["Help"].actions() if a.text().replace("&", "") == "About dpdesk"]
    assert len(about) == 1
    about[0].trigger()
    qtbot.waitUntil(lambda: win.findChild(AboutDialog) is not None and win.findChild(AboutDialog).isVisible())
    dialog = win.findChild(AboutDialog)
    shown = {label: w.text() for label, w in dialog.values.items()}
    assert shown["dpdesk"].startswith(__version__)
    assert shown["Licence"] == "MIT License"
    assert shown["Qt"].startswith(qVersion())
    assert shown["OpenDP"] == metadata.version("opendp")
    assert shown["DuckDB"] == metadata.version("duckdb")
    assert (
        shown["Project file format"].startswith(f"{FORMAT_VERSION} ")
        and "DPDK" in shown["Project file format"]
    )
    dialog.copy_btn.click()
    copied = QApplication.clipboard().text().splitlines()
    assert f"OpenDP: {metadata.version('opendp')}" in copied and len(copied) == len(shown)
    dialog.close()
    win.close()
