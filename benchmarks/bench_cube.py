"""Cube building at scale: dpdesk's sources next to DuckDB's bare ``SELECT … GROUP BY`` on the same file.

Generates (once, cached) a 5,000,000-row table with 4 attributes as CSV and Parquet, then builds its
cube with each source, every run in a fresh Python process so that peak memory (``VmHWM`` from
``/proc/self/status``, i.e. the process's peak resident set) belongs to that run alone. Wall time is
measured inside the child around the build only (imports excluded; the "imports" row gives the
resident memory every child starts from). Reported: medians over ``--repeat`` runs, and the ratio of
each path to the bare DuckDB query on the same file.

``--big`` also writes a ~2 GB Parquet file and builds its cube under a 1 GiB address-space cap
(``prlimit --as``), with and without ``MALLOC_ARENA_MAX=2`` (see docs/performance.md for why).

``--spark`` adds the Spark column (needs ``dpdesk[spark]`` and Java): a ``local[2]`` session per child,
dpdesk's Spark source next to Spark's own ``SELECT … GROUP BY`` of the attribute columns on the same
Parquet file (the bare reference). Session start-up is reported apart; the build is timed cold (the
first statement of a fresh JVM) and warm (the same statement again), and the driver JVM's peak resident
set is read from ``/proc``. ``--spark-rows N,M`` repeats the warm Spark runs on other table sizes.

Run: ``.venv/bin/python benchmarks/bench_cube.py [--rows N] [--repeat R] [--big] [--spark] [--dir D]``.
Not part of the test suite: nothing here asserts on timings.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

SCHEMA = {
    "attributes": [
        {"name": "age", "column": "age", "kind": "numeric", "edges": [17, 25, 35, 45, 55, 65, 91]},
        {"name": "sex", "column": "sex", "kind": "categorical", "values": ["Female", "Male"]},
        {
            "name": "education",
            "column": "education",
            "kind": "categorical",
            "values": ["Dropout", "HS-grad", "Some-college", "Bachelors", "Masters", "Doctorate"],
        },
        {"name": "hours", "column": "hours_per_week", "kind": "numeric", "edges": [1, 20, 35, 41, 50, 99]},
    ]
}
COLUMNS = [a["column"] for a in SCHEMA["attributes"]]
GiB = 1 << 30


def peak_rss_mb() -> float:
    with open("/proc/self/status") as f:
        m = re.search(r"VmHWM:\s+(\d+) kB", f.read())
    return int(m.group(1)) / 1024 if m else float("nan")


# --- data ------------------------------------------------------------------------------------------


def _chunk(rows: int, seed: int, payload: int = 0):  # type: ignore[no-untyped-def]
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    sexes = np.array(["Female", "Male", "?"])
    educ = np.array(["Dropout", "HS-grad", "Some-college", "Bachelors", "Masters", "Doctorate", "Preschool"])
    cols = {
        "age": pa.array(rng.integers(10, 100, rows).astype(np.int64)),
        "sex": pa.array(sexes[rng.choice(3, rows, p=[0.49, 0.49, 0.02])]),
        "education": pa.array(educ[rng.integers(0, 7, rows)]),
        "hours_per_week": pa.array(rng.integers(0, 100, rows).astype(np.int64)),
    }
    for j in range(payload):  # incompressible filler so the big file really is big
        cols[f"payload_{j}"] = pa.array(rng.random(rows))
    return pa.table(cols)


def make_data(directory: str, rows: int) -> tuple[str, str]:
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    os.makedirs(directory, exist_ok=True)
    parquet = os.path.join(directory, f"table-{rows}.parquet")
    csv = os.path.join(directory, f"table-{rows}.csv")
    if not (os.path.exists(parquet) and os.path.exists(csv)):
        print(f"generating {rows:,} rows in {directory} ...", file=sys.stderr)
        table = _chunk(rows, 5)
        pq.write_table(table, parquet + ".tmp")
        pacsv.write_csv(table, csv + ".tmp")
        os.replace(parquet + ".tmp", parquet)
        os.replace(csv + ".tmp", csv)
    return csv, parquet


def make_big(directory: str, target_bytes: int = 2 * GiB) -> str:
    import pyarrow.parquet as pq

    path = os.path.join(directory, "big.parquet")
    if os.path.exists(path) and os.path.getsize(path) >= 0.95 * target_bytes:
        return path
    print(f"generating a ~{target_bytes / GiB:.1f} GB Parquet file in {directory} ...", file=sys.stderr)
    chunk_rows, payload = 1_000_000, 6
    writer = None
    seed = 0
    try:
        while not os.path.exists(path + ".tmp") or os.path.getsize(path + ".tmp") < target_bytes:
            table = _chunk(chunk_rows, 1000 + seed, payload)
            if writer is None:
                writer = pq.ParquetWriter(path + ".tmp", table.schema)
            writer.write_table(table, row_group_size=chunk_rows)
            seed += 1
    finally:
        if writer is not None:
            writer.close()
    os.replace(path + ".tmp", path)
    return path


# --- one measured run (in the child process) -------------------------------------------------------


def child(case: str, path: str) -> None:
    import duckdb
    import pandas as pd

    from dpdesk.engine.cube import build_cube
    from dpdesk.engine.schema import Schema
    from dpdesk.sources import open_source

    schema = Schema.from_dict(SCHEMA)
    base = peak_rss_mb()
    t0 = time.perf_counter()
    if case == "imports":
        total = 0
    elif case == "bare":
        import duckdb

        con = duckdb.connect()
        con.execute("SET enable_progress_bar_print = false")
        reader = "read_parquet" if path.endswith(".parquet") else "read_csv"
        cols = ", ".join(f'"{c}"' for c in COLUMNS)
        out = con.execute(f"SELECT {cols}, COUNT(*) AS n FROM {reader}(?) GROUP BY ALL", [path]).fetchnumpy()
        total = int(out["n"].sum())
    elif case == "dpdesk-duckdb":
        cube = open_source(path).build_cube(schema)
        total = cube.total + cube.out_of_domain
    elif case == "pandas":
        df = (
            pd.read_parquet(path, columns=COLUMNS)
            if path.endswith(".parquet")
            else pd.read_csv(path, usecols=COLUMNS)
        )
        cube = build_cube(df, schema)
        total = cube.total + cube.out_of_domain
    elif case in ("spark-bare", "dpdesk-spark"):
        spark_child(case, path, schema)
        return
    else:
        raise SystemExit(f"unknown case {case}")
    wall = time.perf_counter() - t0
    print(
        json.dumps(
            {"case": case, "wall_s": wall, "peak_mb": peak_rss_mb(), "imports_mb": base, "rows": total}
        )
    )


def _pid_peak_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        m = re.search(r"VmHWM:\s+(\d+) kB", f.read())
    return int(m.group(1)) / 1024 if m else float("nan")


def spark_child(case: str, path: str, schema) -> None:  # type: ignore[no-untyped-def]
    """Start ``local[2]``, then time one statement twice: cold (fresh JVM) and warm."""
    from dpdesk.sources import open_source
    from dpdesk.sources.spark import spark_session

    t0 = time.perf_counter()
    spark = spark_session("local[2]")
    start = time.perf_counter() - t0
    cols = ", ".join(f"`{c}`" for c in COLUMNS)

    def once() -> int:
        if case == "spark-bare":  # Spark's own GROUP BY of the raw columns: no binning, no parameters
            rows = spark.sql(f"SELECT {cols}, COUNT(*) AS n FROM parquet.`{path}` GROUP BY {cols}").collect()
            return sum(r["n"] for r in rows)
        cube = open_source("spark://local[2]", table=path).build_cube(schema)
        return cube.total + cube.out_of_domain

    walls = []
    for _ in range(2):
        t = time.perf_counter()
        total = once()
        walls.append(time.perf_counter() - t)
    jvm = _pid_peak_mb(spark.sparkContext._gateway.proc.pid)
    print(
        json.dumps(
            {
                "case": case,
                "wall_s": walls[1],
                "cold_s": walls[0],
                "start_s": start,
                "rows": total,
                "peak_mb": peak_rss_mb(),
                "jvm_peak_mb": jvm,
            }
        )
    )
    spark.stop()


def measure(
    case: str, path: str, *, prefix: list[str] | None = None, env: dict[str, str] | None = None
) -> dict:
    cmd = [*(prefix or []), sys.executable, os.path.abspath(__file__), "--child", case, path]
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})})
    if r.returncode != 0:
        if r.returncode < 0:
            import signal

            return {"case": case, "error": f"killed by {signal.Signals(-r.returncode).name}"}
        last = (r.stderr.strip().splitlines() or [f"exit code {r.returncode}, no output"])[-1]
        return {"case": case, "error": last[:160]}
    return json.loads(r.stdout.strip().splitlines()[-1])


def interleaved(cases: list[str], path: str, repeat: int) -> list[dict]:
    """Round-robin over the cases, so a busy machine slows every case alike; medians per case."""
    runs: dict[str, list[dict]] = {c: [] for c in cases}
    for _ in range(repeat):
        for c in cases:
            runs[c].append(measure(c, path))
    return [summarise(c, runs[c]) for c in cases]


def median_runs(case: str, path: str, repeat: int) -> dict:
    return summarise(case, [measure(case, path) for _ in range(repeat)])


def summarise(case: str, runs: list[dict]) -> dict:
    ok = [r for r in runs if "error" not in r]
    if not ok:
        return runs[0]
    out = {
        "case": case,
        "wall_s": statistics.median(r["wall_s"] for r in ok),
        "peak_mb": statistics.median(r["peak_mb"] for r in ok),
        "rows": ok[0]["rows"],
        "all_wall_s": [round(r["wall_s"], 2) for r in ok],
    }
    for key in ("cold_s", "start_s", "jvm_peak_mb"):
        if key in ok[0]:
            out[key] = statistics.median(r[key] for r in ok)
    return out


def spark_section(parquet: str, repeat: int, directory: str, other_rows: list[int]) -> None:
    """The Spark column: dpdesk's Spark source against Spark's own GROUP BY on the same Parquet."""
    print(
        f"\n# Spark local[2] on the same Parquet ({os.path.getsize(parquet) / 1e6:.0f} MB); median of {repeat} "
        "fresh processes per path, interleaved; warm = the statement's second run in the same JVM"
    )
    print(
        "| path | warm (median) | vs Spark's own GROUP BY | cold (1st statement) | session start | "
        "driver JVM peak RSS | Python peak RSS | warm runs |"
    )
    print("|---|---|---|---|---|---|---|---|")
    results = interleaved(["spark-bare", "dpdesk-spark"], parquet, repeat)
    bare = results[0]
    for r in results:
        if "error" in r:
            print(f"| {r['case']} | failed: {r['error']} | | | | | | |", flush=True)
            continue
        ratio = r["wall_s"] / bare["wall_s"] if "wall_s" in bare else float("nan")
        print(
            f"| {r['case']} | {r['wall_s']:.2f} s | {ratio:.2f}× | {r['cold_s']:.2f} s | {r['start_s']:.1f} s | "
            f"{r['jvm_peak_mb']:.0f} MB | {r['peak_mb']:.0f} MB | {', '.join(map(str, r['all_wall_s']))} |",
            flush=True,
        )
    if other_rows:
        print("\n# dpdesk's Spark source on other table sizes (one fresh process each)")
        print("| rows | Parquet | warm | cold | driver JVM peak RSS | Python peak RSS |")
        print("|---|---|---|---|---|---|")
        for n in other_rows:
            _, path = make_data(directory, n)
            r = measure("dpdesk-spark", path)
            if "error" in r:
                print(f"| {n:,} | | failed: {r['error']} | | | |", flush=True)
                continue
            print(
                f"| {n:,} | {os.path.getsize(path) / 1e6:.0f} MB | {r['wall_s']:.2f} s | {r['cold_s']:.2f} s | "
                f"{r['jvm_peak_mb']:.0f} MB | {r['peak_mb']:.0f} MB |",
                flush=True,
            )


def table_rows(label: str, results: list[dict], bare: dict) -> list[str]:
    out = []
    for r in results:
        if "error" in r:
            out.append(f"| {label} | {r['case']} | failed: {r['error']} | | | |")
            continue
        ratio = r["wall_s"] / bare["wall_s"] if "wall_s" in bare else float("nan")
        out.append(
            f"| {label} | {r['case']} | {r['wall_s']:.2f} s | {ratio:.2f}× | {r['peak_mb']:.0f} MB | "
            f"{', '.join(map(str, r.get('all_wall_s', [])))} |"
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--dir",
        default=os.path.join(tempfile.gettempdir(), "dpdesk-bench-cube"),
        help="where the generated files are cached",
    )
    ap.add_argument("--big", action="store_true", help="also the ~2 GB Parquet file under a 1 GiB cap")
    ap.add_argument("--big-only", action="store_true", help="only the capped ~2 GB run")
    ap.add_argument(
        "--spark", action="store_true", help="add the Spark column (local[2]; needs dpdesk[spark])"
    )
    ap.add_argument("--spark-only", action="store_true", help="only the Spark column")
    ap.add_argument("--spark-rows", default="", help="comma-separated table sizes for the Spark scaling rows")
    ap.add_argument("--child", nargs=2, metavar=("CASE", "PATH"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return

    print(f"# cube building, {os.cpu_count()} cores, python {sys.version.split()[0]}")
    if args.spark or args.spark_only:
        _, parquet = make_data(args.dir, args.rows)
        others = [int(n) for n in args.spark_rows.split(",") if n.strip()]
        spark_section(parquet, args.repeat, args.dir, others)
        if args.spark_only:
            return
    if not args.big_only:
        csv, parquet = make_data(args.dir, args.rows)
        print(
            f"# {args.rows:,} rows × 4 attributes; CSV {os.path.getsize(csv) / 1e6:.0f} MB, "
            f"Parquet {os.path.getsize(parquet) / 1e6:.0f} MB; median of {args.repeat} fresh processes per path, interleaved"
        )
        imports = median_runs("imports", parquet, args.repeat)
        print(f"# resident memory after imports (every child's floor): {imports['peak_mb']:.0f} MB")
        print("| file | path | wall (median) | vs bare DuckDB | peak RSS | runs |")
        print("|---|---|---|---|---|---|")
        for label, path in (("Parquet", parquet), ("CSV", csv)):
            results = interleaved(["bare", "dpdesk-duckdb", "pandas"], path, args.repeat)
            for line in table_rows(label, results, results[0]):
                print(line, flush=True)
    if args.big or args.big_only:
        big = make_big(args.dir)
        cap = ["prlimit", f"--as={GiB}", "--"]
        print(
            f"\n# {os.path.getsize(big) / 1e9:.2f} GB Parquet under prlimit --as={GiB} (1 GiB address space)"
        )
        print("| path | environment | wall | peak RSS | result |")
        print("|---|---|---|---|---|")
        for case in ("dpdesk-duckdb", "bare", "pandas"):
            for env in ({"MALLOC_ARENA_MAX": "2"}, {}):
                r = measure(case, big, prefix=cap, env=env)
                shown = " ".join(f"{k}={v}" for k, v in env.items()) or "(default)"
                if "error" in r:
                    print(f"| {case} | {shown} | | | failed: {r['error']} |", flush=True)
                else:
                    print(
                        f"| {case} | {shown} | {r['wall_s']:.1f} s | {r['peak_mb']:.0f} MB | "
                        f"{r['rows']:,} rows |",
                        flush=True,
                    )
        if shutil.which("prlimit") is None:
            print("# prlimit not found: the capped runs above could not apply the cap")


if __name__ == "__main__":
    main()
