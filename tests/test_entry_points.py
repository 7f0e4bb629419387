"""Each installed entry point, once, in a real process: ``python -m dpdesk``, ``dpdesk-cli``, ``dpdesk``.

Everything else runs the command line in-process (tests/cli_helpers.py); these check the wiring that
only a real process shows: the console scripts exist, reach :func:`dpdesk.cli.main` and exit with its code.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAPER = ROOT / "resources" / "examples" / "paper.history.json"
BIN = Path(sys.executable).parent


def _run(cmd: list[str], **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        cmd, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, env={**os.environ, **env}
    )


def test_python_m_dpdesk_answers_the_worked_example():
    r = _run(
        [
            sys.executable,
            "-m",
            "dpdesk",
            "assess",
            "--history",
            str(PAPER),
            "--query",
            "[1,0,1,0]",
            "--eps",
            "60",
            "--delta",
            "0.05",
            "--json",
        ]
    )
    assert r.returncode == 0, r.stderr
    assert round(json.loads(r.stdout)["estimate"], 1) == 42.0  # the paper's θ̂


def test_dpdesk_cli_script_reports_bad_input_in_one_line(tmp_path):
    r = _run([str(BIN / "dpdesk-cli"), "verify", str(tmp_path / "missing.dpdesk")])
    assert r.returncode == 2
    assert (
        r.stderr.count("\n") == 1 and r.stderr.startswith("dpdesk: error:") and "missing.dpdesk" in r.stderr
    )


def test_dpdesk_script_without_a_subcommand_starts_the_window_launcher():
    # with no display and no Qt platform chosen, the launcher says so instead of failing inside Qt
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    r = subprocess.run(
        [str(BIN / "dpdesk"), "--demo"],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        env=env,
    )
    assert r.returncode == 2
    assert "no display found" in r.stderr and "Traceback" not in r.stderr
    r = _run([str(BIN / "dpdesk"), "--version"])
    assert r.returncode == 0 and r.stdout.startswith("dpdesk ")


PROBE = """
import json, os, sys
from dpdesk.cli import main
import contextlib, io
with contextlib.redirect_stdout(io.StringIO()):
    rc = main(sys.argv[1:])
heavy = sorted(m for m in ("PySide6", "duckdb", "opendp", "pandas", "pyarrow", "pyspark", "psycopg") if m in sys.modules)
print(json.dumps({"rc": rc, "blas": [os.environ.get(v) for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")],
                  "heavy": heavy}))
"""


@pytest.mark.parametrize("given", [None, "3"])
def test_the_command_line_pins_blas_threads_unless_set_and_imports_no_heavy_engine(given):
    # one BLAS thread unless the user set it (set before numpy loads: docs/performance.md "BLAS threads");
    # and a command that needs neither the window nor a data source loads neither
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    if given is not None:
        env["OPENBLAS_NUM_THREADS"] = given
    r = subprocess.run(
        [
            sys.executable,
            "-c",
            PROBE,
            "assess",
            "--history",
            str(PAPER),
            "--query",
            "[1,0,1,0]",
            "--eps",
            "60",
            "--delta",
            "0.05",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        env=env,
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["rc"] == 0
    assert out["blas"] == [given or "1", "1"]
    assert out["heavy"] == []
