"""A long project for timing: thousands of releases over a 10⁶-cell cube, made through the real release path.

Every entry is what a curator's session records: a count request queued in its text form (a random box
over the 32⁴ = 1,048,576-cell cube of a generated 200 000-row Parquet table), assessed from the ledger
view, released through ``Project.release`` (a fresh answer drawn on the cube, the entry committed to the
hash-chained ledger) — one request at a time, each against the view its predecessors left. Nothing is
batched or written behind the project's back; the one concession to speed is the noise: the project is
a test project drawing from the seeded sampler (``SeededSampler``), not OpenDP, so a run is reproducible.
The budget is large (10⁹) so that every request is answered fresh or from history, never refused.

Last, one pending request ``target`` is queued: the sum of three released boxes, in text form, so that
assessing it computes a BLUE over the whole history and a posterior (what ``bench_engine.py --cold-cli``
times).

The file is built as ``long-N.dpdesk.tmp`` and renamed when complete; an interrupted run resumes from
the temporary file (the releases already recorded are kept). Run::

    .venv/bin/python benchmarks/long_project.py --entries 5000 [--dir DIR]

It prints the path; ``make_long_project(directory, entries)`` does the same from Python.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

SHAPE = (32, 32, 32, 32)
ATTRIBUTES = ("a", "b", "c", "d")
LONG_SCHEMA = {
    "attributes": [{"name": n, "column": n, "kind": "numeric", "edges": list(range(33))} for n in ATTRIBUTES]
}
TARGET = "target"


def box_text(rng: np.random.Generator, max_frac: float = 0.5) -> tuple[str, list[tuple[int, int]]]:
    """A random box's count in text form, e.g. ``count(a=["3-4", "4-5"], c="7-8")``, and its ranges."""
    ranges, args = [], []
    for name, k in zip(ATTRIBUTES, SHAPE):
        width = int(rng.integers(1, max(1, int(k * max_frac)) + 1))
        lo = int(rng.integers(0, k - width + 1))
        ranges.append((lo, lo + width))
        labels = [f'"{i}-{i + 1}"' for i in range(lo, lo + width)]
        args.append(f"{name}={labels[0]}" if width == 1 else f"{name}=[{', '.join(labels)}]")
    return f"count({', '.join(args)})", ranges


def _table(directory: str) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = os.path.join(directory, "long-table.parquet")
    if not os.path.exists(table):
        rng = np.random.default_rng(0)
        tmp = table + ".tmp"
        pq.write_table(pa.table({n: rng.integers(0, 32, 200_000) for n in ATTRIBUTES}), tmp)
        os.replace(tmp, table)
    return table


def make_long_project(directory: str, entries: int, *, quiet: bool = False) -> tuple[str, str]:
    """``(path, request id)``: a project with ``entries`` fresh releases and the pending ``target``
    request (see the module docstring). Reused when it exists; resumed when a run was interrupted."""
    from dpdesk.engine.mechanisms.noise import SeededSampler
    from dpdesk.store import Project

    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"long-{entries}.dpdesk")
    if os.path.exists(path):
        return path, TARGET
    table = _table(directory)
    tmp = path + ".tmp"
    if not os.path.exists(tmp):
        Project.create(
            tmp,
            name=f"{entries} releases",
            schema=LONG_SCHEMA,
            source_location=table,
            total_budget=1e9,
            test_project=True,
        ).close()
    rng = np.random.default_rng(entries)
    texts = [box_text(rng)[0] for _ in range(entries)]  # the same boxes on a resumed run
    accuracy = rng.uniform(20, 200, size=entries)
    t0 = time.perf_counter()
    with Project.open(tmp, "w") as p:
        # resume from what was released: a run stopped between queueing a request and recording its
        # release leaves that request pending, and it is released now (not skipped, nor queued twice)
        status = {r.id: r.status for r in p.requests()}
        done = sum(1 for rid, st in status.items() if rid != TARGET and st != "pending")
        sampler = SeededSampler(entries * 7919 + done)
        for i in range(done, entries):
            rid = f"q{i}"
            if rid not in status:
                p.add_request(texts[i], float(accuracy[i]), 0.05, request_id=rid)
            p.release(p.assess(rid), sampler)
            if not quiet and ((i + 1) % 250 == 0 or i + 1 == entries):
                print(f"  {i + 1} releases ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
        if TARGET not in status:
            picks = np.random.default_rng(entries + 1).choice(entries, size=3, replace=False)
            target = " + ".join(texts[int(j)] for j in picks)
            p.add_request(target, 300.0, 0.05, request_id=TARGET)
    os.replace(tmp, path)
    if os.path.exists(tmp + ".cache"):  # the view cache written at close (keyed by the ledger, not the name)
        os.replace(tmp + ".cache", path + ".cache")
    for suffix in ("-wal", "-shm", ".lock"):
        if os.path.exists(tmp + suffix):
            os.remove(tmp + suffix)
    return path, TARGET


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", type=int, default=5000, help="fresh releases in the ledger (default 5000)")
    ap.add_argument(
        "--dir",
        default=os.path.join(tempfile.gettempdir(), "dpdesk-bench-engine"),
        help="where the project (long-N.dpdesk) and its table are kept",
    )
    args = ap.parse_args(argv)
    t = time.perf_counter()
    path, rid = make_long_project(args.dir, args.entries)
    print(f"{path} (pending request {rid!r}; {time.perf_counter() - t:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
