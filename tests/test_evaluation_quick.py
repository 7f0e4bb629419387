"""The evaluation pipeline (benchmarks/eval_all.py --quick) produces its tables and figures.

This checks the pipeline, not the numbers: small cubes, few requests, into a temporary directory.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("matplotlib")


@pytest.mark.slow
def test_quick_evaluation_writes_tables_and_figures(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "eval_all.py"),
            "--quick",
            "--out",
            str(tmp_path),
            "--jobs",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    md = (tmp_path / "evaluation.md").read_text()
    for heading in (
        "## Bounded setting",
        "## Unbounded setting",
        "## §6.2 BLUE running time",
        "## §6.3 Posterior",
    ):
        assert heading in md
    for system in (
        "baseline",
        "improved baseline",
        "OLS",
        "paper inference",
        "dpdesk",
        "dpdesk + bounds",
        "dpdesk + pacing",
        "dpdesk + pacing + bounds",
    ):
        assert f"| {system} |" in md
    bounded = md[md.index("## Bounded setting") : md.index("## Unbounded setting")]
    unbounded = md[md.index("## Unbounded setting") : md.index("## §6.2")]
    assert "| dpdesk + pacing |" in bounded and "pacing" not in unbounded  # a policy paces a finite budget
    assert "**Bounded setting, in short:** dpdesk + pacing answered ×" in md
    assert "Mode: **QUICK" in md
    for fig in ("eval_bounded.png", "eval_unbounded.png", "eval_blue.png", "eval_posterior.png"):
        png = tmp_path / "figures" / fig
        assert png.exists() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"figures/{fig}" in md
