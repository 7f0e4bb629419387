"""The window on a long project: time from opening it to the first assessment shown, and the GUI stall.

A real window (offscreen Qt, the app's own :class:`~dpdesk.gui.app.main_window.MainWindow`) opens a copy of
a long project (by default the one ``benchmarks/bench_engine.py --cold-cli`` generates: fresh releases of
random boxes over a 32⁴ = 1,048,576-cell cube, one pending request summing three released boxes). From
``open_project`` it measures

- *first assessment*: until the answer panel shows the engine's assessment of the pending request that
  opens selected (its decision badge is set), and
- *settled*: until the Requests page has drawn everything (the queue, the budget heatmap) and no task
  runs,
- *Audit page*: then, from showing the Audit page (it reads its table when first shown) to its ledger
  table and cost curve drawn,

and, meanwhile, the GUI thread's longest stall: the largest gap between beats of a 10 ms timer (a busy
event loop cannot run it). ``--profile`` adds the GUI thread's cProfile of one more opening (the workers'
time is not in it: it is what the window waits for).

Each run copies the project (and its ``.cache``, when ``--cache`` is on) into a fresh folder first: the
app writes the ledger-view cache when it closes a project, and the original must stay as it is.

Usage: ``.venv/bin/python benchmarks/bench_gui_open.py [--project P] [--repeat 3] [--request ID] [--no-cache] [--profile]``
(``--project`` defaults to ``$TMPDIR/dpdesk-bench-engine/long-5000.dpdesk``).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

DEFAULT = Path(tempfile.gettempdir()) / "dpdesk-bench-engine" / "long-5000.dpdesk"


class Heartbeat:
    """A timer on the GUI thread (10 ms unless asked); the longest gap between its beats is the longest
    stall."""

    def __init__(self, interval_ms: int = 10) -> None:
        from PySide6.QtCore import QTimer

        self.timer = QTimer()
        self.timer.setInterval(interval_ms)
        self.timer.timeout.connect(self._beat)
        self.gaps: list[float] = []
        self.last = 0.0

    def _beat(self) -> None:
        now = time.perf_counter()
        self.gaps.append(now - self.last)
        self.last = now

    def start(self) -> None:
        self.gaps.clear()
        self.last = time.perf_counter()
        self.timer.start()

    def stop(self) -> float:
        self._beat()  # the time since the last beat counts too
        self.timer.stop()
        return max(self.gaps)


def _copy(project: Path, folder: Path, cache: bool) -> Path:
    from dpdesk.store import view_cache

    out = folder / project.name
    shutil.copyfile(project, out)
    src = view_cache.cache_path(project)
    if cache and src.exists():
        shutil.copyfile(src, view_cache.cache_path(out))
    return out


def _settled(win) -> bool:
    """The Requests page has drawn everything: the assessment, the queue, the budget; nothing runs."""
    from dpdesk.gui.runtime.tasks import TaskRunner

    page = win.requests
    if (
        page is None
        or page.answer.assessment is None
        or page.model.rowCount() == 0
        or win.session.runner.is_running()
    ):
        return False
    return not any(r.is_running() for r in page.findChildren(TaskRunner))


def _audit_shown(win) -> bool:
    return win.audit.model.rowCount() > 0 and not win.audit.runner.is_running()


ERRORS: list[str] = []


def _quiet_dialogs() -> None:
    """Message boxes are recorded, never shown: a modal box would stop the event loop being measured
    (a generated project's table may be elsewhere: the Data page then reports it cannot open it)."""
    from dpdesk.gui import dialogs

    dialogs.show_error = lambda parent, title, message, detail="": ERRORS.append(f"{title}: {message}")
    dialogs.show_info = lambda parent, title, message: None


def _wait(app, condition, limit: float) -> float | None:
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < limit:
        app.processEvents()
        if condition():
            return time.perf_counter() - t0
        time.sleep(0.002)
    return None


def open_once(project: Path, cache: bool, request: str | None, profile: bool = False) -> dict[str, float]:
    """Open a fresh copy of ``project`` in a new window; the times (seconds) and the longest stalls."""
    from dpdesk.gui.app.application import application, settings_at
    from dpdesk.gui.app.main_window import MainWindow

    app = application()
    _quiet_dialogs()
    with tempfile.TemporaryDirectory(prefix="dpdesk-gui-open-") as tmp:
        path = _copy(project, Path(tmp), cache)
        win = MainWindow(settings_at(str(Path(tmp) / "settings.ini")))
        win.show()
        app.processEvents()
        beat = Heartbeat()
        prof = cProfile.Profile() if profile else None
        beat.start()
        t0 = time.perf_counter()
        if prof:
            prof.enable()
        win.open_project(str(path))
        opened = time.perf_counter() - t0
        first = settled = None
        while settled is None and time.perf_counter() - t0 < 600:
            app.processEvents()
            if first is None and win.requests is not None and win.requests.answer.assessment is not None:
                first = time.perf_counter() - t0
            if first is not None and _settled(win):
                settled = time.perf_counter() - t0
            time.sleep(0.002)
        stall = beat.stop()
        a = win.requests.answer.assessment
        nan = float("nan")
        out = {
            "open_call": opened,
            "first": first or nan,
            "settled": settled or nan,
            "stall": stall,
            "shown": a.request_id if a is not None else "?",
            "decision": getattr(a, "decision", "?"),
            "chosen": nan,
            "chosen_stall": nan,
        }
        # then another request chosen in the queue (e.g. one history estimates: a BLUE and a posterior)
        if request is not None and request != out["shown"]:
            panel = win.requests.answer
            beat.start()
            win.requests.select_request(request)
            out["chosen"] = (
                _wait(
                    app,
                    lambda: (
                        panel.assessment is not None
                        and panel.assessment.request_id == request
                        and not panel.runner.is_running()
                    ),
                    300,
                )
                or nan
            )
            out["chosen_stall"] = beat.stop()
            out["chosen_decision"] = getattr(panel.assessment, "decision", "?")
        # then the Audit page, which reads its table when first shown
        beat.start()
        win.show_page("audit")
        out["audit"] = _wait(app, lambda: _audit_shown(win), 900) or nan
        out["audit_stall"] = beat.stop()
        out["entries"] = win.audit.model.rowCount()
        if prof:
            prof.disable()
        win.close()
        app.processEvents()
        win.deleteLater()
        app.processEvents()
    if prof:
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(45)
        print(s.getvalue())
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--project", type=Path, default=DEFAULT, help="the long project to open (copied first)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--no-cache", action="store_true", help="open without its ledger-view cache (replays the ledger)"
    )
    ap.add_argument(
        "--request", default="target", help="a request to select after opening and time (default: target)"
    )
    ap.add_argument(
        "--profile", action="store_true", help="print the GUI thread's profile of one more opening"
    )
    args = ap.parse_args(argv)
    if not args.project.exists():
        print(
            f"no project at {args.project}: generate one with benchmarks/bench_engine.py --cold-cli",
            file=sys.stderr,
        )
        return 2
    cache = not args.no_cache
    print(
        f"{args.project} ({args.project.stat().st_size / 1e6:.0f} MB), cache {'on' if cache else 'off'}; "
        f"load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    runs = []
    for i in range(args.repeat):
        r = open_once(args.project, cache, args.request)
        runs.append(r)
        print(
            f"  run {i + 1}: open_project returned {r['open_call'] * 1000:.0f} ms, first assessment "
            f"{r['first'] * 1000:.0f} ms ({r['shown']}: {r['decision']}), settled {r['settled'] * 1000:.0f} ms, "
            f"longest GUI stall {r['stall'] * 1000:.0f} ms; {args.request} chosen: assessed in "
            f"{r['chosen'] * 1000:.0f} ms ({r.get('chosen_decision', '-')}), longest stall "
            f"{r['chosen_stall'] * 1000:.0f} ms; Audit page ({r['entries']} entries) {r['audit']:.1f} s, "
            f"longest stall {r['audit_stall'] * 1000:.0f} ms; load average {os.getloadavg()[0]:.1f}",
            flush=True,
        )
    keys = ("open_call", "first", "settled", "stall", "chosen", "chosen_stall", "audit", "audit_stall")
    med = {k: statistics.median(r[k] for r in runs) for k in keys}
    print(
        f"median of {len(runs)}: first assessment {med['first'] * 1000:.0f} ms, settled {med['settled'] * 1000:.0f} ms, "
        f"longest GUI stall {med['stall'] * 1000:.0f} ms (open_project call {med['open_call'] * 1000:.0f} ms); "
        f"{args.request} {med['chosen'] * 1000:.0f} ms (stall {med['chosen_stall'] * 1000:.0f} ms); "
        f"Audit page {med['audit']:.1f} s, longest stall {med['audit_stall'] * 1000:.0f} ms; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    for e in sorted(set(ERRORS)):
        print(f"  (message shown meanwhile: {e})")
    if args.profile:
        open_once(args.project, cache, args.request, profile=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
