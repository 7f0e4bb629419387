"""The worked example of docs/architecture.md ("Worked example: a new kind"), run as written.

A toy kind — a noisy total queued as ``total()`` with a budget α — is its home (the doc's one code block)
plus one line in the registry (here patched in). Through the generic path and nothing else: the queue
reads it, ``dpdesk assess`` previews it, ``dpdesk answer`` releases it on a real project file with the
vetted sampler, the ledger view charges every cell α and feeds the total to the history, and verify
checks the charge against the mechanism's map and calls the kind's recomputation.
"""

from __future__ import annotations

import json
import math
import re
import sys
import types
from pathlib import Path

import pytest

from dpdesk.engine import registry
from dpdesk.engine.mechanisms.noise import SeededSampler
from dpdesk.store import Project

DOC = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"


def example(home: types.ModuleType) -> None:
    """Run the doc's worked example, as written, as the module ``home`` (the toy kind's home)."""
    text = DOC.read_text(encoding="utf-8")
    block = re.search(r"```python\n(# worked example: a new release kind.*?)```", text, re.S)
    assert block is not None, "docs/architecture.md lost its worked example"
    exec(compile(block.group(1), str(DOC), "exec"), home.__dict__)


@pytest.fixture
def toy(monkeypatch):
    home = types.ModuleType("kind_example")
    monkeypatch.setitem(sys.modules, home.__name__, home)  # dataclasses look their module up
    example(home)
    monkeypatch.setattr(registry, "KINDS", (*registry.KINDS, home.TOTAL))  # the one registry line
    return home


def test_the_toy_kind_is_queued_assessed_answered_and_verified_through_the_generic_path(store, toy):
    path = store.new_project(budget=1.0)  # not a test project: the release draws from OpenDP
    res = store.cli("requests", "add", path, "--query", "total()", "--epsilon", "0.25")
    assert res.returncode == 0 and "(total; ε = 0.25)" in res.stdout, res.stderr
    before = store.digest(path)
    res = store.cli("assess", path, "--request", "r1")
    assert res.returncode == 0, res.stderr
    assert "every cell pays ε = 0.25; system cost 0 → 0.25 of 1" in res.stdout
    assert "nothing was spent (preview only)" in res.stdout and store.digest(path) == before
    res = store.cli("answer", path, "--request", "r1", input="n\n")
    assert res.returncode == 1 and "not answered (not confirmed)" in res.stderr
    assert store.digest(path) == before
    res = store.cli("answer", path, "--request", "r1", "--yes", "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["assessment"]["accuracy"] == pytest.approx(math.log(20) / 0.25)
    assert out["release"]["kind"] == "total" and out["release"]["request_id"] == "r1"
    with Project.open(path) as p:
        entry = p.ledger()[-1]
        assert (
            entry.payload["mechanism"] == "noisy-total"
            and entry.payload["charge"]["terms"][0]["query"] == "all"
        )
        assert p.request("r1").status == "answered"
        view = p.view()
        assert view.cell_costs.tolist() == [0.25] * p.schema.n_cells and view.system_cost == 0.25
        assert len(p.history()) == 1  # the noisy total is a history row: later counts infer from it
    res = store.cli("verify", path, "--extends", out["release"]["ledger_head"])
    assert res.returncode == 0, res.stdout + res.stderr


def test_the_toy_kind_refuses_a_bad_request_and_verify_recomputes_what_it_released(store, toy):
    path = store.new_project(budget=1.0, test_project=True)
    res = store.cli("requests", "add", path, "--query", "total()", "--eps", "3", "--delta", "0.1")
    assert res.returncode == 2 and "a noisy total states its budget alpha, and only that" in res.stderr
    with Project.open(path, "w") as p:
        r = p.add_request("total()", alpha=0.5)
        plan = p.assess(r.id)
        assert type(plan).__name__ == "TotalPlan" and plan.releasable

        class Misstated(type(plan)):  # a plan recording a wrong accuracy: released, but verify says so
            def record(self):
                return {**super().record(), "accuracy": 1.0}

        p.release(Misstated(plan.alpha, plan.budget, plan.basis, plan.request_id), SeededSampler(1))
        report = p.verify()
    assert not report.ok and report.problems == (
        f"entry 1: records accuracy ±1, not the ±{math.log(20) / 0.5:.6g} its α gives",
    )
