"""What the front ends share and the store does not need: bundled files, demo projects, user folders.

Qt-free, so the GUI, the command line and tests use the same code. It sits above the store (a demo
project is a store project) and below ``gui`` and ``commands``.
"""
