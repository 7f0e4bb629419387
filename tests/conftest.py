"""Test-wide setup: Qt runs offscreen and never touches the user's runtime directory."""

import os
import tempfile

if not os.environ.get("QT_QPA_PLATFORM"):
    os.environ["QT_QPA_PLATFORM"] = "offscreen"
if not os.environ.get("XDG_RUNTIME_DIR"):
    os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="dpdesk-xdg-")
    os.chmod(os.environ["XDG_RUNTIME_DIR"], 0o700)
