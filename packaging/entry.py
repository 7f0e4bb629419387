"""PyInstaller's entry script for the bundle: exactly what the installed `dpdesk` script runs.

It lives outside the dpdesk package so that PyInstaller analyses the *installed* dpdesk (from the build
venv's site-packages), never the source tree.
"""

from dpdesk.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
