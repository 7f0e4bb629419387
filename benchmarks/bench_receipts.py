"""What the receipt log (dpdesk/store/receipts.py) adds to recording one ledger entry.

Run from the repository root:

    .venv/bin/python benchmarks/bench_receipts.py [--entries 150] [--rounds 4]

A small project records ENTRIES refusals (the cheapest entry: no source read, no draw) through the one
append path (``Project._record``), once with the receipt log written (one appended, fsync'd line per
entry) and once without, alternating the two ROUNDS times so both meet the same machine load; it prints
the median milliseconds per entry of each and their difference, with the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

SCHEMA = {
    "attributes": [
        {"name": "age", "kind": "numeric", "edges": [0, 30, 150]},
        {"name": "income", "kind": "categorical", "values": ["a", "b"]},
    ]
}


def per_entry_ms(entries: int, receipts_on: bool) -> float:
    from dpdesk.store import Project, receipts

    folder = Path(tempfile.mkdtemp(prefix="dpdesk-bench-receipts-"))
    (folder / "t.csv").write_text("age,income\n1,a\n40,b\n", encoding="utf-8")
    project = Project.create(
        folder / "p.dpdesk",
        name="bench",
        schema=SCHEMA,
        source_location=str(folder / "t.csv"),
        total_budget=1.0,
    )
    for i in range(entries):
        project.add_request("[1,1,1,1]", 5, 0.05, "", f"r{i}")
    record = receipts.record
    if not receipts_on:
        receipts.record = lambda *args, **kwargs: True
    try:
        start = time.perf_counter()
        for i in range(entries):
            project.reject(f"r{i}")
        elapsed = time.perf_counter() - start
    finally:
        receipts.record = record
        project.close()
    return elapsed / entries * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=150)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    os.environ.setdefault("DPDESK_DATA_DIR", tempfile.mkdtemp(prefix="dpdesk-bench-data-"))
    times: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(args.rounds):
        for on in (False, True):
            times[on].append(per_entry_ms(args.entries, on))
    without, with_log = statistics.median(times[False]), statistics.median(times[True])
    print(
        f"ms per ledger entry ({args.entries} entries, median of {args.rounds} alternating rounds): "
        f"without the receipt log {without:.2f}, with it {with_log:.2f} (+{with_log - without:.2f}); "
        f"load average {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
