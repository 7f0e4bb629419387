"""The app's model layer (dpdesk/gui/model): a Qt-free project state whose actions emit the events the
views subscribe to, on a real project file; and no view reaches the project itself."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from dpdesk.engine.budget.policy import SpendPolicy

GUI = Path(__file__).resolve().parents[2] / "dpdesk" / "gui"


@pytest.fixture
def state(tmp_path):
    from dpdesk.appdata.demo import create_demo_project
    from dpdesk.gui.model.state import ProjectState

    st = ProjectState.open(create_demo_project(tmp_path))
    heard: list[tuple[str, tuple]] = []
    for name in ("queue_changed", "entry_appended", "settings_changed", "claims_changed", "loaded"):
        getattr(st.events, name).connect(lambda *args, name=name: heard.append((name, args)))
    st.heard = heard
    yield st
    st.close(save_cache=False)


def test_each_action_emits_what_it_changed_and_only_that(state):
    heard = state.heard
    r = state.add_request('count(sex="Female")', 30.0, 0.05, "ann")
    assert heard == [("queue_changed", ((r.id,),))]
    heard.clear()
    state.edit_request(r.id, 'count(sex="Male")', 30.0, 0.05, "ann")
    state.set_spend_policy(SpendPolicy(0.1, 0.5))
    assert heard == [("queue_changed", ((r.id,),)), ("settings_changed", ())]
    heard.clear()
    entry = state.reject(r.id, "not today")
    assert heard == [("entry_appended", ((entry,),)), ("queue_changed", ((r.id,),))]


def test_a_release_made_on_a_worker_is_announced_once_with_its_entries(state):
    heard = state.heard
    rid = state.requests("pending")[0].id
    plan, _claims = state.assess_job(rid)(None)  # the one assess function, as the worker runs it
    release = state.release_job(plan)(None)  # recorded on a sibling connection, with the vetted sampler
    assert heard == []  # recorded on a sibling: nothing is said until the GUI thread asks
    new = state.released()
    assert [e.seq for e in new] == [release.entry.seq] and new[0].request_id == rid
    assert heard == [("entry_appended", (new,)), ("queue_changed", ((rid,),))]
    heard.clear()
    assert state.released() == () and heard == []  # nothing new: no event


def test_watching_a_claim_emits_claims_changed(state):
    heard = state.heard
    state.watch('count(sex="Female", age="17-24")', None, 5.0, 0.95, 0.05, "few young women")
    assert [name for name, _ in heard] == ["entry_appended", "claims_changed"]


def test_the_model_layer_imports_no_qt():
    code = "import sys, dpdesk.gui.model.state; print(sorted(m for m in sys.modules if m.startswith(('PySide6', 'pyqtgraph'))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_no_view_reaches_the_project_itself():
    """Views read facts, actions and jobs through the session and its state, never ``session.project``."""
    found = []
    for path in sorted(GUI.rglob("*.py")):
        if path.name == "session.py" or path.parent.name == "model":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in ("project", "_project"):
                base = ast.unparse(node.value)
                if base.endswith("session") or base in ("s", "self.session.state", "session.state"):
                    found.append(f"{path.relative_to(GUI)}:{node.lineno} {ast.unparse(node)}")
    assert found == []
