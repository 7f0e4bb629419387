"""``dpdesk --screenshot DIR``: every page of a freshly made demo project as PNG files, offscreen.

A few demo requests are worked through first so that the pages show history, costs and a ledger.
The window is shot at each size of :data:`SIZES`: a common desktop size (1920×1080) into ``DIR`` itself
and a laptop's screen (1024×700, the smallest supported) into ``DIR/1024x700/``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from dpdesk.appdata.demo import create_demo_project
from dpdesk.gui.app.application import application, settings_at
from dpdesk.gui.app.main_window import MainWindow
from dpdesk.gui.runtime.scripted import SCRIPTED, wait_until, work_through

SIZES = {(1920, 1080): "", (1024, 700): "1024x700"}  # size -> sub-folder of the output folder


def screenshot(directory: str, settings_path: str | None = None, sizes=SIZES) -> int:
    """Render each page of a demo project to ``directory`` (and its size sub-folders); 0 when done."""
    for (width, height), sub in sizes.items():
        _shoot(Path(directory) / sub, settings_path, (width, height))
    return 0


def _shoot(out: Path, settings_path: str | None, size: tuple[int, int]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    app = application()
    tmp = Path(tempfile.mkdtemp(prefix="dpdesk-shots-"))
    win = MainWindow(settings_at(settings_path or str(tmp / "settings.ini")), demo_folder=tmp)
    win.resize(*size)
    win.show()
    path = create_demo_project(tmp)
    win.start.set_recent([str(path)])
    shots: list[str] = []

    def grab(name: str) -> None:
        wait_until(lambda: False, 0.3)
        win.grab().save(str(out / f"{name}.png"))
        shots.append(name)

    win.show_page("start")
    grab("start")
    win.open_project(str(path))
    work_through(win.session, SCRIPTED)
    win.show_page("data")
    wait_until(lambda: not win.data.runner.is_running() and win.data.source is not None)
    win.data.build_cube()
    wait_until(lambda: win.data.cube is not None)
    grab("data")
    win.show_page("requests")
    win.requests.select_request("q37")
    wait_until(lambda: win.requests.answer.assessment is not None)
    win.requests.budget.preview.setChecked(True)
    grab("requests-fresh")
    win.requests.select_request("q25")
    wait_until(lambda: win.requests.answer.assessment is not None)
    grab("requests-infer")
    win.requests.select_request("q32")
    wait_until(lambda: win.requests.answer.assessment is not None)
    win.requests.budget.mode.setCurrentIndex(1)
    win.requests.budget.row_attr.setCurrentIndex(2)
    win.requests.budget.col_attr.setCurrentIndex(0)
    grab("requests-slice")
    # a watched claim: the Requests page's lower area shows the Watched claims tab, the answer panel its note
    win.requests.budget.mode.setCurrentIndex(0)
    claim = win.session.watch('count(income=">50K")', None, 14400, 0.8, 0.05, name="at most 14,400 earn >50K")
    win.requests.select_request("q37")
    win.requests.lower.setCurrentWidget(win.requests.claims)
    wait_until(
        lambda: win.requests.answer.assessment is not None and not win.requests.claims.runner.is_running()
    )
    grab("requests-claims")
    # a posterior of proportions in the queue: its plan's words above its chart (the claim, which the
    # box's count would also inform through the table's released total, no longer watched)
    win.session.unwatch(claim.id, "no longer needed")
    shares = win.session.add_request('posterior(sex | income="<=50K"; budget=0.3)', requester="press-office")
    win.requests.lower.setCurrentIndex(0)
    win.requests.select_request(shares.id)
    view = win.requests.answer.plan_view
    wait_until(lambda: bool(view.text.text()) and not win.requests.answer.runner.is_running())
    grab("requests-posterior")
    # the batch dialog: what each request asks, what it spends alone, what the batch does for it, and why
    from dpdesk.gui.kinds.batch_dialog import BatchDialog

    batch = BatchDialog(win.session, ["q29", "q30", "q31", "q35"], "fft", win)
    batch.show()
    batch.resize(min(batch.width(), size[0]), min(batch.height(), size[1] - 40))  # as on that screen
    wait_until(lambda: batch.plan is not None and not batch.runner.is_running())
    wait_until(lambda: False, 0.3)
    batch.grab().save(str(out / "batch.png"))
    shots.append("batch")
    batch.close()
    win.show_page("audit")
    win.audit.verify()
    win.audit.table.selectRow(1)
    grab("audit")
    win.close()
    app.processEvents()
    print(f"wrote {', '.join(s + '.png' for s in shots)} to {out}")
