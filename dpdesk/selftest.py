"""``dpdesk --self-test``: prove that this installation of dpdesk works, end to end, in a few seconds.

It is the check an installer runs after installing (and CI runs on every bundle): the same code path a
curator uses, on the bundled demo, offscreen. Step by step it

1. finds the bundled resources through ``importlib.resources`` (never ``__file__``), so it checks the
   source tree, an installed wheel and a PyInstaller bundle alike;
2. creates a temporary *test* project from the demo table and schema, builds the cube;
3. queues the demo requests plus two of its own and answers one **fresh** (OpenDP's secure sampler,
   recorded in the ledger before it is seen) and one **inferred** from that history (free);
4. verifies the ledger (hash chain, budget recomputation) after reopening the file read-only;
5. starts Qt offscreen, fails if no font family is found (text would render as empty boxes), renders
   the main window once (the self-test project open, a request selected and assessed) into a
   ``QImage`` and fails if the image is blank or the window reported an error.

It prints one summary line and returns 0, or names the failing step and returns 1. ``--verbose`` prints
each step as it passes and the traceback of a failure. The temporary project is always deleted.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from importlib.resources import as_file, files
from pathlib import Path
from typing import Any

# The self-test's own requests: the first needs a fresh answer on an empty history, the second asks the
# same question with a looser requirement, so it is answerable from that history alone (cost 0).
FRESH_QUERY = 'count(sex="Female")'
FRESH_EPS, FRESH_DELTA = 60.0, 0.05
INFERRED_EPS, INFERRED_DELTA = 300.0, 0.05
TOTAL_BUDGET = 1.0
DEMO_FILES = ("adult.parquet", "adult.schema.json", "requests.json")
ICON_FILES = ("dpdesk.png", "dpdesk.svg")


class StepFailed(Exception):
    """A self-test check that did not hold; the message says what was expected."""


@dataclass
class Run:
    """What the steps share: the scratch folder, the open project, facts for the summary."""

    workdir: Path
    verbose: bool = False
    facts: dict[str, Any] = field(default_factory=dict)
    project: Any = None
    _keep: list[Any] = field(default_factory=list)

    def say(self, text: str) -> None:
        if self.verbose:
            _out(text)


def _out(text: str, err: bool = False) -> None:
    """Print, even from a windowed Windows executable (no console: sys.stdout is None)."""
    stream = sys.stderr if err else sys.stdout
    if stream is None:
        log = Path(tempfile.gettempdir()) / "dpdesk-self-test.log"
        with log.open("a", encoding="utf-8") as fh:
            fh.write(text + "\n")
        return
    print(text, file=stream, flush=True)


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise StepFailed(message)


# -- steps ---------------------------------------------------------------------------------------------
def step_platform(run: Run) -> None:
    # An empty QT_QPA_PLATFORM counts as set for Qt, so test for a value rather than use setdefault.
    if not os.environ.get("QT_QPA_PLATFORM"):
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    if sys.platform.startswith("linux") and not os.environ.get("XDG_RUNTIME_DIR"):
        xdg = run.workdir / "xdg-runtime"
        xdg.mkdir(mode=0o700)
        os.environ["XDG_RUNTIME_DIR"] = str(xdg)
    run.facts["platform"] = os.environ["QT_QPA_PLATFORM"]
    run.facts["frozen"] = bool(getattr(sys, "frozen", False))


def step_resources(run: Run) -> None:
    root = files("dpdesk.resources")
    demo = root / "demo"
    for name in DEMO_FILES:
        _check((demo / name).is_file(), f"bundled demo file dpdesk.resources/demo/{name} is missing")
    for name in ICON_FILES:
        _check((root / "icons" / name).is_file(), f"the app icon dpdesk.resources/icons/{name} is missing")
    # Work on copies: bundled files are never modified, and a zipped install has no real paths.
    dest = run.workdir / "demo"
    dest.mkdir()
    for name in DEMO_FILES:
        with as_file(demo / name) as real:
            shutil.copyfile(real, dest / name)
    run.facts["demo"] = dest


def step_project(run: Run) -> None:
    from dpdesk.store.project import Project

    demo: Path = run.facts["demo"]
    schema = json.loads((demo / "adult.schema.json").read_text(encoding="utf-8"))
    # the throwaway project's receipt log (store/receipts.py) is thrown away with it
    os.environ.setdefault("DPDESK_RECEIPTS_DIR", str(run.workdir / "receipts"))
    run.project = Project.create(
        run.workdir / "self-test.dpdesk",
        name="dpdesk self-test",
        schema=schema,
        source_location=str(demo / "adult.parquet"),
        total_budget=TOTAL_BUDGET,
        test_project=True,
    )  # binding the source builds the cube and fingerprints the table


def step_cube(run: Run) -> None:
    cube = run.project.cube()
    _check(
        tuple(cube.counts.shape) == tuple(run.project.schema.shape),
        f"cube shape {cube.counts.shape} differs from the schema's {run.project.schema.shape}",
    )
    _check(cube.total > 0, "the demo cube is empty")
    run.facts["rows"] = int(cube.total) + int(cube.out_of_domain)
    run.facts["cells"] = int(run.project.schema.n_cells)


def step_requests(run: Run) -> None:
    p = run.project
    queued = p.import_requests(run.facts["demo"] / "requests.json")
    _check(len(queued) > 0, "the demo request queue is empty")
    p.add_request(FRESH_QUERY, FRESH_EPS, FRESH_DELTA, requester="self-test", request_id="self-test-fresh")
    p.add_request(
        FRESH_QUERY, INFERRED_EPS, INFERRED_DELTA, requester="self-test", request_id="self-test-inferred"
    )
    run.facts["queued"] = len(p.requests())


def step_fresh(run: Run) -> None:
    p = run.project
    a = p.assess("self-test-fresh")
    _check(
        a.decision == "spend",
        f"expected a fresh answer on an empty history, the decision was {a.decision!r}: {a.reason}",
    )
    release = p.answer("self-test-fresh", expect="spend")  # the project's default sampler: OpenDP's
    _check(
        release.kind == "fresh" and release.alpha > 0, f"expected a charged fresh release, got {release.kind}"
    )
    sampler = release.entry.payload.get("sampler", "")
    _check(str(sampler).startswith("opendp"), f"the fresh answer was drawn by {sampler!r}, not OpenDP")
    run.facts["alpha"] = release.alpha
    run.facts["sampler"] = str(sampler)


def step_inferred(run: Run) -> None:
    p = run.project
    a = p.assess("self-test-inferred")
    _check(
        a.decision == "infer",
        f"expected an answer inferred from history, the decision was {a.decision!r}: {a.reason}",
    )
    release = p.answer("self-test-inferred", expect="infer")
    _check(
        release.kind == "inferred" and release.alpha == 0,
        f"expected a free inferred release, got {release.kind}",
    )


def step_ledger(run: Run) -> None:
    from dpdesk.store.project import Project

    path = run.project.path
    run.project.close()
    run.project = None
    with Project.open(path, "r") as p:  # what was committed, as an auditor would read it
        report = p.verify()
    _check(report.ok, "ledger verification failed: " + "; ".join(report.problems))
    _check(
        (report.fresh, report.inferred) == (1, 1),
        f"expected 1 fresh and 1 inferred entry, the ledger has {report.fresh} and {report.inferred}",
    )
    run.facts["entries"] = report.entries
    run.facts["project_path"] = path


def step_fonts(run: Run) -> None:
    from PySide6.QtGui import QFontDatabase

    from dpdesk.gui import dialogs
    from dpdesk.gui.app.application import application

    # An error dialog would wait forever for a click offscreen: record what it would have said instead.
    errors: list[str] = run.facts.setdefault("dialog_errors", [])
    dialogs.show_error = lambda parent, title, message, detail="": errors.append(f"{title}: {message}")
    run._keep.append(application())
    families = QFontDatabase.families()
    _check(
        len(families) > 0,
        "Qt found no font families: text would render as empty boxes "
        "(install fontconfig and a font, e.g. Debian's libfontconfig1 and fonts-dejavu-core)",
    )
    run.facts["fonts"] = len(families)


def _non_blank(image: Any) -> int:
    """How many distinct colours a grid of samples of ``image`` shows (a blank window shows one)."""
    w, h = image.width(), image.height()
    return len(
        {image.pixel(x, y) for x in range(0, w, max(1, w // 64)) for y in range(0, h, max(1, h // 64))}
    )


def step_window(run: Run) -> None:
    """Open the self-test project in the real main window, select a request, render it once."""
    from PySide6.QtGui import QImage

    from dpdesk.gui.app.application import settings_at
    from dpdesk.gui.app.main_window import MainWindow
    from dpdesk.gui.runtime.scripted import wait_until

    win = MainWindow(settings_at(str(run.workdir / "settings.ini")), demo_folder=run.workdir)
    run._keep.append(win)
    try:
        win.resize(1280, 800)
        win.show()
        _check(
            win.open_project(str(run.facts["project_path"])),
            "the main window could not open the project: " + "; ".join(run.facts["dialog_errors"]),
        )
        assert win.requests is not None
        win.requests.select_request("self-test-inferred")
        _check(
            wait_until(lambda: win.requests.answer.assessment is not None, timeout=60),
            "the answer panel showed no assessment within 60 s",
        )
        wait_until(lambda: False, 0.2)  # let the plots repaint once
        image = win.grab().toImage().convertToFormat(QImage.Format.Format_RGB32)
        _check(not image.isNull() and image.width() > 0, "the main window rendered no image")
        colours = _non_blank(image)
        _check(
            colours >= 8,
            f"the main window rendered blank ({colours} colour(s) in {image.width()}×{image.height()})",
        )
        _check(
            not run.facts["dialog_errors"],
            "the main window reported: " + "; ".join(run.facts["dialog_errors"]),
        )
        run.facts["window"] = f"{image.width()}×{image.height()}"
    finally:
        win.close()  # shuts background tasks down and closes the project
        win.deleteLater()
        wait_until(lambda: False, 0.05)


STEPS: tuple[tuple[str, Callable[[Run], None]], ...] = (
    ("platform", step_platform),
    ("resources", step_resources),
    ("project", step_project),
    ("cube", step_cube),
    ("requests", step_requests),
    ("fresh", step_fresh),
    ("inferred", step_inferred),
    ("ledger", step_ledger),
    ("qt", step_fonts),
    ("window", step_window),
)


def _seconds_since_process_start() -> float | None:
    """Wall time since this process started, from the kernel's records (Linux), else None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        with open("/proc/self/stat", encoding="ascii") as fh:  # portable: Linux only, checked above
            start_ticks = int(fh.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime", encoding="ascii") as fh:  # portable: Linux only, checked above
            uptime = float(fh.read().split()[0])
        return uptime - start_ticks / os.sysconf("SC_CLK_TCK")  # portable: Linux only, checked above
    except (OSError, ValueError, IndexError):
        return None


def startup_probe() -> int:
    """``dpdesk --startup-probe``: start the window as ``dpdesk`` does, report the first paint, quit.

    Prints ``dpdesk startup-probe: first paint N.NNN s after process start`` (Linux: measured from the
    kernel's process start time; elsewhere from when this module ran) the moment the main window
    receives its first paint event, then exits 0. ``packaging/measure_startup.py`` times it from outside.
    """
    t_module = time.perf_counter()
    with _scratch() as workdir:
        if not os.environ.get("QT_QPA_PLATFORM") and not (
            os.environ.get("DISPLAY")
            or os.environ.get("WAYLAND_DISPLAY")
            or sys.platform in ("win32", "darwin")
        ):
            os.environ["QT_QPA_PLATFORM"] = "offscreen"
        step_platform(Run(workdir))
        from PySide6.QtCore import QEvent, QObject, QTimer

        from dpdesk.gui.app.application import application, settings_at
        from dpdesk.gui.app.main_window import MainWindow

        app = application()
        win = MainWindow(settings_at(str(workdir / "settings.ini")))
        result: dict[str, float] = {}

        class FirstPaint(QObject):
            def eventFilter(self, obj: Any, event: Any) -> bool:
                if event.type() == QEvent.Type.Paint and "paint" not in result:
                    result["paint"] = time.perf_counter()
                    QTimer.singleShot(0, app.quit)
                return False

        spy = FirstPaint()
        win.installEventFilter(spy)
        QTimer.singleShot(30_000, app.quit)  # never hang a measurement
        win.show()
        app.exec()
        win.removeEventFilter(spy)
        win.close()
        if "paint" not in result:
            _out("dpdesk startup-probe: no paint event within 30 s", err=True)
            return 1
        since_start = _seconds_since_process_start()
        since_module = result["paint"] - t_module
        if since_start is not None:
            elapsed = since_start - (time.perf_counter() - result["paint"])
            _out(
                f"dpdesk startup-probe: first paint {elapsed:.3f} s after process start "
                f"({since_module:.3f} s after dpdesk.selftest was imported)"
            )
        else:
            _out(f"dpdesk startup-probe: first paint {since_module:.3f} s after dpdesk.selftest was imported")
        return 0


@contextlib.contextmanager
def _scratch() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="dpdesk-self-test-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _summary(run: Run, seconds: float) -> str:
    f = run.facts
    from dpdesk import __version__

    where = "bundle" if f.get("frozen") else "python"
    return (
        f"dpdesk {__version__} self-test passed: {len(STEPS)} steps in {seconds:.1f} s ({where}, {f['platform']}); "
        f"demo project {f['rows']:,} rows -> {f['cells']} cells; "
        f"{f['queued']} requests queued; 1 fresh (alpha {f['alpha']:.4g}, {f['sampler']}) + 1 inferred; "
        f"ledger {f['entries']} entries verified; {f['fonts']} font families; window {f['window']} rendered"
    )


def run_self_test(verbose: bool = False) -> int:
    t0 = time.perf_counter()
    with _scratch() as workdir:
        run = Run(workdir, verbose=verbose)
        try:
            for name, step in STEPS:
                s0 = time.perf_counter()
                try:
                    step(run)
                except BaseException as exc:
                    if isinstance(exc, KeyboardInterrupt):
                        raise
                    _out(f"dpdesk self-test FAILED at step '{name}': {type(exc).__name__}: {exc}", err=True)
                    if verbose:
                        _out(traceback.format_exc(), err=True)
                    return 1
                run.say(f"  ok  {name:<10} {time.perf_counter() - s0:6.2f} s")
        finally:
            if run.project is not None:
                run.project.close()
        _out(_summary(run, time.perf_counter() - t0))
        return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point for ``dpdesk --self-test [--verbose]`` and ``dpdesk --startup-probe``.

    :func:`dpdesk.cli.main` hands over any command line containing either option; other
    options are ignored.
    """
    parser = argparse.ArgumentParser(prog="dpdesk --self-test", add_help=False)
    parser.add_argument("--self-test", action="store_true")
    parser.add_argument("--startup-probe", action="store_true")
    parser.add_argument("--verbose", "-v", action="store_true")
    args, _ = parser.parse_known_args(list(sys.argv[1:] if argv is None else argv))
    if args.startup_probe:
        return startup_probe()
    return run_self_test(verbose=args.verbose)


if __name__ == "__main__":
    raise SystemExit(main())
