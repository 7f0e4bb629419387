"""*Plan batch…* with the look-ahead: a real dialog offscreen on a real project file. The choice is remembered
for the project, the plan is made again off the GUI thread (cancel drops it, nothing spent), the preview
shows what the look-ahead costs, and the released plan verifies."""

from __future__ import annotations

import json
import threading

import numpy as np

from .conftest import WAIT

SCHEMA = {
    "attributes": [
        {
            "name": "age",
            "column": "age",
            "kind": "numeric",
            "edges": [0, 30, 150],
            "labels": ["0-30", "30-150"],
        },
        {"name": "income", "column": "income", "kind": "categorical", "values": ["<=50K", ">50K"]},
    ]
}
QUEUE = [
    ('count(age="0-30")', 6.0),
    ('count(age="30-150")', 8.0),
    ("count()", 9.0),
    ('count(income=">50K")', 7.0),
    ('count(age="0-30", income="<=50K")', 5.0),
]


def _project(tmp_path):
    from dpdesk.store import Project

    table = tmp_path / "people.csv"
    table.write_text(
        "age,income\n" + "10,<=50K\n" * 10 + "20,>50K\n" * 20 + "40,<=50K\n" * 20 + "50,>50K\n" * 10,
        encoding="utf-8",
    )
    path = tmp_path / "p.dpdesk"
    with Project.create(
        path, name="people", schema=SCHEMA, source_location=str(table), total_budget=1.0
    ) as p:
        for i, (q, eps) in enumerate(QUEUE):
            p.add_request(q, eps, 0.2, request_id=f"q{i + 1}")
    return path


def _planned(qtbot, d):
    qtbot.waitUntil(lambda: d.plan is not None and not d.runner.is_running(), timeout=WAIT)
    return d.plan


def test_look_ahead_choice_replans_off_the_gui_thread_cancels_and_releases(
    qtbot, tmp_path, dialogs, monkeypatch
):
    import dpdesk.store.batch as batch_mod
    from dpdesk.gui.kinds.batch_dialog import HEADERS, BatchDialog, look_ahead_summary, row_cells
    from dpdesk.gui.runtime.session import ProjectSession
    from dpdesk.store import Project

    path = _project(tmp_path)
    session = ProjectSession(path)
    try:
        d = BatchDialog(session, ["q1", "q2"])
        qtbot.addWidget(d)
        d.resize(900, 700)
        plain = _planned(qtbot, d)
        assert not d.look_ahead.isChecked() and not d.share.isEnabled()  # off: the project's default
        assert plain.look_ahead is None and "Look-ahead" not in d.summary.text()
        assert (
            "public inputs only" in d.look_ahead_words.text()
            and "never from the data" in d.look_ahead_words.text()
        )

        # turning it on plans again on a worker; hold that plan there, then cancel it
        held, go, returned, on_gui = threading.Event(), threading.Event(), threading.Event(), []
        real = batch_mod.plan_ahead

        def holding(*args, **kwargs):
            on_gui.append(threading.current_thread() is threading.main_thread())
            held.set()
            assert go.wait(WAIT / 1000)
            try:
                return real(*args, **kwargs)
            finally:
                returned.set()

        monkeypatch.setattr(batch_mod, "plan_ahead", holding)
        d.look_ahead.setChecked(True)
        assert d.share.isEnabled() and d.share.value() == 100 and session.look_ahead == 1.0
        with Project.open(path, "r") as p:  # remembered in the project file
            assert p.look_ahead == 1.0
        qtbot.waitUntil(held.is_set, timeout=WAIT)
        assert d.plan is None and not d.release_button.isEnabled() and d.runner.is_running()
        d.cancel_button.click()
        assert "Planning cancelled; nothing was spent" in d.summary.text() and not d.runner.is_running()
        go.set()
        qtbot.waitUntil(returned.is_set, timeout=WAIT)
        qtbot.wait(100)
        assert d.plan is None and on_gui == [
            False
        ]  # the cancelled plan is dropped; it ran off the GUI thread

        d.share.setValue(40)  # planned again once the box rests
        plan = _planned(qtbot, d)
        assert session.look_ahead == 0.4 and on_gui == [False, False]
        la = plan.look_ahead
        assert la is not None and la.share == 0.4 and la.strategy.startswith("ahead: ")
        expected = batch_mod.plan_pending(session.project, ["q1", "q2"], look_ahead=0.4)
        assert json.dumps(plan.to_json() | {"elapsed_ms": 0}) == json.dumps(
            expected.to_json() | {"elapsed_ms": 0}
        )
        table = [[d.table.item(r, c).text() for c in range(len(HEADERS))] for r in range(d.table.rowCount())]
        assert table == [row_cells(expected, p) for p in expected.requests]
        assert look_ahead_summary(expected, 0.4) in d.summary.text()
        assert f"system cost 0 → {la.system_cost_after:.4g} from it alone" in d.summary.text()
        # a plan other than one by one is set against it, with the one number one by one stands for
        assert expected.strategy != "one by one"
        assert (
            f"One by one (today's rules) would answer {expected.one_by_one_answered} at system cost "
            f"{expected.one_by_one.system_cost_after:.4g}." in d.summary.text().replace("&#x27;", "'")
        )
        assert abs(d.heatmap.matrix.max() - expected.cell_costs_after.max()) < 1e-12
        d.grab().save(str(tmp_path / "batch_look_ahead.png"))

        before = len(session.ledger())
        d.release_button.click()
        assert f"the first {la.measurements} look ahead for the queue" in dialogs.confirms[-1][1]
        assert not d.look_ahead.isEnabled() and not d.share.isEnabled()
        qtbot.waitUntil(lambda: d.outcome is not None, timeout=WAIT)
        new = session.ledger()[before:]
        n = len(plan.measurements)
        assert [e.kind for e in new] == ["batch"] + ["measurement"] * n + ["inferred"] * 2
        assert np.allclose(session.cell_costs(), plan.cell_costs_after)
        assert session.view().system_cost <= 1.0 * (1 + 1e-9)
        assert session.verify().ok
    finally:
        session.close()
