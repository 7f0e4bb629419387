"""The non-interactive release evaluation (benchmarks/eval_noninteractive.py --quick) and the seed's max mechanism."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

pytest.importorskip("matplotlib")

from evaluation import seed_max as SM  # noqa: E402


def test_the_seed_max_mechanism_is_a_distribution_and_is_not_private():
    p = SM.seed_max_distribution([8, 9, 10], 20, 2, 0.1)
    assert p.sum() == pytest.approx(1.0) and np.all(p > 0)
    worst, (table, added) = SM.worst_log_ratio(SM.all_small_tables(20, 3), 20, 2, 0.1, "data")
    assert worst > 0.1 + 0.05  # exceeds α = 0.1 by far: the exact output laws of two neighbours
    p0 = SM.seed_max_distribution(list(table), 20, 2, 0.1)
    p1 = SM.seed_max_distribution(list(table) + [added], 20, 2, 0.1)
    assert np.max(np.abs(np.log(p1 / p0))) == pytest.approx(worst)
    assert SM.worst_log_ratio(SM.all_small_tables(20, 2), 20, 2, 0.1, "domain")[0] > 0.1


@pytest.mark.slow
def test_quick_evaluation_writes_its_section_and_figures(tmp_path):
    import eval_noninteractive as E

    assert E.main(["--quick", "--out", str(tmp_path)]) == 0
    md = (tmp_path / "evaluation.md").read_text()
    assert "<!-- section: noninteractive-release -->" in md and "Mode: **QUICK" in md
    for heading in (
        "### 1-D intervals",
        "### Influence of α (Table 2)",
        "### 2-D rectangles",
        "### Parity",
        "### Max",
        "### Requests answered from a release",
        "### Where the seed's numbers",
    ):
        assert heading in md
    for fig in ("nonint_1d.png", "nonint_table2.png", "nonint_2d.png", "nonint_parity.png", "nonint_max.png"):
        png = tmp_path / "figures" / fig
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f"figures/{fig}" in md
