"""Time the store's release path for a 2·10⁶-count partition release: record, ledger view, verify.

Run (from anywhere; it prints its table):

    .venv/bin/python benchmarks/bench_release_path.py                # the 10⁶-cell cube
    .venv/bin/python benchmarks/bench_release_path.py --write-docs   # and replaces its section of docs/performance.md
    .venv/bin/python benchmarks/bench_release_path.py --quick        # small cube (never written)

A test project over bench_partition's 10⁶-cell cube (a 20 000-row table) releases a binary interval tree
through ``Project.release(plan)`` with the seeded sampler, so that the times are the store's own
(checks, canonical JSON, hash, fsync'd commit, the view's re-derivation); OpenDP's draw, measured by
bench_partition.py, comes on top. Then the project's ledger view takes the entry, and ``verify``
re-derives everything from the raw file. Last, a second project over the same table publishes the same tree
end to end as the curator meets it — plan, OpenDP's draw (the vetted sampler), record — against the
target of issue 15 (publish a tree over 10⁶ cells in under 10 s; ``--no-opendp`` skips it).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from evaluation.sections import DOCS, add_write_docs, write_section

from dpdesk.engine.mechanisms.noise import SeededSampler
from dpdesk.engine.partition.guarantee import preview
from dpdesk.engine.partition.plan import tree_plan
from dpdesk.engine.partition.release_plan import PartitionReleasePlan
from dpdesk.store import Project


def _table(folder: Path, leaves: int, others: int) -> tuple[Path, dict]:
    """bench_partition's cube as a 20 000-row CSV table, and its declared schema."""
    attrs = [{"name": "age", "column": "age", "kind": "numeric", "edges": list(range(leaves + 1))}]
    attrs += [
        {"name": f"c{i}", "column": f"c{i}", "kind": "categorical", "values": [f"v{j}" for j in range(10)]}
        for i in range(others)
    ]
    rng = np.random.default_rng(0)
    table = folder / "table.csv"
    with open(table, "w", encoding="utf-8") as f:
        f.write(",".join(["age", *(f"c{i}" for i in range(others))]) + "\n")
        for _ in range(20000):
            f.write(
                f"{rng.uniform(0, leaves):.3f},"
                + ",".join(f"v{rng.integers(10)}" for _ in range(others))
                + "\n"
            )
    return table, {"attributes": attrs}


def _project(path: Path, table: Path, schema: dict, *, test_project: bool) -> Path:
    Project.create(
        path,
        name="bench",
        schema=schema,
        source_location=str(table),
        total_budget=10.0,
        test_project=test_project,
    ).close()
    return path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-opendp", action="store_true", help="skip the end-to-end release with OpenDP's draw")
    add_write_docs(ap, "the section 'release-path' of docs/performance.md")
    args = ap.parse_args(argv)
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        table, schema = _table(Path(tmp), 256 if args.quick else 1024, 2 if args.quick else 3)
        path = _project(Path(tmp) / "bench.dpdesk", table, schema, test_project=True)
        with Project.open(path, "w") as p:
            p.cube()  # the table scan is not part of the release path's cost
            plan = tree_plan(p.schema, "age", 2)
            pv = preview(plan, alpha=1.0, total_budget=10.0, cell_costs=p.view().cell_costs)
            t0 = time.perf_counter()
            release = p.release(PartitionReleasePlan(pv, p.basis()), SeededSampler(1))
            t_release = time.perf_counter() - t0
            t0 = time.perf_counter()
            view = p.view()
            t_view = time.perf_counter() - t0
            assert view.structured_releases and view.system_cost == 1.0
            t0 = time.perf_counter()
            report = p.verify(extends=[release.witness])
            t_verify = time.perf_counter() - t0
            assert report.ok, report.problems
        t_publish = None
        if not args.no_opendp:
            # end to end as the curator meets it: plan, OpenDP's draw (the vetted sampler), record
            end_to_end = _project(Path(tmp) / "end-to-end.dpdesk", table, schema, test_project=False)
            with Project.open(end_to_end, "w") as p2:
                p2.cube()
                t0 = time.perf_counter()
                pv2 = preview(
                    tree_plan(p2.schema, "age", 2),
                    alpha=1.0,
                    total_budget=10.0,
                    cell_costs=p2.view().cell_costs,
                )
                p2.release(PartitionReleasePlan(pv2, p2.basis()))
                t_publish = time.perf_counter() - t0
        size_mb = path.stat().st_size / 1e6
    load1 = os.getloadavg()[0]
    print(
        f"{plan.n_rows:,} counts over {p.schema.n_cells:,} cells: release {t_release:.2f} s, view {t_view:.2f} s, "
        f"verify {t_verify:.2f} s, file {size_mb:.1f} MB"
        + (f", end to end with OpenDP {t_publish:.2f} s" if t_publish is not None else "")
    )
    md = [
        "## The store's release path for a large release",
        "",
        "Reproduce: `.venv/bin/python benchmarks/bench_release_path.py --write-docs` (`--quick`: a small cube). "
        f"A binary interval tree over {p.schema.n_cells:,} cells ({plan.n_rows:,} counts) released through "
        "`Project.release(plan)` with the seeded sampler, so the time is the store's own: basis and budget "
        "checks, the mechanism's privacy map re-derived from the payload, canonical JSON, the hash chain and the "
        "fsync'd commit. OpenDP's draw (bench_partition.py: 6.6 s for this tree on a quiet machine) comes on top. "
        "*View* = the project's ledger view taking the new entry (charged on every cell; its rows stay out of "
        "the History, over `HISTORY_ROW_LIMIT`); *verify* = `verify --extends` from the raw file.",
        "",
        f"Measured {time.strftime('%Y-%m-%d')} on {os.cpu_count()} cores; load average {load0:.1f} at the start and "
        f"{load1:.1f} at the end"
        + (
            " (other jobs shared the machine: absolute times are inflated)." if max(load0, load1) > 2 else "."
        ),
        "",
        "| counts | record (release path) | ledger view | verify | project file | publish end to end (plan, OpenDP draw, record) |",
        "|---|---|---|---|---|---|",
        f"| {plan.n_rows:,} | {t_release:.2f} s | {t_view:.2f} s | {t_verify:.2f} s | {size_mb:.1f} MB | "
        + (f"{t_publish:.2f} s |" if t_publish is not None else "not run |"),
    ]
    print("\n".join(md))
    if args.write_docs and not args.quick:
        write_section(DOCS / "performance.md", "release-path", "\n".join(md))
        print("wrote section 'release-path' of docs/performance.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
