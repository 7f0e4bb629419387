"""``dpdesk.selftest`` from the source tree: it passes, and a failing step is named with exit code 1.

Run in subprocesses: the self-test owns its QApplication and silences error dialogs, which must not
leak into other tests. The wheel and the bundle run it in ``test_packaging.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

SABOTAGE = textwrap.dedent("""
    import sys
    import dpdesk.selftest as s
    s.STEPS = s.STEPS[:2] + (("boom", lambda run: s._check(False, "sabotaged on purpose")),) + s.STEPS[2:]
    sys.exit(s.main(["--self-test"]))
""")


def _python(*args: str) -> subprocess.CompletedProcess[str]:
    env = {
        k: v for k, v in os.environ.items() if k != "QT_QPA_PLATFORM"
    }  # the self-test must choose offscreen
    env.pop("DISPLAY", None)
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=300, env=env)


def test_self_test_passes_from_source_tree() -> None:
    proc = _python("-m", "dpdesk.selftest", "--verbose")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("dpdesk ") and "self-test passed" in last
    assert "(python, offscreen)" in last and "1 fresh" in last and "1 inferred" in last
    for step in (
        "platform",
        "resources",
        "project",
        "cube",
        "requests",
        "fresh",
        "inferred",
        "ledger",
        "qt",
        "window",
    ):
        assert f"ok  {step}" in proc.stdout


def test_failing_step_is_named() -> None:
    proc = _python("-c", SABOTAGE)
    assert proc.returncode == 1
    assert "self-test FAILED at step 'boom': StepFailed: sabotaged on purpose" in proc.stderr
    assert "self-test passed" not in proc.stdout
