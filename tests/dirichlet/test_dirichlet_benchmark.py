"""The benchmark's reconstruction of the notes' §3.4.1 table matches the numbers the notes print."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _load():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location(
        "dirichlet_posterior", ROOT / "benchmarks" / "dirichlet_posterior.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_notes_table_is_reproduced_from_their_formulas():
    text = _load().table_341()
    rows = {
        line.split("|")[1].strip().split(" ")[0]: line.split("|")[2:8]
        for line in text.splitlines()
        if line.startswith("| ")
    }
    # the notes' printed columns (exponential, Laplace) for 4, 3, 2, 1, 0 steps
    notes_exp = ["0.0431", "0.0786", "0.1583", "0.3408", "0.3792"]
    notes_lap = ["0.0666", "0.0993", "0.1481", "0.2210", "0.3297"]
    for step, e, lap in zip("43210", notes_exp, notes_lap):
        assert rows[step][0].strip() == e and rows[step][1].strip() == lap
    # the corrected columns keep all the mass
    assert [c.strip() for c in rows["total"][2:6]] == ["1.0000"] * 4
