"""benchmarks/eval_person.py on a small table: the pipeline runs and its figures keep what they claim."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import eval_person


def test_person_level_stream_stays_within_the_total_per_person() -> None:
    res = eval_person.evaluate(n=64, people=1500, requests=40, reps=1, ks=[1, 4])
    rows = {(r["setting"], r["system"]): r for r in res["rows"]}
    for (setting, _system), r in rows.items():
        if not setting.startswith("per row"):
            assert r["cost"] <= eval_person.TOTAL * (1 + 1e-12)  # one person's loss, k × the largest cell
    # a larger bound keeps more rows and, per person, affords no more fresh answers
    assert rows[("k = 1", "improved baseline")]["kept"] < rows[("k = 4", "improved baseline")]["kept"] < 1
    assert (
        rows[("k = 4", "improved baseline")]["answered"] <= rows[("k = 1", "improved baseline")]["answered"]
    )
    text = eval_person.markdown(
        res, {"quick": True, "seconds": 1.0, "load": "0", "cells": 64, "requests": 40, "reps": 1}
    )
    assert "| k = 4 |" in text and "--quick" in text
