"""Cube building with measures and with a privacy unit: the cost of summing and of truncating in DuckDB.

Two comparisons, each alternated in one run (round-robin over fresh Python processes, so a busy machine
slows every path alike; the load average is printed beside each table):

1. **One measure** on the 5,000,000-row table of ``bench_cube.py`` (generated once and cached there):
   dpdesk's DuckDB build of the 4-attribute cube with the sum of one clamped measure (``hours_per_week``,
   bounds [0, 99]) against DuckDB's bare ``SELECT <columns>, COUNT(*), SUM(hours_per_week) … GROUP BY
   ALL`` on the same file, and dpdesk's build without the measure.
2. **Truncation** on a visits table of ``--people`` people (default 100,000) with 1 to 60 rows each
   (geometric, mean about 10: about 10⁶ rows), an integer ``patient_id``, three attributes and one
   measure: dpdesk's DuckDB build without a privacy unit against the same build keeping at most
   ``--max-rows`` rows per person (and, as a third path, also one row per cell).

Wall time is measured inside each child around the build only; medians over ``--repeat`` runs.
Run: ``.venv/bin/python benchmarks/bench_person.py [--repeat R] [--people N] [--max-rows K]
[--files parquet,csv]``. Not part of the test suite: nothing here asserts on timings.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_cube import SCHEMA as CUBE_SCHEMA
from bench_cube import make_data

HOURS = {"name": "hours", "column": "hours_per_week", "bounds": [0, 99], "nulls": "skip"}
VISITS_ATTRIBUTES = [
    {"name": "ward", "column": "ward", "kind": "categorical", "values": [f"W{i}" for i in range(8)]},
    {"name": "age", "column": "age", "kind": "numeric", "edges": [0, 18, 30, 45, 65, 80, 110]},
    {"name": "month", "column": "month", "kind": "numeric", "edges": list(range(1, 14))},
]
COST = {"name": "cost", "column": "cost", "bounds": [0, 5000], "nulls": "skip"}
SECRET = b"benchmark order key (not a real curator's secret)"


def make_visits(directory: str, people: int) -> tuple[str, str]:
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    parquet = os.path.join(directory, f"visits-{people}.parquet")
    csv = os.path.join(directory, f"visits-{people}.csv")
    if os.path.exists(parquet) and os.path.exists(csv):
        return parquet, csv
    print(f"generating visits of {people:,} people in {directory} ...", file=sys.stderr)
    os.makedirs(directory, exist_ok=True)
    rng = np.random.default_rng(33)
    per = np.minimum(rng.geometric(0.1, people), 60)
    pid = np.repeat(rng.permutation(people).astype(np.int64) * 7 + 1000, per)
    n = pid.size
    table = pa.table(
        {
            "patient_id": pa.array(pid),
            "ward": pa.array(np.array([f"W{i}" for i in range(9)])[rng.integers(0, 9, n)]),
            "age": pa.array(np.repeat(rng.integers(0, 100, people), per).astype(np.int64)),
            "month": pa.array(rng.integers(1, 13, n).astype(np.int64)),
            "cost": pa.array(np.round(rng.lognormal(5, 1.2, n), 2)),
        }
    )
    order = rng.permutation(n)  # rows of one person scattered through the file
    table = table.take(pa.array(order))
    pq.write_table(table, parquet + ".tmp")
    pacsv.write_csv(table, csv + ".tmp")
    os.replace(parquet + ".tmp", parquet)
    os.replace(csv + ".tmp", csv)
    return parquet, csv


def child(case: str, path: str, max_rows: int) -> None:
    from dpdesk.engine.schema import Schema
    from dpdesk.engine.truncation import OrderKey
    from dpdesk.sources import open_source

    key = OrderKey.from_secret(SECRET)
    t0 = time.perf_counter()
    extra: dict = {}
    if case == "bare-sum":
        import duckdb

        con = duckdb.connect()
        reader = "read_parquet" if path.endswith(".parquet") else "read_csv"
        cols = ", ".join(f'"{a["column"]}"' for a in CUBE_SCHEMA["attributes"])
        out = con.execute(
            f"SELECT {cols}, COUNT(*) AS n, SUM(hours_per_week) AS s FROM {reader}(?) GROUP BY ALL", [path]
        ).fetchnumpy()
        total = int(out["n"].sum())
    elif case in ("counts", "measure"):
        schema = Schema.from_dict({**CUBE_SCHEMA, **({"measures": [HOURS]} if case == "measure" else {})})
        cube = open_source(path).build_cube(schema)
        total = cube.total + cube.out_of_domain
    elif case in ("visits-rows", "visits-k", "visits-k-cell"):
        spec: dict = {"attributes": VISITS_ATTRIBUTES, "measures": [COST]}
        if case != "visits-rows":
            spec["privacy_unit"] = {"column": "patient_id", "max_rows": max_rows}
            if case == "visits-k-cell":
                spec["privacy_unit"]["one_row_per"] = "cell"
        cube = open_source(path).build_cube(Schema.from_dict(spec), order_key=key)
        total = cube.total + cube.out_of_domain
        if cube.truncation is not None:
            extra = {
                "dropped": cube.truncation.rows_dropped,
                "people_over": cube.truncation.people_over_limit,
            }
    else:
        raise SystemExit(f"unknown case {case}")
    wall = time.perf_counter() - t0
    print(json.dumps({"case": case, "wall_s": wall, "rows": total, **extra}))


COMPONENTS = {
    "untruncated cube (dpdesk's GROUP BY of 577 cells)": None,
    "GROUP BY patient_id, COUNT(*)": "SELECT COUNT(*) FROM (SELECT patient_id, COUNT(*) FROM {t} GROUP BY ALL)",
    "COUNT(*) OVER (PARTITION BY patient_id)": (
        "SELECT SUM(c) FROM (SELECT COUNT(*) OVER (PARTITION BY patient_id) AS c FROM {t})"
    ),
    "ROW_NUMBER() OVER (PARTITION BY patient_id ORDER BY month)": (
        "SELECT SUM(r) FROM (SELECT ROW_NUMBER() OVER (PARTITION BY patient_id ORDER BY month) AS r FROM {t})"
    ),
    "truncated cube (dpdesk's statement)": None,
}


def components(path: str, repeat: int, max_rows: int) -> None:
    """Where truncation's time goes: bare statements on the visits file, in one process, alternated."""
    import duckdb

    from dpdesk.engine.schema import Schema
    from dpdesk.engine.truncation import OrderKey
    from dpdesk.sources import open_source

    source = open_source(path)
    spec: dict = {"attributes": VISITS_ATTRIBUTES, "measures": [COST]}
    plain = source._query(Schema.from_dict(spec))
    spec["privacy_unit"] = {"column": "patient_id", "max_rows": max_rows}
    truncated = source._query(Schema.from_dict(spec), None, OrderKey.from_secret(SECRET))
    con = duckdb.connect(config={"preserve_insertion_order": False})
    reader = f"read_parquet('{path}')" if path.endswith(".parquet") else f"read_csv('{path}')"
    times: dict[str, list[float]] = {name: [] for name in COMPONENTS}
    loads = [os.getloadavg()[0]]
    for _ in range(repeat):
        for name, sql in COMPONENTS.items():
            if sql is None:
                q = plain if name.startswith("untruncated") else truncated
                statement, params = q.sql, list(q.params)
            else:
                statement, params = sql.format(t=reader), []
            t0 = time.perf_counter()
            con.execute(statement, params).fetchall()
            times[name].append(time.perf_counter() - t0)
        loads.append(os.getloadavg()[0])
    base = statistics.median(times[next(iter(COMPONENTS))])
    print(
        f"\n## where truncation's time goes, in one process, alternated, medians ({path.rsplit('.', 1)[1]}; "
        f"load average (1 min) {min(loads):.1f}–{max(loads):.1f})"
    )
    print("| statement | median | vs the untruncated cube |")
    print("|---|---|---|")
    for name, ts in times.items():
        m = statistics.median(ts)
        print(f"| {name} | {m:.2f} s | {m / base:.2f}× |")


def measure(case: str, path: str, max_rows: int) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--child", case, path, str(max_rows)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return {"case": case, "error": (r.stderr.strip().splitlines() or ["no output"])[-1][:160]}
    return json.loads(r.stdout.strip().splitlines()[-1])


def alternated(cases: list[str], path: str, repeat: int, max_rows: int) -> tuple[list[dict], str]:
    runs: dict[str, list[dict]] = {c: [] for c in cases}
    loads = [os.getloadavg()[0]]
    for _ in range(repeat):
        for c in cases:
            runs[c].append(measure(c, path, max_rows))
        loads.append(os.getloadavg()[0])
    out = []
    for c in cases:
        ok = [r for r in runs[c] if "error" in r] or None
        good = [r for r in runs[c] if "error" not in r]
        if not good:
            out.append(ok[0] if ok else {"case": c, "error": "no run"})
            continue
        out.append(
            {
                **good[0],
                "wall_s": statistics.median(r["wall_s"] for r in good),
                "all": [round(r["wall_s"], 2) for r in good],
            }
        )
    return out, f"load average (1 min) {min(loads):.1f}–{max(loads):.1f} during these runs"


def table(results: list[dict], baseline: str) -> None:
    base = next(r for r in results if r["case"] == baseline)
    print("| path | wall (median) | vs " + baseline + " | runs | rows | dropped by truncation |")
    print("|---|---|---|---|---|---|")
    for r in results:
        if "error" in r:
            print(f"| {r['case']} | failed: {r['error']} | | | | |")
            continue
        ratio = r["wall_s"] / base["wall_s"]
        dropped = f"{r['dropped']:,} rows ({r['people_over']:,} people)" if "dropped" in r else ""
        print(
            f"| {r['case']} | {r['wall_s']:.2f} s | {ratio:.2f}× | {', '.join(map(str, r['all']))} | "
            f"{r['rows']:,} | {dropped} |",
            flush=True,
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rows", type=int, default=5_000_000, help="rows of the measure comparison's table")
    ap.add_argument("--people", type=int, default=100_000)
    ap.add_argument("--max-rows", type=int, default=5)
    ap.add_argument("--files", default="parquet,csv")
    ap.add_argument(
        "--only",
        choices=["measure", "truncation", "components"],
        help="run one of the two comparisons, or only the breakdown of truncation's time",
    )
    ap.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "dpdesk-bench-cube"))
    ap.add_argument("--child", nargs=3, metavar=("CASE", "PATH", "K"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], args.child[1], int(args.child[2]))
        return
    files = [f.strip() for f in args.files.split(",") if f.strip()]
    print(
        f"# {os.cpu_count()} cores, python {sys.version.split()[0]}; median of {args.repeat} fresh processes"
    )
    if args.only in (None, "measure"):
        csv, parquet = make_data(args.dir, args.rows)
        for kind in files:
            path = parquet if kind == "parquet" else csv
            results, load = alternated(["bare-sum", "measure", "counts"], path, args.repeat, args.max_rows)
            print(f"\n## one measure, {args.rows:,} rows, {kind} ({load})")
            table(results, "bare-sum")
    if args.only == "components":
        parquet, csv = make_visits(args.dir, args.people)
        for kind in files:
            components(parquet if kind == "parquet" else csv, args.repeat, args.max_rows)
        return
    if args.only in (None, "truncation"):
        parquet, csv = make_visits(args.dir, args.people)
        for kind in files:
            path = parquet if kind == "parquet" else csv
            cases = ["visits-rows", "visits-k", "visits-k-cell"]
            results, load = alternated(cases, path, args.repeat, args.max_rows)
            rows = next((r["rows"] for r in results if "rows" in r), 0)
            print(
                f"\n## truncation to {args.max_rows} rows per person, {rows:,} rows of {args.people:,} people, "
                f"{kind} ({load})"
            )
            table(results, "visits-rows")


if __name__ == "__main__":
    main()
