"""A project accounted in pure ε never takes a release priced in ρ (Gaussian noise): refused before
anything is drawn, and flagged by the ledger view if an entry naming a Gaussian mechanism appears."""

from __future__ import annotations

import dataclasses

import pytest

from dpdesk.engine.errors import BudgetError
from dpdesk.engine.mechanisms.base import Basis
from dpdesk.engine.mechanisms.gaussian import GAUSSIAN
from dpdesk.engine.mechanisms.noise import SeededSampler
from dpdesk.engine.queries.query import query_from_vector
from dpdesk.store import Project
from dpdesk.store.view import LedgerView, MalformedEntry


@dataclasses.dataclass(frozen=True)
class GaussianCount:
    """A fresh count with Gaussian noise as a release plan (what a zCDP project's assessment would make)."""

    query: object
    alpha: float
    basis: Basis
    mechanism = GAUSSIAN
    request_id = None
    releasable = True
    reason = "a Gaussian count"
    needs_data = True

    @property
    def charge(self):
        return GAUSSIAN.charge_for(self.query, self.alpha)

    def record(self):
        return {"query": self.query.to_json(), "alpha": self.alpha}

    def draw(self, cube, sampler, *, allow_insecure=False):
        theta = float(self.query.dense() @ cube.flat)
        return {
            "answer": sampler.release(
                GAUSSIAN, theta, self.query.sensitivity / self.alpha, self.query.sensitivity
            )
        }


def test_a_pure_project_refuses_a_release_priced_in_rho(store):
    path = store.new_project(budget=5.0, test_project=True)
    with Project.open(path, "w") as p:
        seq, head = p.head()
        q = query_from_vector([1, 1, 0, 0], p.schema.shape)
        plan = GaussianCount(q, 0.5, Basis(head, seq, p.answering_settings().to_json()))
        before = p.head()
        with pytest.raises(BudgetError, match="priced in ρ"):
            p.release(plan, SeededSampler(1))
        assert p.head() == before  # nothing recorded
        # a Laplace count goes through, and an entry rewritten to name the Gaussian is flagged by the view
        r = p.add_request([1, 1, 0, 0], 5.0, 0.1)
        p.release(p.assess(r.id), SeededSampler(1))
        fresh = next(e for e in p.ledger() if e.kind == "fresh")
        forged = dataclasses.replace(fresh, payload={**fresh.payload, "mechanism": "gaussian"})
        view = LedgerView(p.schema, p.genesis)
        view.extend([e for e in p.ledger() if e.seq < fresh.seq])
        with pytest.raises(MalformedEntry, match="priced in ρ"):
            view.add(forged)
