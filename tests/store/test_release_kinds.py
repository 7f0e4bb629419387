"""A release plan of any kind passes the one release path (docs/architecture.md "Release path"): a
mechanism of a registered kind and a plan value — recorded, charged per cell, fed to history and
verified with nothing else changed; the registered kinds' plans through a real project file. The whole
protocol of a new kind (request reader, plan, wording, verify) is tests/test_kind_example.py."""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass

import pytest

from dpdesk.engine import registry
from dpdesk.engine.errors import BudgetError
from dpdesk.engine.kinds.base import ReleaseKind
from dpdesk.engine.mechanisms.base import Basis, Contribution, NoisyRow
from dpdesk.engine.mechanisms.charge import Charge, ChargeTerm
from dpdesk.engine.mechanisms.laplace import LAPLACE
from dpdesk.engine.mechanisms.noise import SeededSampler
from dpdesk.engine.queries.query import query_from_json
from dpdesk.store import Project
from dpdesk.store.errors import StaleAssessment, StoreError
from dpdesk.store.report import ledger_csv


@dataclass(frozen=True)
class NoisyCells:
    """Every cell once with Laplace noise at budget α (a partition: each record in one cell, charge α)."""

    name = "laplace_cells"
    kind = "partition"
    label = "noisy cells (Laplace)"

    def contribution(self, payload, shape):
        alpha, n = float(payload["alpha"]), math.prod(shape)
        rows = tuple(
            NoisyRow(query_from_json({"indices": [j], "values": [1]}, n, shape), alpha, float(v), "laplace")
            for j, v in enumerate(payload["values"])
        )
        return Contribution(Charge((ChargeTerm(alpha),)), rows, tuple(float(v) for v in payload["values"]))


NOISY_CELLS = NoisyCells()


@dataclass(frozen=True)
class NoisyCellsPlan:
    alpha: float
    basis: Basis
    mechanism = NOISY_CELLS
    request_id = None
    releasable = True
    reason = "release every cell once"
    needs_data = True

    @property
    def charge(self):
        return Charge((ChargeTerm(self.alpha),))

    def record(self):
        return {"alpha": self.alpha}

    def draw(self, cube, sampler, *, allow_insecure=False):
        released = sampler.release_vector(LAPLACE, cube.flat, 1.0 / self.alpha)  # a test project: seeded
        return {"values": [float(v) for v in released]}


class NoisyCellsKind(ReleaseKind):
    """The kind whose mechanism it is: registered with one line (here, patched into the registry)."""

    name = "laplace_cells"
    label = "noisy cells"
    mechanisms = (NOISY_CELLS,)


@pytest.fixture
def registered(monkeypatch):
    monkeypatch.setattr(registry, "KINDS", (*registry.KINDS, NoisyCellsKind()))


def test_a_new_release_kind_is_recorded_charged_fed_to_history_and_verified(store, registered):
    path = store.new_project(budget=2.0, test_project=True)
    with Project.open(path, "w") as p:
        seq, head = p.head()
        plan = NoisyCellsPlan(0.5, Basis(head, seq, p.answering_settings().to_json()))
        release = p.release(plan, SeededSampler(2))
        e = release.entry
        assert e.kind == "partition" and e.request_id is None and len(release.values) == 4
        assert e.payload["mechanism"] == "laplace_cells" and e.payload["charge"]["terms"][0]["query"] == "all"
        view = p.view()
        assert view.cell_costs.tolist() == [0.5] * 4 and view.system_cost == 0.5
        assert view.spenders(3) == [(f"entry {e.seq}", 0.5)]
        # the four noisy cells are history: a count over two cells is now estimable, at no cost
        r = p.add_request("[1, 1, 0, 0]", 30.0, 0.1)
        a = p.assess(r.id)
        assert a.estimable and a.estimate.estimate == pytest.approx(sum(release.values[:2]))
        assert a.decision == "infer" and p.release(a).kind == "inferred"
        assert p.view().cell_costs.tolist() == [0.5] * 4
        with pytest.raises(StaleAssessment):  # the same plan again: its basis is gone
            p.release(plan, SeededSampler(3))
        report = p.verify()
    assert report.ok and report.system_cost == 0.5, report.problems


def test_a_plan_whose_charge_is_not_its_mechanisms_privacy_map_is_never_recorded(store, registered):
    path = store.new_project(budget=2.0, test_project=True)

    @dataclass(frozen=True)
    class Undercharged(NoisyCellsPlan):
        @property
        def charge(self):
            return Charge((ChargeTerm(self.alpha / 2),))

    with Project.open(path, "w") as p:
        seq, head = p.head()
        with pytest.raises(
            StoreError, match="differs from the laplace_cells mechanism's privacy map; nothing was recorded"
        ):
            p.release(Undercharged(0.5, Basis(head, seq, p.answering_settings().to_json())), SeededSampler(2))
        with pytest.raises(BudgetError, match="over the total budget 2; nothing was released"):
            p.release(
                NoisyCellsPlan(2.5, Basis(head, seq, p.answering_settings().to_json())), SeededSampler(2)
            )
        assert p.ledger() == [] and p.verify().ok


# -- the registered kinds of main's release plans, through a real project file -----------------------


def test_a_partition_release_is_charged_on_every_cell_and_its_counts_join_history(store):
    from dpdesk.engine.partition.guarantee import preview
    from dpdesk.engine.partition.plan import cells_plan
    from dpdesk.engine.partition.release_plan import PartitionReleasePlan

    path = store.new_project(budget=2.0, test_project=True)
    with Project.open(path, "w") as p:
        pv = preview(cells_plan(p.schema), alpha=0.5, total_budget=2.0, cell_costs=p.view().cell_costs)
        release = p.release(PartitionReleasePlan(pv, p.basis()), SeededSampler(4))
        assert release.kind == "partition" and len(release.values) == p.schema.n_cells == 4
        assert release.answer is None  # several values: no single answer
        view = p.view()
        assert view.cell_costs.tolist() == [0.5] * 4 and view.structured_releases == ()
        assert len(p.history()) == 4  # one noisy row per cell
        r = p.add_request("[0, 0, 1, 1]", 40.0, 0.1)
        a = p.assess(r.id)
        assert a.decision == "infer" and a.estimate.estimate == pytest.approx(sum(release.values[2:]))
        assert p.release(a).alpha == 0.0
        report = p.verify(extends=[release.witness])
        rows = list(csv.DictReader(io.StringIO(ledger_csv(p.ledger(), p.view().largest_charges()))))
    assert [(r["kind"], float(r["alpha"])) for r in rows] == [("partition", 0.5), ("inferred", 0.0)]
    assert report.ok and report.system_cost == 0.5, report.problems


def test_a_release_over_the_row_limit_is_charged_but_left_to_its_own_structure(store, monkeypatch):
    from dpdesk.engine.partition.guarantee import preview
    from dpdesk.engine.partition.plan import marginals_by_order
    from dpdesk.engine.partition.release_plan import PartitionReleasePlan
    from dpdesk.store import release as release_module
    from dpdesk.store import view as view_module

    monkeypatch.setattr(view_module, "HISTORY_ROW_LIMIT", 3)  # the 2 + 2 one-way marginal counts exceed it
    monkeypatch.setattr(release_module, "REPLY_VALUES", 3)
    path = store.new_project(budget=2.0, test_project=True)
    with Project.open(path, "w") as p:
        pv = preview(
            marginals_by_order(p.schema, [1]), alpha=0.5, total_budget=2.0, cell_costs=p.view().cell_costs
        )
        release = p.release(PartitionReleasePlan(pv, p.basis()), SeededSampler(4))
        assert ", … (4 values in all) (partition)" in release.reply() and release.witness in release.reply()
        view = p.view()
        assert [r.entry.seq for r in view.structured_releases] == [release.entry.seq]
        assert len(view.structured_releases[0].contribution.rows) == 4 and len(p.history()) == 0
        with view.assessing() as state:  # what an assessment on a worker sees of it
            assert state.structured == view.structured_releases and len(state.history) == 0
        assert view.cell_costs.tolist() == [0.5] * 4  # two groups at scale 4: 2/4 on every cell
        report = p.verify()
    assert report.ok and report.system_cost == 0.5, report.problems


def test_posterior_releases_add_their_delta_per_cell_on_their_box(store):
    from dpdesk.engine.dirichlet.plan import assess_posterior
    from dpdesk.engine.dirichlet.request import parse_posterior

    path = store.new_project(budget=4.0, test_project=True, delta_cap=1e-5)
    with Project.open(path, "w") as p:
        q = parse_posterior('posterior(income | age="30-150"; prior=1)', p.schema)
        for i in range(2):
            view = p.view()
            plan = assess_posterior(
                q,
                mechanism="exponential-smooth",
                budget=1.0,
                delta=1e-6,
                size=31,
                cell_costs=view.cell_costs,
                total_budget=4.0,
                cell_deltas=view.cell_deltas,
                basis=p.basis(),
            )
            release = p.release(plan, SeededSampler(i))
            assert release.kind == "posterior" and len(release.values) == 2
        view = p.view()
        # the box is age 30-150 (cells 2, 3); each release charged α = 1 and δ = 1e-6 there only
        assert view.cell_costs.tolist() == pytest.approx([0, 0, 2.0, 2.0])
        assert view.cell_deltas.tolist() == pytest.approx([0, 0, 2e-6, 2e-6], rel=1e-12)
        assert view.delta_spent == pytest.approx(2e-6, rel=1e-12)
        report = p.verify()
    assert report.ok and report.delta_spent == pytest.approx(2e-6, rel=1e-12), report.problems


def test_a_private_argmax_is_charged_on_its_box_and_adds_no_history(store):
    from dpdesk.engine.selection.plan import plan_selection
    from dpdesk.engine.selection.query import parse_selection

    path = store.new_project(budget=2.0, test_project=True)
    with Project.open(path, "w") as p:
        q = parse_selection('argmax(age | income=">50K")', p.schema)
        plan = plan_selection(
            q, p.schema, alpha=0.5, total_budget=2.0, cell_costs=p.view().cell_costs, basis=p.basis()
        )
        release = p.release(plan, SeededSampler(1))
        assert release.kind == "selection" and release.answer in (0.0, 1.0)
        assert p.view().cell_costs.tolist() == pytest.approx([0, 0.5, 0, 0.5]) and len(p.history()) == 0
        assert p.verify().ok


def _structured_project(store, monkeypatch):
    """A project whose one-way marginal release is kept out of the History, and a request inferred from it."""
    from dpdesk.engine.partition.guarantee import preview
    from dpdesk.engine.partition.plan import marginals_by_order
    from dpdesk.engine.partition.release_plan import PartitionReleasePlan
    from dpdesk.store import view as view_module

    monkeypatch.setattr(view_module, "HISTORY_ROW_LIMIT", 3)
    path = store.new_project(budget=2.0, test_project=True)
    with Project.open(path, "w") as p:
        pv = preview(
            marginals_by_order(p.schema, [1]), alpha=0.5, total_budget=2.0, cell_costs=p.view().cell_costs
        )
        release = p.release(PartitionReleasePlan(pv, p.basis()), SeededSampler(4))
        r = p.add_request("[1, 1, 0, 0]", 15.0, 0.1)  # a one-way marginal count: estimable from the release
        a = p.assess(r.id)
        answered = p.release(a)
    return path, release, a, answered


def test_requests_are_answered_from_a_release_kept_out_of_history(store, monkeypatch):
    from dpdesk.engine.partition.release import PartitionRelease
    from dpdesk.store.ledger import thaw

    path, release, a, answered = _structured_project(store, monkeypatch)
    seq = release.entry.seq
    with Project.open(path, "w") as p:
        rel = PartitionRelease.from_payload(p.schema, thaw(release.entry.payload))
        assert len(p.history()) == 0 and a.decision == "infer" and a.inference.source == seq
        assert a.estimate.estimate == rel.estimate(a.request.query).estimate
        assert f"partition release #{seq}" in a.reason and a.cost == 0.0
        assert answered.kind == "inferred" and answered.entry.payload["from_release"] == seq
        assert answered.answer == pytest.approx(a.estimate.estimate)
        cell = p.add_request("[1, 0, 0, 0]", 15.0, 0.1)  # one cell: the marginals cannot say
        assert p.assess(cell.id).decision == "spend"
        other = p.add_request("[1, 0, 1, 0]", 15.0, 0.1)  # the other attribute's first label
        report = p.verify(extends=[answered.witness])
    assert report.ok and report.system_cost == 0.5, report.problems
    out = store.cli("assess", str(path), "--request", other.id)
    assert out.returncode == 0 and f"from partition release #{seq}'s 4 counts" in out.stdout
    assert f"INFER: answerable from partition release #{seq} — costs 0" in out.stdout
