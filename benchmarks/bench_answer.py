"""One fresh answer from the command line next to one noisy count through OpenDP and DuckDB.

The baseline is the least a fresh count can cost: a fresh Python process that imports DuckDB and
OpenDP, runs one ``SELECT COUNT(*) … WHERE`` over the CSV and adds OpenDP's discrete Laplace noise to
it. dpdesk's run is ``dpdesk answer P --request r1 --yes`` in a fresh process on a project bound to
the same CSV (5,000,000 rows, 4 attributes, 360 cells; generated once by ``bench_cube.py``'s
``make_data``), whose one pending request needs a fresh answer: the project is copied anew before each
run (not timed) so every run releases. Both are timed from spawning the process to its exit, alternated
``--repeat`` times in one run; printed: each median, the ratio (target ≤ 1.3) and the load average
before and after.

``--profile`` also prints where one ``dpdesk answer`` spends its time (``-X importtime`` for the
imports, cProfile for the rest). Beside the wall times, each process's CPU time (user + system, all its
threads) is reported: on a shared machine the wall time includes waiting for a core, the CPU time not.

Run: ``.venv/bin/python benchmarks/bench_answer.py [--rows 5000000] [--repeat 5] [--dir D] [--profile]
[--write-docs]``; ``--write-docs`` also replaces the section ``answer-one-scan`` of docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_cube import SCHEMA, make_data
from evaluation.sections import DOCS, add_write_docs, write_section

BIN = Path(sys.executable).parent
QUERY = 'count(sex="Female", age="25-35")'
BASELINE = """
import sys, duckdb, opendp.prelude as dp
dp.enable_features("contrib")
true = duckdb.connect().execute(
    "SELECT COUNT(*) FROM read_csv(?) WHERE sex = 'Female' AND age >= 25 AND age < 35", [sys.argv[1]]
).fetchone()[0]
noise = dp.m.make_laplace(dp.atom_domain(T="i64"), dp.absolute_distance(T="i64"), scale=20.0)
print(noise(int(true)))
"""


def _cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall time from spawn to exit, and the CPU time (user + system, every thread) the process used."""
    c, t = _cpu_children(), time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    took = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return took, _cpu_children() - c


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def profile(answer: list[str], env: dict[str, str], work: Path, fresh_project) -> dict[str, float]:
    """Where one ``dpdesk answer`` spends its time: imports (``-X importtime``, top level), and under
    cProfile the whole command, the cube build and the source binding's snapshot (seconds, wall)."""
    fresh_project()
    imports = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "dpdesk", *answer[1:]],
        env=env,
        capture_output=True,
        text=True,
    ).stderr.splitlines()
    rows = [line.split("|") for line in imports if line.startswith("import time:") and "|" in line]
    top = sorted(((int(r[1]), r[2].strip()) for r in rows[1:] if not r[2].startswith("  ")), reverse=True)
    print("imports (cumulative, top level, µs):", ", ".join(f"{n} {us}" for us, n in top[:8]))
    fresh_project()
    prof = work / "answer.prof"
    subprocess.run([sys.executable, "-m", "cProfile", "-o", str(prof), "-m", "dpdesk", *answer[1:]], env=env,
                   capture_output=True, check=True)  # fmt: skip
    import pstats

    stats = pstats.Stats(str(prof))
    stats.sort_stats("cumulative").print_stats(25)
    found: dict[str, float] = {"imports": sum(us for us, _ in top) / 1e6}
    for (path, _, func), row in stats.stats.items():  # type: ignore[attr-defined]
        cumulative = row[3]
        if func == "build_cube" and path.endswith("sources/duck.py"):
            found["cube build"] = max(found.get("cube build", 0.0), cumulative)
        elif func == "snapshot" and path.endswith("store/binding.py"):
            found["snapshot"] = max(found.get("snapshot", 0.0), cumulative)
        elif func == "_main" and path.endswith("dpdesk/cli.py"):
            found["command"] = max(found.get("command", 0.0), cumulative)
    return found


def markdown(args, ours, base, loads, parts) -> str:
    mo, mb = (statistics.median(w for w, _ in runs) for runs in (ours, base))
    co, cb = (statistics.median(c for _, c in runs) for runs in (ours, base))
    verdict = "met" if mo / mb <= 1.3 else "missed"
    lines = [
        "## One fresh answer from the command line against one noisy count (issue 35)",
        "",
        f"Reproduce: `.venv/bin/python benchmarks/bench_answer.py --repeat {args.repeat} --profile --write-docs`. "
        f"A {args.rows:,}-row CSV (4 attributes, 360 cells; `bench_cube.py`'s table). dpdesk: `dpdesk answer P "
        "--request r1 --yes` in a fresh process on a project bound to that CSV whose one pending request, "
        '`count(sex="Female", age="25-35")`, needs a fresh answer (the project is copied anew before each '
        "run). Baseline: a fresh Python process that imports DuckDB and OpenDP, runs `SELECT COUNT(*) … WHERE "
        "sex = 'Female' AND age >= 25 AND age < 35` on the same CSV and adds OpenDP's discrete Laplace noise. "
        "Both timed from spawn to exit, alternated, in one run; CPU is the process's user + system time over "
        "all its threads (what the machine's load stretches least). Target: ≤ 1.3× (wall).",
        "",
        f"Measured {time.strftime('%Y-%m-%d')}, **load average (1, 5, 15 min) {loads[0]} before, {loads[-1]} "
        f"after, on 2 cores** shared with other engineers' jobs:",
        "",
        "| run | `dpdesk answer` wall | CPU | OpenDP + DuckDB count wall | CPU |",
        "|---|---|---|---|---|",
    ]
    for i, ((wo, c1), (wb, c2)) in enumerate(zip(ours, base)):
        lines.append(f"| {i + 1} | {wo:.2f} s | {c1:.2f} s | {wb:.2f} s | {c2:.2f} s |")
    lines += [
        f"| **median** | **{mo:.2f} s** | **{co:.2f} s** | **{mb:.2f} s** | **{cb:.2f} s** |",
        f"| **ratio** | **×{mo / mb:.2f} wall, target ×1.3 {verdict}** | ×{co / cb:.2f} CPU | | |",
    ]
    if parts:
        cmd, cube = parts.get("command", 0.0), parts.get("cube build", 0.0)
        lines += [
            "",
            f"Where one `dpdesk answer` goes (`--profile`, one more run under cProfile, same load): the command "
            f"{cmd:.2f} s, its imports included, which take {parts['imports']:.2f} s (`-X importtime`, top "
            f"level, a separate run); within the command, the source binding's snapshot {parts.get('snapshot', 0):.2f} s, "
            f"of which the cube build (DuckDB's one scan of the CSV) {cube:.2f} s "
            f"({cube / max(cmd, 1e-9):.0%} of the command).",
        ]
    lines += [
        "",
        "What a fresh answer does that the baseline does not: it checks the source against the project's "
        "keyed binding, whose fingerprint is taken over the cube, so it builds the whole cube — DuckDB's "
        "`GROUP BY` over all four binned attributes of every row, where the baseline's `COUNT(*) … WHERE` "
        "reads two columns and keeps no groups — and it starts dpdesk's store and engine (NumPy, the "
        "SQLite project file, the request's assessment and spend decision) beside DuckDB and OpenDP. "
        "The cube build alone takes more CPU than the baseline's whole process (binning variants — a "
        "binary-search `CASE`, comparisons summed, narrower integer cells, the four bins grouped without "
        "a cell number — measured no cheaper, or under a tenth cheaper); "
        "within 1.3× would take a cube build as cheap as one filtered count, or a keyed check that does "
        "not need the cube. **Not met.** A fresh answer no longer imports SciPy's linear algebra or "
        "OpenDP's prelude (tests/test_answer_imports.py).",
    ]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "dpdesk-bench-cube"))
    ap.add_argument("--profile", action="store_true", help="where one answer's time goes")
    add_write_docs(ap, "the section 'answer-one-scan' of docs/performance.md")
    args = ap.parse_args()

    csv, _ = make_data(args.dir, args.rows)
    work = Path(tempfile.mkdtemp(prefix="dpdesk-bench-answer-"))
    env = {**os.environ, "DPDESK_DATA_DIR": str(work / "data"), "DPDESK_VIEW_CACHE": "off"}
    schema = work / "s.schema.json"
    schema.write_text(json.dumps(SCHEMA), encoding="utf-8")
    pristine = work / "pristine.dpdesk"
    dpdesk = str(BIN / "dpdesk")
    for cmd in (
        [
            dpdesk,
            "project",
            "new",
            str(pristine),
            "--schema",
            str(schema),
            "--source",
            csv,
            "--budget",
            "1000",
        ],
        [dpdesk, "requests", "add", str(pristine), "--query", QUERY, "--eps", "60", "--delta", "0.05"],
    ):
        timed(cmd, env)
    project = work / "p.dpdesk"

    def fresh_project() -> None:
        for suffix in ("", "-wal", "-shm", ".lock", ".cache"):
            Path(f"{project}{suffix}").unlink(missing_ok=True)
        shutil.copy(pristine, project)

    answer = [dpdesk, "answer", str(project), "--request", "r1", "--yes"]
    baseline = [sys.executable, "-c", BASELINE, csv]
    loads = [load()]
    print(f"{args.rows:,} rows, {csv}; load before: {loads[0]}")
    ours: list[tuple[float, float]] = []
    base: list[tuple[float, float]] = []
    for i in range(args.repeat):
        fresh_project()
        ours.append(timed(answer, env))
        base.append(timed(baseline, env))
        print(
            f"  run {i + 1}: dpdesk answer {ours[-1][0]:.2f} s (CPU {ours[-1][1]:.2f} s)   "
            f"OpenDP + DuckDB count {base[-1][0]:.2f} s (CPU {base[-1][1]:.2f} s)",
            flush=True,
        )
    loads.append(load())
    mo, mb = (statistics.median(w for w, _ in runs) for runs in (ours, base))
    co, cb = (statistics.median(c for _, c in runs) for runs in (ours, base))
    print(
        f"dpdesk answer (fresh) {mo:.2f} s  vs  one OpenDP noisy count + DuckDB COUNT {mb:.2f} s: "
        f"x{mo / mb:.2f} (target <= 1.3{'' if mo / mb <= 1.3 else ': MISS'}); CPU {co:.2f} s vs {cb:.2f} s: "
        f"x{co / cb:.2f}; load after: {loads[-1]}"
    )
    parts = profile(answer, env, work, fresh_project) if args.profile else None
    if args.write_docs:
        write_section(DOCS / "performance.md", "answer-one-scan", markdown(args, ours, base, loads, parts))
        print("wrote section 'answer-one-scan' of docs/performance.md")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
