"""Budget safety (hypothesis): over random request sequences, the system cost recomputed from the ledger
never exceeds the total budget and equals the engine's ``max B``."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpdesk.engine.budget.policy import SpendPolicy
from dpdesk.engine.inference.history import History
from dpdesk.engine.mechanisms.noise import SeededSampler
from dpdesk.store import Project
from dpdesk.store.errors import RequestStateError

coefficient = st.sampled_from([-2, -1, 0, 0, 1, 1, 2, 0.5, 1.5])
query = st.lists(coefficient, min_size=4, max_size=4).filter(lambda q: any(c != 0 for c in q))
request = st.tuples(query, st.floats(0.5, 40), st.floats(0.01, 0.4))


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    d = tmp_path_factory.mktemp("budget")
    table = d / "people.csv"
    table.write_text(
        "age,income\n" + "10,<=50K\n" * 10 + "20,>50K\n" * 20 + "40,<=50K\n" * 20 + "50,>50K\n" * 10
    )
    out = {}
    for total in (0.5, 2.0, 8.0):
        path = d / f"b{total}.dpdesk"
        Project.create(
            path,
            name="budget",
            total_budget=total,
            source_location=str(table),
            test_project=True,
            schema={
                "attributes": [
                    {"name": "age", "column": "age", "kind": "numeric", "edges": [0, 30, 150]},
                    {
                        "name": "income",
                        "column": "income",
                        "kind": "categorical",
                        "values": ["<=50K", ">50K"],
                    },
                ]
            },
        ).close()
        out[total] = path
    return out


def _brute_force_costs(entries, n_cells: int) -> np.ndarray:
    """``B = Σ_i α_i |Q_i| / S_i`` straight from the ledger payloads (paper Thm 5.4), no engine."""
    b = np.zeros(n_cells)
    for e in entries:
        if e.kind == "fresh":
            q = np.zeros(n_cells)
            q[list(e.payload["query"]["indices"])] = e.payload["query"]["values"]
            b += e.payload["alpha"] * np.abs(q) / np.abs(q).max()
    return b


# The default posterior method: histories here mix discrete and continuous rows and produce BLUE
# coefficients that are numerically zero, which once overflowed the fft path.
METHOD = "fft"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    total=st.sampled_from([0.5, 2.0, 8.0]),
    requests=st.lists(request, min_size=1, max_size=8),
    policy=st.sampled_from([None, SpendPolicy(floor=0.1, cap=0.5), SpendPolicy(floor=1.0)]),
)
def test_recomputed_cost_never_exceeds_total(pristine, total, requests, policy):
    with tempfile.TemporaryDirectory() as d:
        os.environ["DPDESK_RECEIPTS_DIR"] = d  # each example is a copy of the project on a machine of its own
        path = Path(d) / "p.dpdesk"
        shutil.copy(pristine[total], path)
        engine_history = History((2, 2))
        sampler = SeededSampler(len(requests))  # a test project: reproducible noise, so failures replay
        with Project.open(path, "w") as p:
            p.set_spend_policy(policy)
            for q, eps, delta in requests:
                r = p.add_request(q, eps, delta)
                try:
                    release = p.answer(r.id, sampler=sampler, method=METHOD)
                except RequestStateError as exc:  # the decision was reject (the budget, or the spend policy)
                    assert "cannot be answered" in str(exc)
                    p.reject(r.id)
                else:
                    if release.kind == "fresh":
                        engine_history.append(p.history().rows[-1])
                recomputed = p.history()
                entries = p.ledger()
                b = _brute_force_costs(entries, 4)
                assert recomputed.system_cost <= total * (1 + 1e-12)
                assert recomputed.system_cost == pytest.approx(b.max() if len(recomputed) else 0.0, rel=1e-12)
                assert recomputed.system_cost == pytest.approx(engine_history.system_cost, rel=1e-12)
                np.testing.assert_allclose(recomputed.cell_costs, b, rtol=1e-12)
            report = p.verify()
            assert report.ok, report.problems
            assert report.system_cost == pytest.approx(engine_history.system_cost, rel=1e-12)
            assert report.system_cost <= total * (1 + 1e-12)


def test_a_paced_fresh_answer_records_the_policy_and_what_the_request_needed(pristine, tmp_path):
    path = tmp_path / "p.dpdesk"
    shutil.copy(pristine[2.0], path)
    with Project.open(path, "w") as p:
        r = p.add_request([1, 1, 0, 0], 30.0, 0.2)  # loose: alone it needs α ≈ 0.054 of the 2.0 total
        plain = p.assess(r.id)
        paced = p.assess(r.id, policy=SpendPolicy(floor=0.25))
        assert paced.needed_alpha == pytest.approx(plain.spend_alpha)
        assert paced.spend_alpha == pytest.approx(0.25 * 2.0)  # a quarter of each untouched cell's 2.0
        p.set_spend_policy(SpendPolicy(floor=0.25))
        release = p.answer(r.id, sampler=SeededSampler(1))
        assert release.kind == "fresh" and release.alpha == pytest.approx(paced.spend_alpha)
        entry = p.entry_for(r.id)
        assert entry.payload["needed_alpha"] == pytest.approx(plain.spend_alpha)
        assert entry.payload["policy"].startswith("pacing")
        assert p.history().cell_costs.max() == pytest.approx(0.5)
        # a tight request that would take more than half of what is left is declined, nothing spent
        tight = p.add_request([1, 0, 0, 0], 1.2, 0.2)
        p.set_spend_policy(SpendPolicy(floor=0.1, cap=0.5))
        with pytest.raises(RequestStateError, match="declined by the spend policy"):
            p.answer(tight.id, sampler=SeededSampler(2))
        assert p.history().cell_costs.max() == pytest.approx(0.5) and len(p.ledger()) == 1
        assert p.verify().ok


def test_a_declared_table_size_bounds_inferences_and_is_recorded(pristine, tmp_path):
    from dpdesk.engine.inference.prior import BoundedPrior

    path = tmp_path / "p.dpdesk"
    shutil.copy(pristine[2.0], path)
    with Project.open(path, "w") as p:
        assert p.prior is None
        first = p.add_request([1, 0, 0, 0], 3.0, 0.2)
        p.answer(first.id, sampler=SeededSampler(4))
        again = p.add_request([1, 0, 0, 0], 12.0, 0.2)
        flat = p.assess(again.id)
        assert flat.prior == "flat" and flat.decision == "infer"
        p.set_prior(BoundedPrior(61))
        assert p.prior == BoundedPrior(61)
        bounded = p.assess(again.id)
        assert bounded.prior == "bounded [0, 61]" and bounded.decision == "infer"
        lo, hi = bounded.release_interval
        assert hi - lo == pytest.approx(24.0) and bounded.interval[0] >= 0.0
        assert p.assess(again.id, prior=None).prior == "flat"  # what-if without the prior
        release = p.answer(again.id)
        entry = p.entry_for(again.id)
        assert entry.payload["prior"] == "bounded [0, 61]"
        assert list(entry.payload["interval"]) == pytest.approx([lo, hi])
        assert release.answer == pytest.approx(bounded.release_estimate) and lo <= release.answer <= hi
        p.set_prior(None)
        assert p.prior is None
        assert p.verify().ok


def test_assess_a_project_request_reports_the_probability_of_a_named_interval(store, capsys):
    """``assess P --request R --interval L U --json`` gives the same interval_probability as the engine."""
    from dpdesk.cli import main

    path = store.new_project(budget=2.0, test_project=True)
    with Project.open(path, "w") as p:
        p.answer(p.add_request([1, 0, 0, 0], 3.0, 0.2).id, sampler=SeededSampler(4))
        again = p.add_request([1, 0, 0, 0], 12.0, 0.2).id
        direct = p.assess(again, interval=(5.0, 15.0))
    assert main(["assess", str(path), "--request", again, "--interval", "5", "15", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["interval_query"] == [5.0, 15.0]
    assert out["interval_probability"] is not None and 0.0 < out["interval_probability"] < 1.0
    assert out["interval_probability"] == pytest.approx(direct.interval_probability, abs=1e-12)
