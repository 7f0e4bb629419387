"""End-to-end calibration: do released answers cover the truth as often as dpdesk claims?

Each repetition is a small real project — an SQLite table with known counts, a project file, OpenDP's
secure sampler through :meth:`Project.release` — that works through a stream of requests as a curator
would: assess, then release exactly that assessment (fresh, fused or from history), or reject. For every
released answer we note the confidence dpdesk claims for its interval and whether the interval holds the
true count:

* an answer from history claims ``confidence_at_eps``, the mass of the released window ``θ̂ ± ε``;
* a fused fresh answer claims ``fused_confidence``, the mass of ±ε around the fused value;
* an unfused fresh answer claims ``Pr(|N| ≤ ε)`` for its family at the α actually spent, computed here
  in closed form (``1 − e^{−ε/b}``; integer noise ``1 − 2p^{⌊ε⌋+1}/(1 + p)``, ``p = e^{−1/b}``), so a
  paced answer that spent more than it needed claims the coverage it really has.

Every claim is made from public inputs only, and under the flat prior it is the coverage probability of
that interval at the project's fixed table (the window's error is the BLUE's, ``A·N``, whatever the
counts), so over repetitions a project's hits ``H`` and summed claims ``C`` have equal means. Known
bounds only trim released windows to ``[0, N]``, which holds every truth, so there ``E H ≥ E C``. The
answers of one project share its history's noise, so ``H`` is not binomial: the error of the mean of
``H − C`` is measured from the repetitions themselves (their standard deviation over √R).

The integer noise scales stay at ``S/α ≥ 2`` (checked: :attr:`ProjectResult.smallest_scale`): below ≈ 1.5,
discrete-Laplace rows whose BLUE weights are off one lattice can be mis-claimed on today's engine
(issue 12 item 1), and this check is meant to hold; ``small_noise.py`` covers that regime.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sqlite3
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA = {
    "attributes": [
        {
            "name": "age",
            "column": "age",
            "kind": "numeric",
            "edges": [0, 20, 40, 60, 80],
            "labels": ["0-20", "20-40", "40-60", "60-80"],
        },
        {"name": "sex", "column": "sex", "kind": "categorical", "values": ["F", "M"]},
    ]
}
# small counts on purpose: several cells hold 0, 1 or 2 records, so known bounds trim released windows
COUNTS = {
    ("0-20", "F"): 0,
    ("0-20", "M"): 1,
    ("20-40", "F"): 2,
    ("20-40", "M"): 5,
    ("40-60", "F"): 30,
    ("40-60", "M"): 27,
    ("60-80", "F"): 3,
    ("60-80", "M"): 0,
}
AGES = {"0-20": 10, "20-40": 30, "40-60": 50, "60-80": 70}
TABLE_SIZE = 70  # the declared public bound on the records (68 here)
TOTAL_BUDGET = 3.0

# a request stream: (query text, ε, δ); early ones need fresh answers, later ones are fused or inferred.
# One query has a non-integer weight, so continuous Laplace rows join the discrete ones.
STREAM = (
    ('count(age="0-20")', 3.0, 0.2),
    ('count(age="20-40")', 3.0, 0.2),
    ('count(sex="F")', 6.0, 0.1),
    ('0.5*count(sex="M")', 3.0, 0.2),
    ('count(age=["0-20", "20-40"])', 5.0, 0.2),
    ('count(age="0-20")', 4.0, 0.25),
    ('count(age="40-60")', 6.0, 0.2),
    ('count(age=["0-20", "20-40", "40-60"])', 8.0, 0.2),
    ('count(sex="F")', 8.0, 0.2),
    ('count(age="60-80")', 4.0, 0.2),
    ('count(sex="M")', 12.0, 0.2),
    ('count(age="20-40")', 5.0, 0.3),
    ('count(age="40-60", sex="F")', 6.0, 0.2),
    ('count(age=["40-60", "60-80"])', 12.0, 0.2),
)


@dataclass(frozen=True)
class Setting:
    """How a project answers: the flat prior or known bounds, greedy or paced spending."""

    name: str
    label: str
    table_size: float | None = None  # known bounds: the declared table size (None: the flat prior)
    policy: tuple[float, float] | None = None  # pacing: SpendPolicy(floor, cap) (None: greedy)
    one_sided: bool = False  # known bounds can only add coverage: E H ≥ E C


SETTINGS: dict[str, Setting] = {
    s.name: s
    for s in (
        Setting("flat", "flat prior, greedy"),
        Setting(
            "bounds", f"known bounds (table size {TABLE_SIZE}), greedy", table_size=TABLE_SIZE, one_sided=True
        ),
        Setting("pacing", "flat prior, pacing (floor 0.15, cap 0.5)", policy=(0.15, 0.5)),
    )
}


@dataclass(frozen=True)
class Answer:
    """One released answer: how it was made, the confidence claimed for its interval, and the outcome."""

    request: int  # position in the stream
    kind: str  # "inferred", "fused" or "fresh"
    claim: float  # the claimed probability that the released interval holds the truth
    bound: float  # the stated error bound of that claim (0 for the closed form)
    promise: float  # 1 − δ, what the requester was promised
    hit: bool  # the released interval holds the true count


@dataclass(frozen=True)
class ProjectResult:
    """One repetition: its released answers, rejections, and the smallest noise scales S/α it drew."""

    answers: tuple[Answer, ...]
    rejected: int
    smallest_scale: float  # of its integer (discrete-Laplace) noise: the one that matters below
    smallest_continuous_scale: float
    seconds: float


def write_table(path: Path) -> Path:
    """The private table: an SQLite file with one row per record of :data:`COUNTS`."""
    con = sqlite3.connect(path)
    try:
        con.execute("CREATE TABLE people (age INTEGER, sex TEXT)")
        for (age, sex), n in COUNTS.items():
            con.executemany("INSERT INTO people VALUES (?, ?)", [(AGES[age], sex)] * n)
        con.commit()
    finally:
        con.close()
    return path


def fresh_claim(family: str, scale: float, eps: float) -> float:
    """``Pr(|N| ≤ ε)`` for one fresh answer's noise of scale ``b = S/α`` (closed form, not the engine's)."""
    if family == "laplace":
        return -math.expm1(-eps / scale)
    p = math.exp(-1.0 / scale)  # integer noise: Pr(|K| > k) = 2 p^(k+1) / (1 + p)
    return 1.0 - 2.0 * p ** (math.floor(eps + 1e-12) + 1) / (1.0 + p)


def _holds(interval: tuple[float, float], truth: float) -> bool:
    lo, hi = interval
    tol = 1e-9 * max(1.0, abs(truth))  # windows on the integer lattice end at a count up to rounding
    return lo - tol <= truth <= hi + tol


def run_project(
    path: Path, table: Path, setting: Setting, stream=STREAM, sampler: Any = None
) -> ProjectResult:
    """Create a project at ``path`` on ``table``, work through ``stream``, and score every released answer.

    ``sampler``: None draws fresh answers from OpenDP (the product's sampler); a seeded sampler makes the
    project a test project (the only kind that may draw from one) and the run reproducible."""
    from dpdesk.engine.answering.fresh import true_answer
    from dpdesk.engine.budget.policy import SpendPolicy
    from dpdesk.engine.inference.prior import BoundedPrior
    from dpdesk.store import Project

    t0 = time.perf_counter()
    answers: list[Answer] = []
    rejected, smallest = 0, {"discrete_laplace": math.inf, "laplace": math.inf}
    with Project.create(
        path,
        name="calibration",
        schema=SCHEMA,
        source_location=str(table),
        source_table="people",
        total_budget=TOTAL_BUDGET,
        test_project=sampler is not None,
    ) as p:
        if setting.table_size is not None:
            p.set_prior(BoundedPrior(setting.table_size))
        if setting.policy is not None:
            p.set_spend_policy(SpendPolicy(*setting.policy))
        cube = p.cube()
        for i, (text, eps, delta) in enumerate(stream):
            rid = p.add_request(text, eps, delta).id
            a = p.assess(rid)
            if a.decision == "reject":
                p.reject(rid, "calibration run")
                rejected += 1
                continue
            release = p.release(a, sampler)  # exactly this assessment; OpenDP draws a fresh answer by default
            truth = true_answer(a.request.query, cube)
            if release.kind == "inferred":
                kind, claim, bound = "inferred", float(a.confidence_at_eps), float(a.error_bound or 0.0)
            else:
                scale = a.sensitivity / float(a.spend_alpha)
                smallest[a.family] = min(smallest[a.family], scale)
                if a.fused:
                    kind, claim, bound = "fused", float(a.fused_confidence), float(a.error_bound or 0.0)
                else:
                    kind, claim, bound = "fresh", fresh_claim(a.family, scale, eps), 0.0
            answers.append(Answer(i, kind, claim, bound, 1.0 - delta, _holds(release.interval, truth)))
    return ProjectResult(
        tuple(answers), rejected, smallest["discrete_laplace"], smallest["laplace"], time.perf_counter() - t0
    )


def run(
    setting: Setting | str,
    repetitions: int,
    folder: Path | None = None,
    stream=STREAM,
    progress: Any = None,
    sampler_for: Any = None,
) -> list[ProjectResult]:
    """``repetitions`` independent projects of one setting, each with its own OpenDP noise (or, with
    ``sampler_for``, the sampler ``sampler_for(i)`` for project ``i``: seeded, for a reproducible run)."""
    setting = SETTINGS[setting] if isinstance(setting, str) else setting
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        tmp = Path(tmp)
        table = write_table(tmp / "people.sqlite")
        out = []
        for i in range(repetitions):
            sampler = None if sampler_for is None else sampler_for(i)
            out.append(run_project(tmp / f"{setting.name}-{i}.dpdesk", table, setting, stream, sampler))
            if progress is not None:
                progress(i + 1, repetitions)
        return out


@dataclass(frozen=True)
class Summary:
    """Hits against claims over the projects of one setting (optionally one kind of answer)."""

    projects: int
    answers: int
    hits: int
    claimed: float
    promised: float
    bound: float  # summed stated error bounds of the claims, per project (largest)
    mean_diff: float  # mean over projects of H − C
    se: float  # standard error of that mean, from the repetitions

    @property
    def coverage(self) -> float:
        return self.hits / max(self.answers, 1)

    @property
    def claim(self) -> float:
        return self.claimed / max(self.answers, 1)

    @property
    def z(self) -> float:
        return self.mean_diff / self.se if self.se > 0 else 0.0


def summary(results: list[ProjectResult], kinds: tuple[str, ...] = ("inferred", "fused", "fresh")) -> Summary:
    """Hits ``H`` and claims ``C`` per project; the mean of ``H − C`` and its error over the projects."""
    per = [[a for a in r.answers if a.kind in kinds] for r in results]
    diffs = [sum(a.hit for a in ans) - sum(a.claim for a in ans) for ans in per]
    se = statistics.stdev(diffs) / math.sqrt(len(diffs)) if len(diffs) > 1 else math.inf
    flat = [a for ans in per for a in ans]
    return Summary(
        len(results),
        len(flat),
        sum(a.hit for a in flat),
        sum(a.claim for a in flat),
        sum(a.promise for a in flat),
        max((sum(a.bound for a in ans) for ans in per), default=0.0),
        statistics.fmean(diffs) if diffs else 0.0,
        se,
    )


SUBSETS = (
    ("all answers", ("inferred", "fused", "fresh")),
    ("from history", ("inferred",)),
    ("fused fresh", ("fused",)),
    ("unfused fresh", ("fresh",)),
)


def per_request(results: dict[str, list[ProjectResult]], stream=STREAM) -> list[str]:
    """Request by request: what each setting released, its claim and the fraction of projects it hit.

    Decisions and claims depend on public inputs only, so every project of a setting makes the same ones
    (checked: the table says so if not), and across projects each request's hits are independent: the
    binomial error of one row is honest, unlike that of a project's sum.
    """
    names = list(results)
    head = (
        "| # | request | " + " | ".join(f"{SETTINGS[n].name}: answer, claim, hit rate" for n in names) + " |"
    )
    lines = [
        "Per request (± one binomial standard error of the hit rate):",
        "",
        head,
        "|---:|---|" + "---|" * len(names),
    ]
    same = True
    for i, (text, eps, delta) in enumerate(stream):
        cells = []
        for n in names:
            picked = [next((a for a in r.answers if a.request == i), None) for r in results[n]]
            got = [a for a in picked if a is not None]
            if not got:
                cells.append("rejected")
                continue
            claims = [a.claim for a in got]
            same &= len(got) == len(picked) and max(claims) - min(claims) <= 1e-9
            rate, p = statistics.fmean(a.hit for a in got), statistics.fmean(claims)
            cells.append(f"{got[0].kind}, {p:.4f}, {rate:.3f} ± {math.sqrt(p * (1 - p) / len(got)):.3f}")
        lines.append(f"| {i + 1} | `{text}` ±{eps:g} at {1 - delta:g} | " + " | ".join(cells) + " |")
    if not same:
        lines += [
            "",
            "(Some requests were decided or claimed differently across projects; the claim shown is the mean.)",
        ]
    return lines


def section_name(requests: int) -> str:
    """``calibration`` for the whole stream, ``calibration-first-N`` for its first N requests."""
    return "calibration" if requests == len(STREAM) else f"calibration-first-{requests}"


def markdown(results: dict[str, list[ProjectResult]], meta: dict[str, Any], command: str) -> str:
    """A section of docs/evaluation.md: the run's sums, settings, requests and scope.

    ``meta`` says how it was measured: ``requests`` (first N of :data:`STREAM`), ``seconds``, ``date``,
    ``commit`` (the engine's).
    """
    stream = STREAM[: meta["requests"]]
    which = (
        f"the same stream of {len(STREAM)} requests"
        if len(stream) == len(STREAM)
        else f"the first {len(stream)} of the stream's {len(STREAM)} requests"
    )
    rows, notes = [], []
    for name, res in results.items():
        setting = SETTINGS[name]
        for label, kinds in SUBSETS:
            s = summary(res, kinds)
            if s.answers == 0:
                continue
            rows.append(
                f"| {setting.label} | {label} | {s.answers} | {s.hits} | {s.claimed:.1f} | {s.promised:.1f} | "
                f"{s.coverage:.4f} | {s.claim:.4f} | {s.mean_diff:+.3f} ± {s.se:.3f} | {s.z:+.2f} |"
            )
        notes.append(
            f"{setting.label}: {len(res)} projects, {sum(r.rejected for r in res) / len(res):.1f} rejections "
            f"per project, smallest noise scale S/α {min(r.smallest_scale for r in res):.2f} (integer noise), "
            f"{min(r.smallest_continuous_scale for r in res):.2f} (continuous), "
            f"{statistics.fmean(r.seconds for r in res):.2f} s per project"
        )
    return "\n".join(
        [
            "## Calibration end to end (real projects, OpenDP noise)"
            if len(stream) == len(STREAM)
            else f"## Calibration end to end, requests 1–{len(stream)} (the test's stream), after issue 12 items 1 and 7",
            "",
            f"Each repetition is a real project file over a small SQLite table with known counts (68 records, "
            f"several cells hold 0, 1 or 2 of them), answering {which} with "
            "OpenDP's secure sampler through `Project.release`: assess, then release exactly that assessment — "
            "fresh, fused with history, or from history — or reject. Every released answer claims a confidence "
            "for its interval: from history `confidence_at_eps` (the mass of θ̂ ± ε), fused `fused_confidence`, "
            "unfused fresh `Pr(|N| ≤ ε)` at the α actually spent (closed form). These claims are computed from "
            "public inputs only and are coverage probabilities at the project's fixed table, so the expected "
            "hits H equal the summed claims C under the flat prior and pacing, and are at least C with known "
            "bounds (a window trimmed to [0, N] holds the truth whenever the untrimmed one does, and a window "
            "that misses [0, N] entirely becomes its nearest bound, which can only add hits). Answers of one project share its history's "
            "noise, so H is not binomial: the error below is measured from the repetitions — the mean of "
            "H − C per project ± its standard error (sd over √projects), and z = mean / se. *promised* is "
            "Σ (1 − δ), what the requesters were promised.",
            "",
            "| setting | answers counted | answers | hits H | claimed C | promised | coverage | mean claim | "
            "H − C per project | z |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
            *rows,
            "",
            *[f"- {n}" for n in notes],
            "",
            *per_request(results, stream),
            "",
            "Scope: every integer (discrete-Laplace) noise scale S/α here is at least 2 (continuous Laplace "
            "scales go lower under pacing; that path is sound). Discrete-Laplace rows at scales below about 1.5 "
            "whose BLUE weights are not on one lattice are the regime of issue 12 item 1 (main claimed 0.9326 "
            "where the truth is 0.9137 until exact posteriors landed in f53ffd7); these runs do not cover it, "
            "tests/test_calibration_small_noise.py does (same marker, about 10 s): the issue's four-row history in "
            "160 independent blocks of real projects (benchmarks/evaluation/small_noise.py, OpenDP noise through "
            "`Project.release`, every history row discrete Laplace at S/α ≤ 1.5), then six borderline requests "
            "the engine infers; the issue's example must claim 0.9137 ± 0.003 and not be inferred, and hits must "
            "match claims request by request (binomial) and in sum (H − C within ±4.4 standard errors measured "
            "from the blocks). On the engine before f53ffd7 the example claimed 0.9327 and was inferred, which "
            "fails the test; that engine's other claims there were off by at most 0.064 per answer (too modest), "
            "about +0.2 hits per block against a standard error near 0.1 at 160 blocks: the hit count alone "
            "does not resolve errors that small.",
            "",
            "tests/test_calibration_projects.py runs the first 9 requests (on today's engine requests 10, 12 and "
            "14 cost about a second each: a fusion search and Selberg brackets), 30 projects per setting, under "
            "`make test`: every project must make the same decisions with the same claims (public inputs only), "
            "every claim must meet 1 − δ, each request's hits must be a plausible Binomial(30, claim), and the "
            "mean of H − C must lie within [−5, +8] standard errors measured from the repetitions. It catches a "
            "deficit of about 1.5–2 hits per project (of 9 answers); the figures here are the measurement.",
            "",
            f"Measured {meta['date']} on the engine at commit {meta['commit']}, in {meta['seconds'] / 60:.0f} min on "
            f"the shared 2-core machine. Regenerate: `{command}`",
        ]
    )


def to_json(results: dict[str, list[ProjectResult]], meta: dict[str, Any]) -> str:
    """The raw results (every answer of every project) and ``meta``, to rewrite the section without a rerun."""
    return json.dumps(
        {**meta, "results": {k: [dataclasses.asdict(r) for r in v] for k, v in results.items()}}
    )


def from_json(text: str) -> tuple[dict[str, list[ProjectResult]], dict[str, Any]]:
    data = json.loads(text)
    results = {
        k: [ProjectResult(**{**r, "answers": tuple(Answer(**a) for a in r["answers"])}) for r in v]
        for k, v in data.pop("results").items()
    }
    return results, data
