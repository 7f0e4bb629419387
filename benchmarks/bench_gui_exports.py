"""The window on a long project: the GUI thread's longest stall while the Audit page exports, and on close.

A real window (offscreen Qt, the app's :class:`~dpdesk.gui.app.main_window.MainWindow`) opens a copy of a long
project (default: ``benchmarks/long_project.py``'s 5 000-entry one) **without** its ledger-view cache, so
the ledger is replayed and closing the project has a cache to write. Once the Requests and Audit pages have
drawn, it measures, each time as the largest gap between beats of a 10 ms timer on the GUI thread (a busy
event loop cannot run it) and the wall time until the work is done:

- *CSV*: *Export CSV…* until the ledger CSV is written;
- *HTML*: *Export HTML report…* until the report (with its ``verify``) is written;
- *close*: *Close project* until the project is closed and its ledger-view cache written;

and first, for comparison, the idle event loop's longest gap over 5 s under the same load, and the time the
report's plots take to draw on the GUI thread (``AuditPage.report_images``, part of the HTML export's stall).

The file choosers are answered with paths in a scratch folder; message boxes are recorded, not shown.
The original project is never opened: each run works on a copy.

Usage: ``.venv/bin/python benchmarks/bench_gui_exports.py [--project P] [--repeat 1] [--skip html]``
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_gui_open import DEFAULT, ERRORS, Heartbeat, _audit_shown, _quiet_dialogs, _settled, _wait

LIMIT = 1800.0  # seconds any one step may take before the run gives up on it
IDLE = 5.0  # seconds of idle event loop measured first


def _exporting(win) -> bool:
    exporting = getattr(win.audit, "exporting", None)  # absent before exports ran on workers
    return bool(exporting is not None and exporting())


def _closing(win) -> bool:
    closing = getattr(win, "closing", None)  # absent before the cache was written on a worker
    return bool(closing is not None and closing.is_running())


def run_once(project: Path, skip: set[str]) -> dict[str, float]:
    """Open a copy of ``project`` (no cache), export CSV and HTML, close; seconds and longest stalls."""
    from dpdesk.gui.app.application import application, settings_at
    from dpdesk.gui.app.main_window import MainWindow
    from dpdesk.gui.pages import audit_page
    from dpdesk.store import view_cache

    app = application()
    _quiet_dialogs()
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="dpdesk-gui-exports-") as tmp:
        path = Path(tmp) / project.name
        shutil.copyfile(project, path)
        win = MainWindow(settings_at(str(Path(tmp) / "settings.ini")))
        win.show()
        app.processEvents()
        t0 = time.perf_counter()
        win.open_project(str(path))
        _wait(app, lambda: _settled(win), LIMIT)
        win.show_page("audit")
        _wait(app, lambda: _audit_shown(win), LIMIT)
        out["opened"] = time.perf_counter() - t0
        beat = Heartbeat()
        beat.start()  # the idle event loop under the same load: what a stall is compared with
        _wait(app, lambda: False, IDLE)
        out["idle_stall"] = beat.stop()
        if hasattr(win.audit, "report_images"):  # the report's plots, drawn on the GUI thread
            t1 = time.perf_counter()
            win.audit.report_images()
            out["images"] = time.perf_counter() - t1
        for name, button, target in (
            ("csv", win.audit.csv_btn, "ledger.csv"),
            ("html", win.audit.html_btn, "report.html"),
        ):
            if name in skip:
                continue
            file = Path(tmp) / target
            audit_page.save_file_name = lambda *a, _f=file: str(_f)
            beat.start()
            t1 = time.perf_counter()
            button.click()
            done = _wait(app, lambda: file.exists() and not _exporting(win), LIMIT)
            out[name] = time.perf_counter() - t1 if done is not None else float("nan")
            out[f"{name}_stall"] = beat.stop()
            out[f"{name}_mb"] = file.stat().st_size / 1e6 if file.exists() else float("nan")
        cache = view_cache.cache_path(path)
        beat.start()
        t1 = time.perf_counter()
        win.close_project()
        done = _wait(app, lambda: not _closing(win), LIMIT)
        out["close"] = time.perf_counter() - t1 if done is not None else float("nan")
        out["close_stall"] = beat.stop()
        out["cache_mb"] = cache.stat().st_size / 1e6 if cache.exists() else 0.0
        win.close()
        app.processEvents()
        win.deleteLater()
        app.processEvents()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--project", type=Path, default=DEFAULT, help="the long project (copied first, without its cache)"
    )
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument(
        "--skip", action="append", default=[], choices=("csv", "html"), help="an export not to time"
    )
    args = ap.parse_args(argv)
    if not args.project.exists():
        print(f"no project at {args.project}: generate one with benchmarks/long_project.py", file=sys.stderr)
        return 2
    print(
        f"{args.project} ({args.project.stat().st_size / 1e6:.0f} MB), no cache; load average "
        f"{os.getloadavg()[0]:.1f}",
        flush=True,
    )
    for i in range(args.repeat):
        r = run_once(args.project, set(args.skip))
        parts = [
            f"opened and drawn in {r['opened']:.1f} s",
            f"idle event loop's longest gap {r['idle_stall'] * 1000:.0f} ms",
        ]
        if "images" in r:
            parts.append(f"the report's plots {r['images'] * 1000:.0f} ms on the GUI thread")
        for name in ("csv", "html"):
            if name in r:
                parts.append(
                    f"{name.upper()} {r[f'{name}_mb']:.0f} MB in {r[name]:.1f} s, longest GUI stall "
                    f"{r[f'{name}_stall'] * 1000:.0f} ms"
                )
        parts.append(
            f"close {r['close']:.1f} s (cache {r['cache_mb']:.0f} MB), longest GUI stall "
            f"{r['close_stall'] * 1000:.0f} ms"
        )
        print(f"  run {i + 1}: " + "; ".join(parts) + f"; load average {os.getloadavg()[0]:.1f}", flush=True)
    for e in sorted(set(ERRORS)):
        print(f"  (message shown meanwhile: {e})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
