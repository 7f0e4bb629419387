"""The application: the QApplication, launch options, the main window and its menus, screenshots and
the one-view preview."""
