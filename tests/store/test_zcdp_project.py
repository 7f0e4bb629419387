"""A project accounted in zCDP, end to end through the command line and the one release path.

The reference for every privacy figure is OpenDP itself: a Gaussian count's ρ is the map of OpenDP's own
``make_gaussian`` measurement at the query's sensitivity, and the system cost is OpenDP's
``make_zCDP_to_approxDP`` profile of the largest cell's ρ at the project's δ — never dpdesk's own code.
"""

from __future__ import annotations

import json
import sqlite3

import pytest

from dpdesk.engine.mechanisms.noise import SeededSampler
from dpdesk.store import Project

dp = pytest.importorskip("opendp.prelude")
dp.enable_features("contrib")

DELTA = 1e-6


def opendp_rho(family: str, sigma: float, sensitivity: int) -> float:
    """ρ of OpenDP's Gaussian measurement with ``σ`` at ``sensitivity`` (its privacy map)."""
    if family == "discrete_gaussian":
        m = dp.m.make_gaussian(dp.atom_domain(T="i64"), dp.absolute_distance(T="i64"), scale=sigma)
        return float(m.map(sensitivity))
    m = dp.m.make_gaussian(dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), scale=sigma)
    return float(m.map(float(sensitivity)))


def opendp_epsilon(rho: float, delta: float = DELTA) -> float:
    """ε at ``delta`` of ρ-zCDP by OpenDP's conversion (a Gaussian measurement whose map is ``rho``)."""
    sigma = (1.0 / (2.0 * rho)) ** 0.5
    m = dp.m.make_gaussian(dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), scale=sigma)
    return float(dp.c.make_zCDP_to_approxDP(m).map(1.0).epsilon(delta))


def new_zcdp(store, budget: float = 1.0, delta: float = DELTA, name: str = "z.dpdesk"):
    path = store.dir / name
    ran = store.cli(
        "project", "new", path, "--schema", store.schema_file, "--source", store.table,
        "--budget", budget, "--accounting", "zcdp", "--delta", delta, "--test-project",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return path, ran


def test_project_new_states_the_mode_and_info_shows_it(store):
    path, ran = new_zcdp(store)
    assert "accounting: zCDP: total privacy loss ε = 1 at δ = 1e-06" in ran.stdout
    assert "tight conversion" in ran.stdout
    info = store.cli("project", "info", path)
    assert info.returncode == 0
    assert "accounting: zCDP: total privacy loss ε = 1 at δ = 1e-06" in info.stdout
    assert "spent (system cost, from the ledger) ε = 0 " in info.stdout
    obj = json.loads(store.cli("project", "info", path, "--json").stdout)
    assert obj["accounting"] == {"mode": "zcdp", "delta": DELTA, "conversion": "tight"}
    # the ρ budget is the largest ρ whose conversion stays within ε = 1 (OpenDP's conversion)
    # (to rounding: the two bisections stop a few ulps apart)
    assert opendp_epsilon(obj["rho_budget"]) <= 1.0 + 1e-12 < opendp_epsilon(obj["rho_budget"] * (1 + 1e-6))
    with Project.open(path) as p:
        assert p.settings()["accounting"] == {"mode": "zcdp", "delta": DELTA, "conversion": "tight"}
    pure = store.new_project()
    assert (
        "accounting" not in json.loads(store.cli("project", "info", pure, "--json").stdout)
        or json.loads(store.cli("project", "info", pure, "--json").stdout)["accounting"] == "pure"
    )


@pytest.mark.parametrize(
    "extra, says",
    [
        (["--accounting", "zcdp"], "give --delta D"),
        (["--delta", "1e-6"], "needs --accounting zcdp"),
        (["--accounting", "zcdp", "--delta", "0"], "delta (0.0) must be strictly between 0 and 1"),
        (["--accounting", "zcdp", "--delta", "1.5"], "delta (1.5) must be strictly between 0 and 1"),
    ],
)
def test_bad_accounting_is_one_line_exit_2_and_nothing_written(store, extra, says):
    path = store.dir / "bad.dpdesk"
    ran = store.cli(
        "project", "new", path, "--schema", store.schema_file, "--source", store.table, "--budget", 1, *extra
    )
    assert ran.returncode == 2
    assert says in ran.stderr and len(ran.stderr.strip().splitlines()) == 1
    assert not path.exists() and list(store.dir.glob(".bad.dpdesk*")) == []


def test_a_gaussian_count_is_charged_opendps_rho_and_the_system_cost_is_opendps_epsilon(store):
    path, _ = new_zcdp(store)
    with Project.open(path, "w") as p:
        r = p.add_request('count(age="0-30")', 10.0, 0.05)
        a = p.assess(r.id)
        assert a.decision == "spend" and a.noise.name == "discrete_gaussian"
        obj = a.to_json()  # --json: the figures in ρ, and the ε they state
        assert obj["accounting"]["mode"] == "zcdp" and obj["epsilon_total"] == 1.0
        assert obj["epsilon_after"] == pytest.approx(opendp_epsilon(obj["system_cost_after"]), rel=1e-9)
        release = p.release(a, SeededSampler(7))
        payload = release.entry.payload
        assert payload["mechanism"] == "discrete_gaussian"
        sigma = 1.0 / float(payload["alpha"])  # a count: S = 1, σ = S/α
        rho = opendp_rho("discrete_gaussian", sigma, 1)
        costs = p.view().cell_costs
        # the two age 0-30 cells pay the release's ρ, the others nothing
        touched = [j for j in range(p.schema.n_cells) if costs[j] > 0]
        assert len(touched) == 2
        assert costs[touched] == pytest.approx([rho, rho], rel=1e-12)
        assert p.verify().ok
        assert p.verify().epsilon_spent == pytest.approx(opendp_epsilon(rho), rel=1e-9)
    out = store.cli("project", "info", path).stdout
    assert f"ε = {opendp_epsilon(rho):.6g} (largest cell's ρ = {rho:.6g}" in out


def test_the_hard_stop_is_on_the_converted_epsilon(store):
    """Requests on one cell are answered until the next would take its ρ past what ε = 1 at δ allows
    (OpenDP's conversion): the refused one would, every answered one did not."""
    path, _ = new_zcdp(store, budget=1.0)
    answered = []
    with Project.open(path, "w") as p:
        for i in range(40):
            r = p.add_request('count(age="0-30", income="<=50K")', 30.0 * 0.8**i, 0.05, request_id=f"r{i}")
            a = p.assess(r.id)
            if a.decision == "infer":
                p.release(a)
                continue
            rho_after = float(a.budget.system_cost_after)
            if a.decision == "reject":
                assert "would exceed the total budget" in a.reason and "at δ = 1e-06" in a.reason
                assert opendp_epsilon(rho_after) > 1.0
                break
            assert opendp_epsilon(rho_after) <= 1.0 + 1e-12
            p.release(a, SeededSampler(i))
            answered.append(r.id)
        else:
            pytest.fail("the budget never ran out")
        assert len(answered) >= 2
        report = p.verify()
        assert report.ok and report.epsilon_spent <= 1.0 + 1e-12
        assert report.epsilon_spent == pytest.approx(opendp_epsilon(report.system_cost), rel=1e-9)


def test_ledger_costs_add_in_rho_across_gaussian_and_laplace_rows(store):
    """A pure ε release in a zCDP project costs ρ = ε²/2 per cell (a Laplace count priced by hand)."""
    from dpdesk.engine.answering.request import Request
    from dpdesk.engine.answering.workflow import assess as engine_assess
    from dpdesk.engine.queries.text import query_from_input

    path, _ = new_zcdp(store)
    with Project.open(path, "w") as p:
        r = p.add_request('count(income=">50K")', 40.0, 0.05)
        q = query_from_input('count(income=">50K")', p.schema.n_cells, p.schema.shape, p.schema)
        settings = p.answering_settings()
        with p.view().assessing() as s:
            laplace = engine_assess(
                s.history,
                Request(r.id, q, 40.0, 0.05),
                settings,
                family="discrete_laplace",
                cell_costs=s.cell_costs,
                head=s.head,
            )
        assert laplace.decision == "spend"
        p.release(laplace, SeededSampler(3))
        eps = float(laplace.spend_alpha)  # its pure ε on each touched cell (S = 1)
        costs = p.view().cell_costs
        assert sorted(set(costs.round(15))) == pytest.approx([0.0, eps * eps / 2.0], rel=1e-12)
        r2 = p.add_request('count(income=">50K", age="30-150")', 30.0, 0.05)
        a2 = p.assess(r2.id)
        p.release(a2, SeededSampler(4))
        rho2 = opendp_rho("discrete_gaussian", 1.0 / float(a2.spend_alpha), 1)
        assert float(p.view().cell_costs.max()) == pytest.approx(eps * eps / 2.0 + rho2, rel=1e-12)
        assert p.verify().ok


def test_a_pure_project_still_prices_in_epsilon_and_refuses_rho(store):
    path = store.new_project(budget=1.0, test_project=True)
    with Project.open(path, "w") as p:
        assert p.accounting is None
        r = p.add_request('count(age="0-30")', 10.0, 0.05)
        a = p.assess(r.id)
        assert a.noise.name == "discrete_laplace"
        assert "ρ" not in a.reason


def test_the_accounting_is_under_the_genesis_hash(store):
    path, _ = new_zcdp(store)
    with sqlite3.connect(path) as conn:  # someone turns the project into a pure one by hand
        conn.execute("UPDATE project SET accounting_json = NULL WHERE id = 1")
    with Project.open(path) as p:
        report = p.verify()
    assert not report.ok and any("genesis" in m for m in report.problems)


def test_a_spend_policy_is_refused_under_zcdp(store):
    path, _ = new_zcdp(store)
    ran = store.cli("project", "policy", path, "--pace", "0.1", "0.5")
    assert ran.returncode == 2 and "zCDP" in ran.stderr


def test_a_real_project_draws_the_discrete_gaussian_from_opendp(store):
    """Not a test project: the vetted sampler (OpenDP's make_gaussian over i64) draws the noise."""
    import json as _json

    path = store.dir / "real.dpdesk"
    Project.create(
        path,
        name="real",
        schema=_json.loads(store.schema_file.read_text(encoding="utf-8")),
        source_location=str(store.table),
        total_budget=1.0,
        accounting="zcdp",
        delta=DELTA,
    ).close()
    with Project.open(path, "w") as p:
        r = p.add_request('count(income=">50K")', 10.0, 0.05)
        release = p.release(p.assess(r.id))
        payload = release.entry.payload
        assert payload["mechanism"] == "discrete_gaussian" and str(payload["sampler"]).startswith("opendp")
        assert float(payload["answer"]).is_integer()  # an integer count plus integer noise
        rho = opendp_rho("discrete_gaussian", 1.0 / float(payload["alpha"]), 1)
        assert float(p.view().cell_costs.max()) == pytest.approx(rho, rel=1e-12)
        assert p.verify().ok


def test_a_weighted_query_gets_the_float_gaussian_and_opendps_rho_per_cell(store):
    """Non-integer weights: OpenDP's float Gaussian; cell j pays (α|Q_j|/S)²/2 = Q_j²/(2σ²)."""
    path, _ = new_zcdp(store, name="w.dpdesk")
    with Project.open(path, "w") as p:
        r = p.add_request("[0.5, 1.5, 0, 0]", 30.0, 0.05)
        a = p.assess(r.id)
        assert a.decision == "spend" and a.noise.name == "gaussian"
        payload = p.release(a, SeededSampler(9)).entry.payload
        assert payload["mechanism"] == "gaussian"
        sigma = 1.5 / float(payload["alpha"])  # S = 1.5, σ = S/α
        costs = p.view().cell_costs
        # OpenDP's map at each cell's own coefficient (the record there moves the answer by |Q_j|)
        assert costs[0] == pytest.approx(
            opendp_rho("gaussian", sigma / 0.5, 1), rel=1e-9
        )  # |Q_0| = 0.5: σ/|Q_0| per unit
        assert costs[1] == pytest.approx(opendp_rho("gaussian", sigma / 1.5, 1), rel=1e-9)
        assert costs[2] == costs[3] == 0.0
        assert p.verify().ok


def test_a_zcdp_project_with_a_spend_policy_is_refused_before_anything_is_written(store):
    path = store.dir / "paced.dpdesk"
    ran = store.cli(
        "project", "new", path, "--schema", store.schema_file, "--source", store.table, "--budget", 1,
        "--accounting", "zcdp", "--delta", "1e-6", "--pace", "0.1", "0.5",
    )  # fmt: skip
    assert ran.returncode == 2 and "spend policy" in ran.stderr and len(ran.stderr.strip().splitlines()) == 1
    assert not path.exists()


def test_an_exported_history_is_assessed_offline_as_the_project_assesses_it(store):
    """`dpdesk export` of a zCDP project states its accounting; `dpdesk assess --history` then prices in ρ
    exactly as the project does (same decision, same ρ, same system cost in ε)."""
    path, _ = new_zcdp(store, name="x.dpdesk")
    with Project.open(path, "w") as p:
        first = p.add_request('count(age="0-30")', 12.0, 0.05)
        p.release(p.assess(first.id), SeededSampler(2))
        r = p.add_request('count(age="0-30", income=">50K")', 9.0, 0.05)
        a = p.assess(r.id)
    out = store.dir / "x.history.json"
    assert store.cli("export", path, "--history", out).returncode == 0
    exported = json.loads(out.read_text(encoding="utf-8"))
    assert exported["accounting"] == {"mode": "zcdp", "delta": DELTA, "conversion": "tight"}
    ran = store.cli(
        "assess", "--history", out, "--query", 'count(age="0-30", income=">50K")', "--eps", 9, "--delta",
        0.05, "--json",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    offline = json.loads(ran.stdout)
    assert offline["decision"] == a.decision and offline["family"] == "discrete_gaussian"
    assert offline["spend_alpha"] == pytest.approx(a.spend_alpha, rel=1e-12)
    assert offline["epsilon_after"] == pytest.approx(a.to_json()["epsilon_after"], rel=1e-12)
    paced = store.cli("assess", "--history", out, "--query", "[1,1,0,0]", "--eps", 9, "--delta", 0.05,
                      "--pace", "0.1", "0.5")  # fmt: skip
    assert paced.returncode == 2 and "zCDP" in paced.stderr
