"""Measure the bundled app's start-up to its first painted window, and the bundle's size.

Usage: python packaging/measure_startup.py [EXECUTABLE] [--runs 5] [--cold]

EXECUTABLE defaults to packaging/out/dist/dpdesk/dpdesk. Each run starts ``EXECUTABLE --startup-probe``
(offscreen unless QT_QPA_PLATFORM is set), which opens the main window exactly as ``dpdesk`` does, prints
one line at the window's first paint event and quits. The time reported is wall time from spawning the
process to reading that line (outside view), next to the probe's own figure (from the kernel's process
start time). ``--cold`` first asks the kernel to drop its page cache (root only; skipped with a note if
not allowed), so the first run reads the bundle from disk. Prints the median and every run, and the
sizes of the bundle folder and of the .deb if present.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT = REPO / "packaging" / "out" / "dist" / "dpdesk" / "dpdesk"


def folder_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def drop_caches() -> bool:
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return True
    except OSError:
        return False


def one_run(exe: Path) -> tuple[float, float | None]:
    env = dict(os.environ)
    if not env.get("QT_QPA_PLATFORM"):
        env["QT_QPA_PLATFORM"] = "offscreen"
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [str(exe), "--startup-probe"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd="/",
    )
    assert proc.stdout is not None
    outside = None
    inside = None
    for line in proc.stdout:
        if "startup-probe: first paint" in line:
            outside = time.perf_counter() - t0
            m = re.search(r"first paint ([0-9.]+) s", line)
            inside = float(m.group(1)) if m else None
            break
    _, err = proc.communicate(timeout=60)
    if outside is None or proc.returncode != 0:
        raise SystemExit(
            f"measure_startup: {exe} --startup-probe failed (exit {proc.returncode}):\n{err[-3000:]}"
        )
    return outside, inside


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("exe", nargs="?", type=Path, default=DEFAULT)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--cold", action="store_true", help="drop the page cache before the first run (root)")
    args = ap.parse_args()
    exe = args.exe.resolve()
    if not exe.exists():
        raise SystemExit(f"measure_startup: {exe} not found (run packaging/build.sh bundle)")
    if args.cold:
        print(
            "page cache dropped before run 1"
            if drop_caches()
            else "could not drop the page cache (not root, "
            "or not allowed here): run 1 is as cold as this machine's cache leaves it"
        )
    runs = [one_run(exe) for _ in range(args.runs)]
    outside = [r[0] for r in runs]
    print(
        f"start-up to first paint, {args.runs} runs of {exe} --startup-probe "
        f"(QT_QPA_PLATFORM={os.environ.get('QT_QPA_PLATFORM') or 'offscreen'}):"
    )
    for i, (o, inside) in enumerate(runs, 1):
        print(
            f"  run {i}: {o:.3f} s from spawn to the first-paint line"
            + (f" (probe: {inside:.3f} s after process start)" if inside is not None else "")
        )
    print(f"  median {statistics.median(outside):.3f} s, min {min(outside):.3f} s, max {max(outside):.3f} s")
    bundle = exe.parent
    print(
        f"bundle {bundle}: {folder_size(bundle) / 2**20:.0f} MiB in "
        f"{sum(1 for p in bundle.rglob('*') if p.is_file()):,} files"
    )
    for deb in sorted((REPO / "packaging" / "out").glob("dpdesk_*.deb")):
        print(f"{deb.name}: {deb.stat().st_size / 2**20:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
