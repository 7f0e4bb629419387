"""Release exactly what was assessed: the ledger records the assessment the curator saw, bit for bit,
and an assessment whose ledger or settings moved is refused with one line, nothing released."""

from __future__ import annotations

import json

import pytest

from dpdesk.engine.budget.policy import SpendPolicy
from dpdesk.engine.mechanisms.noise import SeededSampler
from dpdesk.store import Project
from dpdesk.store.errors import StaleAssessment
from dpdesk.store.ledger import thaw


@pytest.fixture
def answered(store):
    """A test project with two fresh answers, so that a third request is estimable (and a Monte Carlo
    posterior is not trivial), plus pending requests to assess."""
    path = store.new_project(budget=20.0, test_project=True)
    with Project.open(path, "w") as p:
        for q, eps in (
            ("[1, 0, 0, 0]", 12.0),
            ("[0, 1, 0, 0]", 12.0),
            ("[1, 1, 0, 0]", 30.0),
            ("[1, 1, 0, 0]", 30.0),
            ("[0, 0, 1, 0]", 12.0),
        ):
            p.add_request(q, eps, 0.1)
        sampler = SeededSampler(11)
        p.answer("r1", sampler)
        p.answer("r2", sampler)
    return path


def test_an_mc_assessment_is_released_bit_for_bit(answered):
    with Project.open(answered, "w") as p:
        a = p.assess("r3", method="mc")
        assert a.decision == "infer" and a.basis.seed is not None and a.basis.method == "mc"
        assert a.basis.ledger_head == p.head()[1] and a.basis.ledger_seq == 2
        again = p.assess("r3", method="mc")  # new randomness: the numbers differ in the last digits
        assert again.basis.seed != a.basis.seed and again.confidence_at_eps != a.confidence_at_eps
        release = p.release(a)
        e = release.entry
        assert e.kind == "inferred" and e.payload["mechanism"] == "inference"
        assert e.payload["estimate"] == a.release_estimate and list(e.payload["interval"]) == list(
            a.release_interval
        )
        assert e.payload["confidence_at_eps"] == a.confidence_at_eps  # the curator's number, not a re-run's
        assert list(e.payload["credible_interval"]) == list(a.interval) and e.payload["method"] == "mc"
        assert thaw(e.payload["basis"]) == a.basis.to_json()
        assert e.prev_hash == a.basis.ledger_head and release.witness == e.hash == p.head()[1]
        # the recorded seed reproduces the assessment exactly
        replay = p.assess("r4", method="mc", seed=a.basis.seed)
        assert replay.confidence_at_eps == a.confidence_at_eps and replay.interval == a.interval
        assert p.verify().ok


def test_a_fresh_release_charges_what_was_assessed(answered):
    with Project.open(answered, "w") as p:
        a = p.assess("r5", method="mc")
        assert a.decision == "spend"
        release = p.release(a, SeededSampler(5))
        pl = release.entry.payload
        assert release.alpha == pl["alpha"] == a.spend_alpha and pl["family"] == a.family == pl["mechanism"]
        assert pl["system_cost_after"] == a.budget.system_cost_after and pl["needed_alpha"] == a.needed_alpha
        assert p.view().cell_costs.tolist() == a.budget.cell_costs_after.tolist()
        assert thaw(pl["charge"]) == {
            "terms": [{"scale": a.spend_alpha / a.sensitivity, "query": "query"}],
            "delta": 0.0,
        }
        assert p.verify().ok


def test_a_moved_ledger_is_refused_with_one_line_and_nothing_released(answered):
    with Project.open(answered, "w") as p:
        stale = p.assess("r3")
        p.release(p.assess("r5"), SeededSampler(6))  # the ledger moves on
        before = p.ledger()
        with pytest.raises(StaleAssessment) as exc:
            p.release(stale)
        message = str(exc.value)
        assert "\n" not in message and "request 'r3' was assessed at ledger entry #2" in message
        assert "now at entry #3" in message and "assess it again" in message
        assert p.ledger() == before and p.request("r3").status == "pending"
        assert p.release(p.assess("r3")).kind == "inferred"  # assessed again, it goes through


def test_changed_settings_are_refused_and_a_what_if_is_never_released(answered):
    with Project.open(answered, "w") as p:
        greedy = p.assess("r5")
        p.set_spend_policy(SpendPolicy(floor=0.5))
        with pytest.raises(StaleAssessment, match=r"other answering settings \(spend_policy\)"):
            p.release(greedy, SeededSampler(1))
        what_if = p.assess("r5", policy=None)  # what the greedy rule would do, under a paced project
        with pytest.raises(StaleAssessment, match="spend_policy"):
            p.release(what_if, SeededSampler(1))
        assert p.entry_for("r5") is None
        release = p.release(p.assess("r5"), SeededSampler(1))
        assert release.entry.payload["policy"].startswith("pacing")


def test_an_assessment_from_another_project_is_refused(answered, store):
    other = store.new_project("other.dpdesk", budget=20.0, test_project=True)
    with Project.open(other, "w") as q:
        q.add_request("[0, 0, 1, 0]", 12.0, 0.1, request_id="r5")
        foreign = q.assess("r5")
    with Project.open(answered, "w") as p, pytest.raises(StaleAssessment, match="ledger entry #0"):
        p.release(foreign, SeededSampler(1))


def test_cli_names_monte_carlo_and_its_bound_and_never_calls_it_exact(answered, capsys):
    from dpdesk.cli import main

    assert main(["assess", str(answered), "--request", "r3", "--method", "mc"]) == 0
    out = capsys.readouterr().out
    assert "computed by     mc (error ≤" in out and "exact" not in out.lower()


def test_dpdesk_answer_releases_the_assessment_it_showed(answered, capsys):
    from dpdesk.cli import main

    assert main(["answer", str(answered), "--request", "r3", "--method", "mc", "--yes", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    a, release = shown["assessment"], shown["release"]
    with Project.open(answered, "r") as p:
        e = p.entry_for("r3")
    assert a["decision"] == "infer" and release["answer"] == a["release_estimate"] == e.payload["estimate"]
    assert e.payload["confidence_at_eps"] == a["confidence_at_eps"] and thaw(e.payload["basis"]) == a["basis"]
    assert a["basis"]["method"] == "mc" and a["basis"]["seed"] is not None
    assert release["ledger_head"] == e.hash
    assert main(["answer", str(answered), "--request", "r5", "--yes"]) == 0
    out = capsys.readouterr().out
    with Project.open(answered, "r") as p:
        head = p.head()[1]
    assert f"ledger head {head}" in out and "--extends" in out
