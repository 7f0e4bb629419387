"""Test-wide setup: Qt runs offscreen and never touches the user's runtime directory."""

import os
import tempfile

if not os.environ.get("QT_QPA_PLATFORM"):
    os.environ["QT_QPA_PLATFORM"] = "offscreen"
if not os.environ.get("XDG_RUNTIME_DIR"):
    os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="dpdesk-xdg-")
    os.chmod(os.environ["XDG_RUNTIME_DIR"], 0o700)

# Property tests are reproducible: the same examples on every machine and every run (CI starts from a
# clean clone with no example database), so a green run here is a green run there.
from hypothesis import settings  # noqa: E402

settings.register_profile("dpdesk", derandomize=True, database=None, deadline=None)
settings.load_profile("dpdesk")

# shared test helpers (tests/stats_helpers.py) import by name under --import-mode=importlib
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
