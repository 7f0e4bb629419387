"""At person level, released answers cover the truth as often as dpdesk claims (issue 33 item 5).

The first 9 requests of the calibration stream (tests/test_calibration_projects.py: fresh, fused and
inferred answers under the flat prior) on a table where one person has 1 to 5 rows, the rows with the same
``pid`` being one person and the cube keeping at most k = 3 of them. A person's loss is 3 × the largest
cell's, so the total is 3 × the row-level stream's (the same answers fit). The truth an interval must
hold is the **truncated** cube's count (what the project answers about), which differs from the table's
own counts here — checked, so an interval scored against the raw table would be noticed.

Per request, the hits over R = 30 independent projects (project ``i`` draws from ``SeededSampler(i)``, so
the test is deterministic) are Binomial(R, claim): a tail probability below 1e-5 on either side fails,
the claim widened by its stated error bound. Every claim is computed from public inputs only, so every
project makes the same decisions with the same claims; each meets its requester's promise 1 − δ.
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from evaluation.calibration import AGES, COUNTS, SCHEMA, STREAM, TOTAL_BUDGET, _holds, fresh_claim

from dpdesk.engine.mechanisms.noise import SeededSampler

pytestmark = pytest.mark.calibration

PROJECTS = 30
K = 3  # rows kept per person
TAIL = 1e-5  # per request and side
TEST_STREAM = STREAM[:9]


def write_people(path: Path) -> tuple[dict[tuple[str, str], int], list[int]]:
    """The calibration table's records, grouped into people of 1 to 5 rows (a fixed draw); returns the
    table's own counts per cell (before truncation) and each person's rows."""
    rng = np.random.default_rng(33)
    rows = [(AGES[age], sex) for (age, sex), n in COUNTS.items() for _ in range(n)]
    rows = [rows[i] for i in rng.permutation(len(rows))]
    sizes = []
    while sum(sizes) < len(rows):
        sizes.append(int(rng.integers(1, 6)))
    sizes[-1] -= sum(sizes) - len(rows)
    pids = np.repeat(np.arange(len(sizes)) + 1000, sizes)
    con = sqlite3.connect(path)
    try:
        con.execute("CREATE TABLE people (pid INTEGER, age INTEGER, sex TEXT)")
        con.executemany(
            "INSERT INTO people VALUES (?, ?, ?)", [(int(p), a, s) for p, (a, s) in zip(pids, rows)]
        )
        con.commit()
    finally:
        con.close()
    assert max(sizes) > K  # truncation drops rows
    return dict(COUNTS), sizes


def run_person_project(path: Path, table: Path, sampler) -> tuple[list[tuple], float, float, float]:  # type: ignore[no-untyped-def]
    """Work through the stream on a person-level project: per answer (request, kind, claim, bound,
    promise, hit, truth), and the system cost with the largest cell's cost and the kept rows."""
    from dpdesk.engine.answering.fresh import true_answer
    from dpdesk.store import Project

    schema = {**SCHEMA, "privacy_unit": {"column": "pid", "max_rows": K}}
    out = []
    with Project.create(
        path,
        name="person-calibration",
        schema=schema,
        source_location=str(table),
        source_table="people",
        total_budget=K * TOTAL_BUDGET,
        test_project=True,
    ) as p:
        cube = p.cube()
        for i, (text, eps, delta) in enumerate(TEST_STREAM):
            rid = p.add_request(text, eps, delta).id
            a = p.assess(rid)
            assert a.decision != "reject", f"{text} ±{eps}: {a.reason}"
            release = p.release(a, sampler)
            truth = true_answer(a.request.query, cube)
            if release.kind == "inferred":
                kind, claim, bound = "inferred", float(a.confidence_at_eps), float(a.error_bound or 0.0)
            elif a.fused:
                kind, claim, bound = "fused", float(a.fused_confidence), float(a.error_bound or 0.0)
            else:
                kind, claim, bound = (
                    "fresh",
                    fresh_claim(a.family, a.sensitivity / float(a.spend_alpha), eps),
                    0.0,
                )
            out.append(
                (i, kind, round(claim, 12), bound, 1.0 - delta, _holds(release.interval, truth), truth)
            )
        view = p.view()
        return out, view.system_cost, float(view.cell_costs.max()), float(np.asarray(cube.counts).sum())


def test_person_level_answers_cover_the_truncated_truth_as_often_as_claimed(tmp_path: Path) -> None:
    raw, sizes = write_people(tmp_path / "people.sqlite")
    results = [
        run_person_project(tmp_path / f"p{i}.dpdesk", tmp_path / "people.sqlite", SeededSampler(i))
        for i in range(PROJECTS)
    ]
    decided = {tuple(a[:5] for a in answers) for answers, *_ in results}
    assert len(decided) == 1, f"projects decided or claimed differently: {decided}"
    answers0, system_cost, top, kept = results[0]
    assert {a[1] for a in answers0} == {"inferred", "fused", "fresh"}, "the stream must exercise every kind"
    assert system_cost == pytest.approx(K * top, rel=1e-12) and system_cost <= K * TOTAL_BUDGET + 1e-9
    assert kept == sum(min(n, K) for n in sizes) < sum(raw.values())  # k rows of each person, no more
    raw_sex_f = sum(n for (_age, sex), n in raw.items() if sex == "F")
    truths = {TEST_STREAM[a[0]][0]: a[6] for a in answers0}
    assert truths['count(sex="F")'] != raw_sex_f  # scored against the truncated cube, not the table

    for i, (text, eps, _delta) in enumerate(TEST_STREAM):
        got = [a for answers, *_ in results for a in answers if a[0] == i]
        _, kind, claim, bound, promise, _, _ = got[0]
        assert claim >= promise - bound - 1e-12, f"{text} ±{eps} ({kind}) claims {claim} < 1 − δ = {promise}"
        hits = sum(a[5] for a in got)
        below = stats.binom.cdf(hits, len(got), max(claim - bound, 0.0))
        above = stats.binom.sf(hits - 1, len(got), min(claim + bound, 1.0))
        assert min(below, above) >= TAIL, (
            f"{text} ±{eps} ({kind}) held {hits} of {len(got)} times, claimed {claim:.4f} "
            f"(tails {below:.1e}, {above:.1e})"
        )
