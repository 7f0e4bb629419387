"""Batch plans against watched claims, on real project files: a measurement a claim would decline is left
out before anything is spent (the requests that needed it stay pending, the claim named), and a plan some
claim would stop midway is refused before its first measurement — nothing is recorded."""

from __future__ import annotations

import pytest

from dpdesk.engine.mechanisms.base import Basis
from dpdesk.engine.mechanisms.noise import SeededSampler
from dpdesk.engine.planning import plan_batch
from dpdesk.store import Project
from dpdesk.store.batch import claim_screen, plan_pending, release_batch
from dpdesk.store.watch import ClaimDeclined

CELL = 'count(age="0-30", income=">50K")'  # cell #1 (20 people): the watched claim's query
BATCH = [
    (CELL, 3.0),
    ('count(age="30-150")', 5.0),
    ('count(income="<=50K")', 6.0),
    ('count(age="0-30", income="<=50K")', 5.0),
]


def _project(store):
    path = store.new_project(budget=5.0, test_project=True)
    with Project.open(path, "w") as p:
        p.watch(CELL, 0, 25, 0.8, 0.05)  # a fresh ±3 on cell #1 would make Pr(C) reach τ almost surely
        for i, (q, eps) in enumerate(BATCH):
            p.add_request(q, eps, 0.1, request_id=f"q{i + 1}")
    return path


def test_plan_leaves_out_what_a_claim_declines_and_the_rest_is_released_and_verifies(store):
    path = _project(store)
    out = store.cli("batch", "plan", path)  # what the curator reads: the left-out measurement and why
    assert (
        out.returncode == 0 and "left out: measurement #" in out.stdout and "watched claim c1" in out.stdout
    )
    with Project.open(path, "w") as p:
        plan = plan_pending(p)
        assert plan.left_out and all("declined by watched claim c1" in why for why in plan.left_out)
        status = {r.id: r for r in plan.requests}
        q1 = status["q1"]
        assert q1.status == "uncovered" and "watched claim c1 would decline (#" in q1.reason
        assert (
            q1.offer_eps is None
        )  # the budget could pay for it: no budget counter-offer the claim would refuse
        assert {"q2", "q3", "q4"} <= set(plan.ids("planned"))
        with p.view().assessing() as s:
            assert claim_screen(p, plan, s) == []  # what is left passes every claim, in release order
        done = release_batch(p, plan, SeededSampler(5))
        assert done.left_pending == ("q1",)
        kinds = [e.kind for e in p.ledger()]
        # the plan is recorded before its first measurement (format 9)
        assert kinds == ["watch", "batch"] + ["measurement"] * len(plan.measurements) + ["inferred"] * 3
        assert p.request("q1").status == "pending"
        assert {p.request(f"q{i}").status for i in (2, 3, 4)} == {"answered"}
        (w,) = p.claims()
        assert w.spent <= w.claim.risk
        assert p.verify().ok


def test_a_plan_a_claim_would_stop_midway_is_refused_before_anything_is_spent(store):
    path = _project(store)
    with Project.open(path, "w") as p:
        # planned without the claims (the engine's planner alone), at the ledger's head: not screened
        with p.view().assessing() as s:
            raw = plan_batch(
                s.history,
                [r.to_request() for r in p.requests("pending")],
                p.answering_settings(),
                cell_costs=s.cell_costs,
            )
            seq, head = s.head
            declined = claim_screen(p, raw, s)
        raw = type(raw)(
            **{**raw.__dict__, "basis": Basis(head, seq, p.answering_settings().to_json(), "fft")}
        )
        assert declined and declined[0][1] == "c1"
        assert (
            len(raw.measurements) > 1 and declined[0][0] > 0
        )  # measurements before it would have been recorded
        before = [e.hash for e in p.ledger()]

        def no_table(*args, **kwargs):
            raise AssertionError("the claims screen read the table")

        p.cube = p.snapshot = no_table
        with pytest.raises(ClaimDeclined) as info:
            release_batch(p, raw, SeededSampler(6))
        msg = str(info.value)
        assert "\n" not in msg and "watched claim c1" in msg and "nothing was released" in msg
        assert [e.hash for e in p.ledger()] == before
        assert {r.status for r in p.requests()} == {"pending"}
