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
imports, cProfile for the rest).

Run: ``.venv/bin/python benchmarks/bench_answer.py [--rows 5000000] [--repeat 5] [--dir D]``. Prints
only; docs/performance.md quotes its output.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_cube import SCHEMA, make_data

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


def timed(cmd: list[str], env: dict[str, str]) -> float:
    t = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    took = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return took


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "dpdesk-bench-cube"))
    ap.add_argument("--profile", action="store_true", help="where one answer's time goes")
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
    print(f"{args.rows:,} rows, {csv}; load before: {load()}")
    ours, base = [], []
    for i in range(args.repeat):
        fresh_project()
        ours.append(timed(answer, env))
        base.append(timed(baseline, env))
        print(
            f"  run {i + 1}: dpdesk answer {ours[-1]:.2f} s   OpenDP + DuckDB count {base[-1]:.2f} s",
            flush=True,
        )
    mo, mb = statistics.median(ours), statistics.median(base)
    print(
        f"dpdesk answer (fresh) {mo:.2f} s  vs  one OpenDP noisy count + DuckDB COUNT {mb:.2f} s: "
        f"x{mo / mb:.2f} (target <= 1.3{'' if mo / mb <= 1.3 else ': MISS'}); load after: {load()}"
    )
    if args.profile:
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

        pstats.Stats(str(prof)).sort_stats("cumulative").print_stats(25)
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
