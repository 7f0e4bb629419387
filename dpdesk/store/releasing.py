"""The one release path of a project: assess from public inputs, then record exactly that assessment.

:class:`Releaser` is the project's service that answers requests.
:meth:`~Releaser.assess` (and :meth:`~Releaser.plan` for a release asked on the spot) computes the plan
of a request's kind — a count's :class:`~dpdesk.engine.answering.assessment.Assessment`, another kind's
release plan — from one moment of the ledger view and the curator's settings, through the one assess
function (:mod:`dpdesk.store.assessing`); the plan records its basis (ledger head, settings, method, seed).
:meth:`~Releaser.release` takes any :class:`~dpdesk.engine.mechanisms.base.ReleasePlan` — an assessment
or a plan of another release kind — refuses it with one line if the ledger or the settings moved since
(:class:`~dpdesk.store.errors.StaleAssessment`), draws what it needs from the vetted sampler, and
**commits the entry (fsync'd) before returning it**; if the commit fails the draw is discarded unseen.
It never decides again. A retry after a crash finds the recorded release and returns it instead of
drawing again; a unique index makes a second decision for one request impossible.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from dpdesk.engine.budget.mode import in_unit
from dpdesk.engine.budget.policy import SpendPolicy
from dpdesk.engine.claims.control import ClaimCheck
from dpdesk.engine.errors import BudgetError, DpdeskError
from dpdesk.engine.inference.prior import BoundedPrior
from dpdesk.engine.kinds.base import Asked
from dpdesk.engine.mechanisms.base import Basis, ReleasePlan
from dpdesk.engine.mechanisms.charge import same_charge
from dpdesk.engine.mechanisms.noise import NoiseSampler
from dpdesk.engine.mechanisms.secure_noise import OpenDPSampler
from dpdesk.engine.queries.query import Query
from dpdesk.engine.schema import Schema
from dpdesk.store import assessing
from dpdesk.store.answering import FROM_PROJECT
from dpdesk.store.canonical import canonical_json
from dpdesk.store.checkpoints import checkpoint
from dpdesk.store.errors import (
    DrawDiscarded,
    PersonLevelUnavailable,
    RequestStateError,
    StaleAssessment,
    StoreError,
    Unsettled,
)
from dpdesk.store.file import ProjectFile
from dpdesk.store.ledger import LedgerEntry
from dpdesk.store.ledger_book import LedgerBook
from dpdesk.store.queue import RequestQueue
from dpdesk.store.release import Release, release_from_entry
from dpdesk.store.settings import AnsweringSettings, settings_of
from dpdesk.store.watch import WatchedClaim, declined, recorded
from dpdesk.store.watching import Claims, planned_rows

__all__ = ["Releaser", "what_of"]

_Checks = tuple[tuple[WatchedClaim, ClaimCheck], ...]
_Rows = list[tuple[Query, float, str]]

# What the curator calls a release of each ledger kind, for the person-level refusal below.
_KIND_WORDS = {
    "fresh": "fresh counts",
    "inferred": "answers from history",
    "partition": "partition releases",
    "selection": "max/argmax answers",
    "posterior": "posteriors of proportions",
    "estimate": "estimates from history",
    "synthetic": "synthetic tables",
    "measurement": "batch measurements",
}


def what_of(plan: ReleasePlan) -> str:
    return f"request {plan.request_id!r}" if plan.request_id is not None else "this release"


# Ledger kinds not yet priced per person when a person's rows must fall in distinct cells or slices: the
# batch planner prices a cell's room as total / k (exact when a person's k rows may share a cell;
# store/batch.py), not the sum of the k largest cells, so it is refused there rather than priced per row.
UNPRICED_PER_PERSON = frozenset({"measurement"})


def person_level_refusal(schema: Schema, kind: str) -> str | None:
    """Why a release of ledger kind ``kind`` is refused on a project with ``schema`` (None: it is not).

    Every other kind is priced per person: its per-cell charges add up to one person's loss by the
    project's privacy unit (:mod:`dpdesk.engine.budget.person`) in the system cost, the hard stop and
    every preview. A kind in :data:`UNPRICED_PER_PERSON` is refused — by this one function, asked by
    :meth:`Releaser.release` (every release) and :meth:`Releaser.assess` — when a person may hold more
    than one row, never priced per row.
    """
    unit = schema.unit
    if unit.rows_are_people or unit.max_rows == 1 or not unit.grouped or kind not in UNPRICED_PER_PERSON:
        return None
    words = _KIND_WORDS.get(kind, f"{kind} releases")
    return (
        f"{words} are not priced per person yet with one row per cell or per group: this project protects people "
        f"({schema.unit.describe()}), and a price per row would understate what each person can lose; "
        "answer the requests one at a time; nothing was released"
    )


class Releaser:
    """Assessing and releasing for one open project file (see the module docstring)."""

    def __init__(
        self,
        file: ProjectFile,
        queue: RequestQueue,
        book: LedgerBook,
        settings: AnsweringSettings,
        claims: Claims,
        snapshot: Callable[[Callable[[float], None] | None, Callable[[], bool] | None], Any],
    ) -> None:
        self.file, self.queue, self.book, self.settings, self.claims = file, queue, book, settings, claims
        self.snapshot = snapshot  # the source scan (once per open project), with progress and cancel

    def basis(self, method: str | None = None, seed: int | None = None) -> Basis:
        """What a plan made now records as its basis: the ledger head and the answering settings; the
        release path refuses such a plan once the ledger or the settings move on."""
        seq, head = self.book.head()
        return Basis(head, seq, self.settings.now().to_json(), method, seed)

    def plan_inputs(self) -> dict[str, Any]:
        """The public inputs a plan of another release kind is priced with, all of one moment: the
        ledger's per-cell α (``cell_costs``) and δ (``cell_deltas``), ``total_budget``, the project's
        ``delta_cap``, the ``basis`` :meth:`release` checks the plan against and the person ``rule``."""
        view = self.book.view()
        with view.growing():  # costs, δ and head of the same moment (a sibling may be recording meanwhile)
            seq, head = view.head
            return {
                "cell_costs": view.cell_costs,
                "cell_deltas": view.cell_deltas,
                "total_budget": self.settings.now().total_budget,  # in the project's unit (ε or ρ)
                "delta_cap": float(self.file.delta_cap),
                "basis": Basis(head, seq, self.settings.now().to_json()),
                "accounting": self.file.accounting,
                "rule": view.rule,
            }

    # -- assessing -----------------------------------------------------------------------------
    def plan(
        self,
        asked: Asked,
        *,
        policy: SpendPolicy | str | None = FROM_PROJECT,
        prior: BoundedPrior | str | None = FROM_PROJECT,
        **options: Any,
    ) -> ReleasePlan:
        """The plan of ``asked`` — a queued request or an :class:`~dpdesk.engine.kinds.base.AdHoc` one —
        against the ledger as it is now (spends nothing), from the one assess function
        (:func:`dpdesk.store.assessing.assess`). ``policy`` and ``prior`` default to the project's; others
        (None for the greedy rule / the flat prior) show what they would do — such a plan cannot be
        released. ``options`` go to the kind's plan."""
        chosen_policy = self.settings.spend_policy if _from_project(policy) else policy
        chosen_prior = self.settings.prior if _from_project(prior) else prior
        settings = settings_of(self.file, chosen_policy, chosen_prior)  # type: ignore[arg-type]
        return assessing.assess(
            self.book.view(), asked, settings, delta_cap=float(self.file.delta_cap), **options
        )

    def assess(
        self,
        request_id: str,
        method: str = "fft",
        interval: tuple[float, float] | None = None,
        policy: SpendPolicy | str | None = FROM_PROJECT,
        prior: BoundedPrior | str | None = FROM_PROJECT,
        seed: int | None = None,
        reference_size: int | None = None,
    ) -> ReleasePlan:
        """The plan of a stored request against the ledger as it is now (see :meth:`plan`): a count's
        ``Assessment`` against history (``seed`` fixes Monte Carlo's randomness, drawn and recorded when
        not given), another kind's release plan (``reference_size``: a posterior's public reference
        table)."""
        req = self.queue.request(request_id)
        # a per-row price would be shown as the request's cost: refused before it is computed
        refusal = person_level_refusal(self.file.schema, "fresh" if req.kind == "count" else req.kind)
        if refusal is not None:
            raise PersonLevelUnavailable(refusal.replace("; nothing was released", "; nothing was assessed"))
        return self.plan(
            req,
            policy=policy,
            prior=prior,
            method=method,
            interval=interval,
            seed=seed,
            reference_size=reference_size,
        )

    # -- releasing -----------------------------------------------------------------------------
    def release(
        self,
        plan: ReleasePlan,
        sampler: NoiseSampler | None = None,
        *,
        progress: Callable[[float], None] | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> Release:
        """Record exactly ``plan`` and return it, durably recorded first (see the module docstring).

        ``progress``/``cancelled`` follow the source scan a first noisy release needs (the project's
        snapshot); a cancel stops it there, before any noise is drawn, and nothing is recorded.
        """
        self.file.require_writer()
        refusal = person_level_refusal(self.file.schema, plan.mechanism.kind)
        if refusal is not None:
            raise PersonLevelUnavailable(refusal)
        checkpoint("answer:start")
        done = self._recorded_already(plan)
        if done is not None:
            return done
        self._check_basis(plan)
        if not plan.releasable:
            raise RequestStateError(
                f"request {plan.request_id!r} cannot be answered: {plan.reason}; nothing was spent "
                "(record the refusal with `dpdesk reject`)"
            )
        self._check_budget(plan)
        rows = planned_rows(plan, self.file.schema.shape)
        checks = self._claims_gate(plan, rows)  # before the scan and the draw: public inputs only
        payload = plan.record()
        drawn = self._draw(plan, sampler, progress, cancelled) if plan.needs_data else {}
        payload.update(drawn)
        payload.update(
            mechanism=plan.mechanism.name, charge=plan.charge.to_json(payload), basis=plan.basis.to_json()
        )
        try:
            checks = self._mapped(plan, payload, rows, checks)
        except BaseException:
            del drawn, payload  # never shown, never returned
            raise
        if any(c.touches for _, c in checks):
            payload["claims"] = recorded(checks)
        try:
            entry = self._commit(plan, payload, bool(drawn))
        except BaseException:
            del drawn, payload  # never shown, never returned
            raise
        checkpoint("answer:committed" if plan.needs_data else "answer:recorded")
        return release_from_entry(entry, recovered=False)

    def _recorded_already(self, plan: ReleasePlan) -> Release | None:
        """A request's decision found in the ledger (a crash before it was shown): that release, never a
        second draw; a request decided without an entry is refused."""
        rid = plan.request_id
        if rid is None:
            return None
        done = self.book.entry_for(rid)
        if done is not None:
            self.book.settled()  # shown means stored in the main file
            return release_from_entry(done, recovered=True)
        status = self.queue.request(rid).status
        if status != "pending":
            raise RequestStateError(f"request {rid!r} is {status} but has no ledger entry (run verify)")
        return None

    def _check_budget(self, plan: ReleasePlan) -> None:
        """Refuse a plan that would take a cell's α over the total, or its δ over the project's δ cap."""
        acc = self.file.accounting
        if plan.charge.measure != "epsilon" and acc is None:  # Gaussian noise: only zCDP can price it
            raise BudgetError(
                f"{what_of(plan)} is priced in ρ (zCDP) and {self.file.path.name} accounts in pure ε; "
                "nothing was released"
            )
        view, total = self.book.view(), self.settings.now().total_budget
        costs, rule = view.cell_costs, view.rule
        charge = in_unit(acc, plan.charge, costs.size)  # under zCDP, a pure ε charge as ε²/2 per cell
        after = costs + charge.dense(costs.size)
        if after.size and float(after.max()) > total:
            top = float(after.max())
            cost, of = (
                (f"{top:.6g}", f"{total:g}")
                if acc is None
                else (
                    f"ε = {acc.epsilon_of(top):.6g} (ρ = {top:.6g})",
                    f"ε = {acc.epsilon:g} at δ = {acc.delta:g}",
                )
            )
            raise BudgetError(
                f"{what_of(plan)} would raise cell #{int(after.argmax())}'s cost to {cost}, "
                f"over the total budget {of}; nothing was released"
            )
        person = rule.total(after, "epsilon" if acc is None else "rho")
        if after.size and not rule.rows_are_people and person > total:
            shown = f"{person:.6g}" if acc is None else f"ε = {acc.epsilon_of(person):.6g} (ρ = {person:.6g})"
            raise BudgetError(
                f"{what_of(plan)} would raise one person's privacy loss to {shown} ({rule.words()}), "
                f"over the total budget {total:g}; nothing was released"
            )
        if charge.delta > 0:  # δ adds up per cell like α (store/view.py); the project caps a person's
            deltas = view.cell_deltas + charge.delta * (charge.dense(costs.size) > 0)
            cap = float(self.file.delta_cap)
            person_delta = rule.delta(after, deltas)
            if not rule.rows_are_people and person_delta > cap * (1 + 1e-12):
                raise BudgetError(
                    f"{what_of(plan)} would raise one person's δ to {person_delta:.3g} ({rule.k} rows), "
                    f"over the project's δ cap {cap:g}; nothing was released"
                )
            if float(deltas.max()) > cap * (1 + 1e-12):
                why = (
                    "the project allows no δ (its δ cap is 0: pure ε-DP releases only)"
                    if cap == 0
                    else f"over the project's δ cap {cap:g}"
                )
                raise BudgetError(
                    f"{what_of(plan)} would raise cell #{int(deltas.argmax())}'s δ to "
                    f"{float(deltas.max()):.3g}, {why}; nothing was released"
                )

    def _draw(
        self,
        plan: ReleasePlan,
        sampler: NoiseSampler | None,
        progress: Callable[[float], None] | None,
        cancelled: Callable[[], bool] | None,
    ) -> dict[str, Any]:
        """The payload members ``plan`` draws from the data with the vetted sampler (never shown yet)."""
        sampler = sampler if sampler is not None else OpenDPSampler()  # imports opendp on first draw
        if not getattr(sampler, "secure", False) and not self.file.test_project:
            raise StoreError(
                f"refusing sampler {getattr(sampler, 'name', sampler)!r}: it is not secure and "
                f"{self.file.path.name} is not a test project"
            )
        try:
            self.snapshot(progress, cancelled)  # the scan (once per open project); no cancelling after it
        except DpdeskError:
            pass  # a vanished or unreadable source: cube() names it as a binding problem
        cube = self.file.cube()
        checkpoint("answer:cube")
        drawn = plan.draw(cube, sampler, allow_insecure=self.file.test_project)
        checkpoint("answer:drawn")
        return drawn

    def _mapped(
        self, plan: ReleasePlan, payload: dict[str, Any], rows: _Rows | None, checks: _Checks
    ) -> _Checks:
        """What the view and verify will charge is the mechanism's privacy map: it must be what was
        priced. Rows known from the recorded payload only are checked against the claims here, still
        before recording. Returns the claims' checks."""
        contribution = plan.mechanism.contribution(
            json.loads(canonical_json(payload)), self.file.schema.shape
        )
        if rows is None and self.book.view().claims:
            checks = self._claims_gate(plan, [(r.query, r.alpha, r.family) for r in contribution.rows])
        n, acc = self.file.schema.n_cells, self.file.accounting
        if not same_charge(in_unit(acc, contribution.charge, n), in_unit(acc, plan.charge, n), n):
            raise StoreError(
                f"{what_of(plan)}: the planned per-cell charge differs from the {plan.mechanism.name} "
                "mechanism's privacy map; nothing was recorded"
            )
        return checks

    def _commit(self, plan: ReleasePlan, payload: dict[str, Any], drawn: bool) -> LedgerEntry:
        """The entry and the request's status in one fsync'd transaction; a draw that cannot be
        recorded is discarded unseen."""
        rid = plan.request_id
        try:
            return self.book.record(
                plan.mechanism.kind, rid, payload, "answered" if rid is not None else None
            )
        except BaseException as exc:
            if not drawn or isinstance(exc, Unsettled):  # Unsettled: recorded, not to be shown yet
                raise
            del payload  # never shown, never returned
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            raise DrawDiscarded(
                f"{self.file.path.name}: the fresh answer to {rid!r} could not be recorded ({exc}); "
                "it was discarded unseen"
            ) from None

    def _claims_gate(self, plan: ReleasePlan, rows: _Rows | None) -> _Checks:
        """Every watched claim's check on ``plan`` (``rows`` None: not known yet, checked after the draw);
        raises :class:`~dpdesk.store.watch.ClaimDeclined` (nothing recorded) if one declines it."""
        view = self.book.view()
        if not view.claims or rows is None:
            return ()
        with view.assessing() as state:
            checks = self.claims.gate(state, plan, rows)
        refusal = declined(checks, what_of(plan))
        if refusal is not None:
            raise refusal
        return checks

    def _check_basis(self, plan: ReleasePlan) -> None:
        """Refuse a plan assessed against another ledger head or other settings, in one line."""
        b, (seq, now) = plan.basis, self.book.head()
        what = what_of(plan)
        if b.ledger_head != now:
            then = (
                "outside this project"
                if b.ledger_head is None
                else f"at ledger entry #{b.ledger_seq} ({b.ledger_head[:12]}…)"
            )
            raise StaleAssessment(
                f"{what} was assessed {then} but the ledger is now at entry #{seq} ({now[:12]}…); "
                "nothing was released — assess it again"
            )
        settings = self.settings.now().to_json()
        if dict(b.settings) != settings:
            changed = ", ".join(k for k in settings if b.settings.get(k) != settings[k]) or "settings"
            raise StaleAssessment(
                f"{what} was assessed under other answering settings ({changed}); "
                "nothing was released — assess it again"
            )

    def answer(
        self,
        request_id: str,
        sampler: NoiseSampler | None = None,
        *,
        method: str = "fft",
        expect: str | None = None,
    ) -> Release:
        """Assess a pending request under the project's settings and release exactly that assessment.

        Returns the recorded answer (``recovered=True``) if the request was already answered, e.g. by a
        process that crashed before it could show it. ``expect`` is the decision the caller expects
        ("infer" or "spend"); if the assessment decides otherwise, nothing is released.
        """
        self.file.require_writer()
        done = self.book.entry_for(request_id)
        if done is not None:
            self.book.settled()  # shown means stored in the main file
            return release_from_entry(done, recovered=True)
        a = self.assess(request_id, method=method)
        checkpoint("answer:assessed")
        decision = getattr(a, "decision", "spend")  # a count's assessment decides; other kinds spend
        if expect is not None and decision != expect:
            raise RequestStateError(
                f"request {request_id!r}: the decision is now {getattr(a, 'decision', None)!r}, not {expect!r}"
            )
        return self.release(a, sampler)


def _from_project(given: Any) -> bool:
    return isinstance(given, str) and given == FROM_PROJECT
