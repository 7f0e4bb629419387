"""The window after a release: how long the GUI thread is busy redrawing once a release is recorded.

A real window (offscreen Qt, the app's own :class:`~dpdesk.gui.app.main_window.MainWindow`) opens a fresh
demo project and answers its pending count requests one after another, each through the answer panel's
own path: the assessment shown, the release recorded on a worker (a sibling connection), then the GUI
thread told that the ledger grew. Measured per release, on the GUI thread only:

- *redraw*: from the moment the recorded release is handed back to the GUI thread until the event loop
  is idle again (every view that redraws on the new entry has done so, posted events included);
- *stall*: the longest gap between beats of a 10 ms timer over the same span (a busy event loop cannot
  run it);
- *CPU*: the GUI thread's own CPU time over the same span (``time.thread_time``): the work itself,
  which the machine's load stretches less than the wall-clock figures.

The figures go with the machine's load (``uptime``): the GUI thread shares the cores with everything
else. ``--profile`` adds the GUI thread's cProfile of the redraws.

Usage: ``.venv/bin/python benchmarks/bench_gui_release.py [--releases 12] [--page requests|audit] [--profile]``
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_gui_open import Heartbeat


def _wait(app, done, timeout: float = 60.0) -> None:
    end = time.perf_counter() + timeout
    while not done():
        app.processEvents()
        if time.perf_counter() > end:
            raise TimeoutError("the window did not get there in time")
        time.sleep(0.002)


def _idle(app) -> None:
    """Run the event loop until it has nothing left to do (posted events, deferred redraws)."""
    for _ in range(5):
        app.processEvents()
        app.sendPostedEvents()


def run(releases: int, page: str, profile: bool) -> dict:
    from PySide6.QtCore import QSettings

    from dpdesk.gui.app.application import application
    from dpdesk.gui.app.main_window import MainWindow

    app = application()
    folder = Path(tempfile.mkdtemp(prefix="dpdesk-bench-release-"))
    settings = QSettings(str(folder / "settings.ini"), QSettings.Format.IniFormat)
    win = MainWindow(settings, demo_folder=folder / "data")
    win.show()
    win.start.demo_btn.click()
    _wait(app, lambda: win.session is not None)
    session = win.session
    if page == "audit":
        win.show_page("audit")
    panel = win.requests.answer
    redraws, stalls, cpu = [], [], []
    prof = cProfile.Profile() if profile else None
    for _ in range(releases):
        pending = [r for r in session.requests() if r.status == "pending" and r.kind == "count"]
        if not pending:
            break
        win.requests.select_request(pending[0].id)
        _wait(app, lambda: panel.assessment is not None and not panel.runner.is_running())
        a = panel.assessment
        if a is None or a.decision == "reject":
            session.reject(a.request_id if a is not None else pending[0].id)
            _idle(app)
            continue
        release = session.release_job(a)(None)  # recorded on this thread's sibling, as a worker would
        beat = Heartbeat()
        beat.start()
        t0, c0 = time.perf_counter(), time.thread_time()
        if prof is not None:
            prof.enable()
        panel._released(release)  # what the task runner calls on the GUI thread when the worker is done
        _idle(app)
        if prof is not None:
            prof.disable()
        redraws.append((time.perf_counter() - t0) * 1000.0)
        cpu.append((time.thread_time() - c0) * 1000.0)
        stalls.append(beat.stop() * 1000.0)
        _wait(app, lambda: not panel.runner.is_running())
    out = {
        "releases": len(redraws),
        "redraw_ms_median": statistics.median(redraws) if redraws else None,
        "redraw_ms_max": max(redraws) if redraws else None,
        "stall_ms_median": statistics.median(stalls) if stalls else None,
        "stall_ms_max": max(stalls) if stalls else None,
        "cpu_ms_median": statistics.median(cpu) if cpu else None,
        "cpu_ms_max": max(cpu) if cpu else None,
        "load": os.getloadavg(),
    }
    if prof is not None:
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(25)
        out["profile"] = buf.getvalue()
    session.close(save_cache=False)
    win.session = None
    win.close()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--releases", type=int, default=12)
    ap.add_argument("--page", choices=("requests", "audit"), default="requests")
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args(argv)
    out = run(args.releases, args.page, args.profile)
    load = ", ".join(f"{x:.2f}" for x in out.pop("load"))
    prof = out.pop("profile", None)
    for k, v in out.items():
        print(f"{k:18s} {v if not isinstance(v, float) else f'{v:.1f}'}")
    print(f"load average       {load}")
    if prof:
        print(prof)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
