"""End to end, released answers cover the truth as often as dpdesk claims (issue 12 item 6).

Small real projects — a project file over an SQLite table with known counts, fresh answers drawn
through ``Project.release`` — work through the first 9 requests of the calibration stream (fresh,
fused and inferred answers; the later ones cost about a second each on today's engine) under the flat
prior, known bounds and pacing; ``benchmarks/evaluation/calibration.py`` runs them and says what each
answer claims. Per setting:

* every project makes the same decisions with the same claims: they are computed from public inputs
  only, never from the data or the noise;
* every claim meets its requester's promise, ``claim ≥ 1 − δ`` less its stated error bound (a fresh
  answer's claim is computed in closed form from the α spent, not by the engine);
* request by request, the hits over the R = 30 independent projects are Binomial(R, claim): a tail
  probability below 1e-5 fails (under known bounds only too few hits fail: trimming can add hits);
* the hits ``H`` of a project against its summed claims ``C``: the mean of ``H − C`` over the projects
  must lie within ``[−5·se, +8·se]`` (under known bounds only the lower limit), with ``se`` measured
  from the repetitions (a project's answers share its history's noise, so ``H`` is not binomial).

The limits are lopsided because ``H − C`` is left-skewed (misses are rare and come together), so a few
repetitions without a bad project show a small sd: in a bootstrap from the 200 projects per setting of
``benchmarks/calibration.py --requests 9`` (R = 30, centred), a calibrated engine fails the lower limit
with probability below 1e-5 and the upper one 1.5e-5–5e-5 (at +5·se it would be 0.04–0.1 %).
The noise is the seeded sampler's (project ``i`` draws from ``SeededSampler(i)``: the same discrete and
continuous Laplace laws as OpenDP's, which tests/store/test_store_noise.py checks against them), so the
test is deterministic; with OpenDP's unseedable noise all its checks together would fail a calibrated
engine with probability below 1e-3 per run, which is no rate for a test. ``benchmarks/calibration.py``
measures the same projects with OpenDP's noise. It detects gross miscalibration only — a deficit of 1.5 hits
per project (of 9 answers) is caught 70–98 % of the time, 2 always; a request claiming 0.95 fails the
binomial check when it holds at most 20 of 30 times — the benchmark measures the same projects 200
times per setting and writes the figures into docs/evaluation.md.
Integer noise stays at scales ``S/α ≥ 2``, where today's engine is calibrated (issue 12 item 1 concerns
smaller ones); the test asserts it, so a stream edited into that regime is noticed.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from evaluation.calibration import SETTINGS, STREAM, run, summary

from dpdesk.engine.mechanisms.noise import SeededSampler

TEST_STREAM = STREAM[:9]

pytestmark = pytest.mark.calibration

PROJECTS = 30
K = 5.0  # standard errors below: claims that do not hold
K_ABOVE = 8.0  # and above: claims far too modest (the skew makes this side noisier, see above)
KINDS = {
    "flat": {"inferred", "fused", "fresh"},
    "bounds": {"inferred", "fused", "fresh"},
    "pacing": {"inferred", "fresh"},
}  # pacing's first fused answer is request 10
TAIL = 1e-5  # per request and side
# the projects are real SQLite files; on a RAM disk, where there is one, their fsyncs cost nothing
RAM_DISK = Path("/dev/shm")


def project_folder(tmp_path: Path) -> Path:
    return RAM_DISK if RAM_DISK.is_dir() and os.access(RAM_DISK, os.W_OK) else tmp_path


@pytest.mark.parametrize("name", list(SETTINGS))
def test_released_answers_cover_as_often_as_claimed(name, tmp_path):
    setting = SETTINGS[name]
    results = run(  # in a temporary folder there, removed after
        setting, PROJECTS, folder=project_folder(tmp_path), stream=TEST_STREAM, sampler_for=SeededSampler
    )

    decided = {
        tuple((a.request, a.kind, round(a.claim, 12)) for a in r.answers) + (r.rejected,) for r in results
    }
    assert len(decided) == 1, f"{name}: projects decided or claimed differently: {decided}"
    assert min(r.smallest_scale for r in results) >= 2.0, (
        "integer noise below scale 2 is issue 12 item 1's regime"
    )

    for i, (text, eps, delta) in enumerate(TEST_STREAM):
        got = [a for r in results for a in r.answers if a.request == i]
        if not got:
            continue
        a = got[0]
        assert a.claim >= a.promise - a.bound - 1e-12, (
            f"{name}: {text} ±{eps} claims {a.claim} < 1 − δ = {a.promise}"
        )
        hits, p = sum(x.hit for x in got), a.claim
        below = stats.binom.cdf(hits, len(got), max(p - a.bound, 0.0))
        assert below >= TAIL, (
            f"{name}: {text} ±{eps} held {hits} of {len(got)} times, claimed {p:.4f} (tail {below:.1e})"
        )
        if not setting.one_sided:
            above = stats.binom.sf(hits - 1, len(got), min(p + a.bound, 1.0))
            assert above >= TAIL, (
                f"{name}: {text} ±{eps} held {hits} of {len(got)} times, claimed {p:.4f} (tail {above:.1e})"
            )

    s = summary(results)
    se = max(s.se, 1.0 / PROJECTS)  # a mean of R integer hit counts moves in steps of 1/R
    report = (
        f"{name}: hits {s.hits} vs claimed {s.claimed:.2f} over {s.answers} answers; "
        f"H − C per project {s.mean_diff:+.3f} ± {se:.3f}"
    )
    assert s.mean_diff >= -(K * se + s.bound), report
    if not setting.one_sided:
        assert s.mean_diff <= K_ABOVE * se + s.bound, report
    assert {a.kind for a in results[0].answers} == KINDS[name], "the stream must exercise every kind"
