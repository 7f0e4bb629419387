"""benchmarks/long_project.py resumes an interrupted run without losing or repeating a request."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load():
    spec = importlib.util.spec_from_file_location("long_project", ROOT / "benchmarks" / "long_project.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["long_project"] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
def test_a_run_stopped_between_queueing_and_releasing_resumes_with_that_request(tmp_path, monkeypatch):
    pytest.importorskip("pyarrow")
    from dpdesk.store import Project

    lp = _load()
    real = Project.release
    calls = {"n": 0}

    def stopped(self, *args, **kwargs):  # the third release never happens: the run dies after queueing q2
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Project, "release", stopped)
    with pytest.raises(KeyboardInterrupt):
        lp.make_long_project(str(tmp_path), 5, quiet=True)
    monkeypatch.setattr(Project, "release", real)
    with Project.open(tmp_path / "long-5.dpdesk.tmp", "r") as p:  # interrupted: q2 queued, not released
        assert {r.id: r.status for r in p.requests()} == {"q0": "answered", "q1": "answered", "q2": "pending"}
    path, target = lp.make_long_project(str(tmp_path), 5, quiet=True)
    with Project.open(path, "r") as p:
        statuses = {r.id: r.status for r in p.requests()}
        assert statuses == {**{f"q{i}": "answered" for i in range(5)}, target: "pending"}
        decided = [e.request_id for e in p.ledger() if e.request_id is not None]
        assert decided == [f"q{i}" for i in range(5)]  # each once, in order
        assert p.verify().ok
