"""The one release path of a project: assess from public inputs, then record exactly that assessment.

:class:`Releasing` is the part of :class:`~dpdesk.store.project.Project` that answers requests.
:meth:`~Releasing.assess` (and :meth:`~Releasing.plan` for a release asked on the spot) computes the plan
of a request's kind — a count's :class:`~dpdesk.engine.answering.assessment.Assessment`, another kind's
release plan — from one moment of the ledger view and the curator's settings, through the one assess
function (:mod:`dpdesk.store.assessing`); the plan records its basis (ledger head, settings, method, seed).
:meth:`~Releasing.release` takes any :class:`~dpdesk.engine.mechanisms.base.ReleasePlan` — an assessment
or a plan of another release kind — refuses it with one line if the ledger or the settings moved since
(:class:`~dpdesk.store.errors.StaleAssessment`), draws what it needs from the vetted sampler, and
**commits the entry (fsync'd) before returning it**; if the commit fails the draw is discarded unseen.
It never decides again. A retry after a crash finds the recorded release and returns it instead of
drawing again; a unique index makes a second decision for one request impossible.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from dpdesk.engine.budget.policy import SpendPolicy
from dpdesk.engine.errors import BudgetError, DpdeskError
from dpdesk.engine.inference.history import History
from dpdesk.engine.inference.prior import BoundedPrior
from dpdesk.engine.kinds.base import Asked
from dpdesk.engine.kinds.settings import Settings
from dpdesk.engine.mechanisms.base import Basis, ReleasePlan
from dpdesk.engine.mechanisms.charge import same_charge
from dpdesk.engine.mechanisms.noise import NoiseSampler
from dpdesk.engine.mechanisms.secure_noise import OpenDPSampler
from dpdesk.engine.schema import Schema
from dpdesk.store import assessing, db, ledger, view_cache
from dpdesk.store.answering import FROM_PROJECT, check_share, read_look_ahead, write_look_ahead
from dpdesk.store.canonical import canonical_json
from dpdesk.store.checkpoints import checkpoint
from dpdesk.store.errors import (
    DrawDiscarded,
    PersonLevelUnavailable,
    RequestStateError,
    StaleAssessment,
    StoreError,
)
from dpdesk.store.release import Release, release_from_entry
from dpdesk.store.view import LedgerView
from dpdesk.store.watch import declined, recorded
from dpdesk.store.watching import planned_rows

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Sequence
    from pathlib import Path

    from dpdesk.engine.claims.control import ClaimCheck
    from dpdesk.engine.cube import Cube
    from dpdesk.engine.queries.query import Query
    from dpdesk.engine.schema import Schema
    from dpdesk.store.binding import Snapshot, SourceBinding
    from dpdesk.store.ledger import LedgerEntry
    from dpdesk.store.requests import StoredRequest
    from dpdesk.store.view import AssessState
    from dpdesk.store.watch import WatchedClaim

_CHAIN_SHARE = 0.9  # of saving the view cache: checking the chain hash by hash is nearly all of it

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


def person_level_refusal(schema: Schema, kind: str) -> str | None:
    """Why a release of ledger kind ``kind`` is refused on a project with ``schema`` (None: it is not).

    Every release kind is priced per row today. On a project whose privacy unit is a person with up to
    ``max_rows`` rows, that price understates a person's loss, so every kind is refused — by this one
    function, asked by :meth:`Releasing.release` (every release) and :meth:`Releasing.assess` (so no
    per-row price is shown as a queued request's cost) — until it is priced at the person level.
    """
    if schema.unit.rows_are_people:
        return None
    words = _KIND_WORDS.get(kind, f"{kind} releases")
    return (
        f"person-level pricing of {words} is not available yet: this project protects people "
        f"({schema.unit.describe()}), and a price per row would understate what each person can lose; "
        "nothing was released"
    )


class Releasing:
    """Assessing and releasing (a part of :class:`~dpdesk.store.project.Project`; see the module docstring)."""

    _view: LedgerView | None = None

    if TYPE_CHECKING:  # provided by Project (store/project.py) and its other part, Watching
        path: Path
        schema: Schema
        genesis: str
        total_budget: float
        delta_cap: float
        test_project: bool
        _conn: sqlite3.Connection

        @property
        def spend_policy(self) -> SpendPolicy | None: ...
        @property
        def prior(self) -> BoundedPrior | None: ...
        def cube(self) -> Cube: ...
        def snapshot(
            self, progress: Callable[[float], None] | None = None, cancelled: Callable[[], bool] | None = None
        ) -> Snapshot: ...
        def request(self, request_id: str) -> StoredRequest: ...
        def entry_for(self, request_id: str) -> LedgerEntry | None: ...
        def _require_writer(self) -> None: ...
        def _record(
            self,
            kind: str,
            request_id: str | None,
            payload: dict[str, Any],
            status: str | None,
            source: SourceBinding | None = None,
        ) -> LedgerEntry: ...
        def claim_gate(
            self, state: AssessState, plan: ReleasePlan, rows: Sequence[tuple[Query, float, str]] | None
        ) -> tuple[tuple[WatchedClaim, ClaimCheck], ...]: ...

    # -- the ledger view -----------------------------------------------------------------------
    def view(self) -> LedgerView:
        """The project's ledger view, extended with the entries recorded since it was last read."""
        if self._view is None:
            self._view = self._cached_view() or LedgerView(self.schema, self.genesis)
        view = self._view
        with view.growing():  # a sibling on a worker thread shares this view
            fresh = [ledger.decode(r) for r in ledger.raw_rows(self._conn, after=view.head[0])]
            if not fresh or view.extends(fresh[0]):
                view.extend(fresh)
                return view
        # the ledger does not continue the one read so far (another file under this name): start over
        self._view = view = LedgerView(self.schema, self.genesis)
        view.extend(ledger.decode(r) for r in ledger.raw_rows(self._conn))
        return view

    def _cached_view(self) -> LedgerView | None:
        """The view stored beside the file for a head this ledger holds (``store/view_cache.py``), or None."""
        conn, path = self._conn, self.path

        def load_prefix(seq: int) -> list[ledger.LedgerEntry]:
            # its own read-only connection: the entries are asked for later, maybe on another thread than
            # this connection's (the app loads the view on a worker and reads the ledger table on another)
            ro = db.connect_readonly(path)
            try:
                return [ledger.decode(r) for r in ledger.raw_rows(ro, upto=seq)]
            finally:
                ro.close()

        return view_cache.load(
            self.path, self.schema, self.genesis, lambda seq: ledger.entry_hash(conn, seq), load_prefix
        )

    def view_cache_worth_saving(self) -> bool:
        """Whether :meth:`save_view_cache` may have something to write — a quick test (no History work,
        no chain check): a view was read, the cache is on, and the view is long enough to be cached."""
        return (
            self._view is not None and view_cache.enabled() and self._view.history_rows >= view_cache.MIN_ROWS
        )

    def save_view_cache(
        self, *, progress: Callable[[float], None] | None = None, cancelled: Callable[[], bool] | None = None
    ) -> bool:
        """Store the ledger view beside the file when it holds more than the cache there (a new head or a
        factorisation it lacks); the chain is checked hash by hash first. Returns whether it wrote.

        ``Project.close`` calls it; the app calls it earlier on a worker through a sibling connection
        (which shares the view), so closing then has nothing left to write. ``progress(f)`` hears the
        fraction done (the chain check is most of it); ``cancelled()`` is asked as often and
        :class:`~dpdesk.engine.errors.Cancelled` raised when it says so (nothing is written then: the cache
        is only an accelerator, and the one there, if any, stays as it was).
        """
        if self._view is None:
            return False
        view = self.view()  # with the entries recorded since it was last read
        if view.history_rows < view_cache.MIN_ROWS:
            return False
        with view.assessing() as state:
            spaces = state.history.spaces
            if view.cache_key == state.head and set(spaces) <= set(view.cache_spaces):
                return False
        conn = self._conn

        def chain_ok(seq: int) -> bool:
            return (
                ledger.check_chain(
                    ledger.raw_rows(conn, upto=seq),
                    self.genesis,
                    cancelled=cancelled,
                    progress=None if progress is None else lambda f: progress(_CHAIN_SHARE * f),
                )[1]
                is None
            )

        return view_cache.save(
            self.path,
            view,
            chain_ok,
            cancelled=cancelled,
            progress=None if progress is None else lambda f: progress(_CHAIN_SHARE + (1 - _CHAIN_SHARE) * f),
        )

    def head(self) -> tuple[int, str]:
        """``(seq, hash)`` of the newest ledger entry; ``(0, genesis hash)`` for an empty ledger."""
        return ledger.head(self._conn) or (0, self.genesis)

    def history(self) -> History:
        """The engine's History of everything released (the view's; extended, never rebuilt)."""
        with self.view().assessing() as state:
            return state.history

    def basis(self, method: str | None = None, seed: int | None = None) -> Basis:
        """What a plan made now records as its basis: the ledger head and the answering settings.

        A plan of any release kind built from :meth:`view` (its ``cell_costs``, ``cell_deltas``) takes this
        basis; :meth:`release` refuses it once the ledger or the settings move on.
        """
        seq, head = self.head()
        return Basis(head, seq, self.answering_settings().to_json(), method, seed)

    def plan_inputs(self) -> dict[str, Any]:
        """The public inputs a plan of another release kind is priced with, all of one moment: the
        ledger's per-cell α (``cell_costs``) and δ (``cell_deltas``), ``total_budget``, the project's
        ``delta_cap`` and the ``basis`` :meth:`release` checks the plan against."""
        view = self.view()
        with view.growing():  # costs, δ and head of the same moment (a sibling may be recording meanwhile)
            seq, head = view.head
            return {
                "cell_costs": view.cell_costs,
                "cell_deltas": view.cell_deltas,
                "total_budget": float(self.total_budget),
                "delta_cap": float(self.delta_cap),
                "basis": Basis(head, seq, self.answering_settings().to_json()),
            }

    def answering_settings(self) -> Settings:
        """The curator's answering rules now: total budget, spend policy, known-bounds prior."""
        return Settings(float(self.total_budget), self.spend_policy, self.prior)

    @property
    def look_ahead(self) -> float | None:
        """The batch plans' look-ahead share (None: off; see :func:`dpdesk.store.batch.plan_pending`)."""
        return read_look_ahead(self._conn)

    def set_look_ahead(self, share: float | None) -> None:
        """Turn the batch plans' look-ahead on at ``share`` of the room left on unspent cells (None: off)."""
        if share is not None:
            check_share(share)  # checked before the write lock is asked for
        self._require_writer()
        with db.transaction(self._conn):
            write_look_ahead(self._conn, share)

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
        (:func:`dpdesk.store.assessing.assess`). ``policy`` and ``prior`` default to the project's
        :attr:`spend_policy` and :attr:`prior`; others (None for the greedy rule / the flat prior) show
        what they would do — such a plan cannot be released. ``options`` go to the kind's plan."""
        settings = Settings(
            float(self.total_budget), self._setting(policy, "spend_policy"), self._setting(prior, "prior")
        )
        return assessing.assess(self.view(), asked, settings, delta_cap=float(self.delta_cap), **options)

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
        :class:`Assessment` against history (``seed`` fixes Monte Carlo's randomness, drawn and recorded
        when not given), another kind's release plan (``reference_size``: a posterior's public
        reference table)."""
        req = self.request(request_id)
        # a per-row price would be shown as the request's cost: refused before it is computed
        refusal = person_level_refusal(self.schema, "fresh" if req.kind == "count" else req.kind)
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

    def _setting(self, given: Any, name: str) -> Any:
        return getattr(self, name) if isinstance(given, str) and given == FROM_PROJECT else given

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
        self._require_writer()
        refusal = person_level_refusal(self.schema, plan.mechanism.kind)
        if refusal is not None:
            raise PersonLevelUnavailable(refusal)
        checkpoint("answer:start")
        rid = plan.request_id
        if rid is not None:
            done = self.entry_for(rid)
            if done is not None:
                return release_from_entry(done, recovered=True)
            status = self.request(rid).status
            if status != "pending":
                raise RequestStateError(f"request {rid!r} is {status} but has no ledger entry (run verify)")
        self._check_basis(plan)
        if not plan.releasable:
            raise RequestStateError(
                f"request {rid!r} cannot be answered: {plan.reason}; nothing was spent "
                "(record the refusal with `dpdesk reject`)"
            )
        if plan.charge.measure != "epsilon":  # a Gaussian release: only zCDP accounting can price it
            raise BudgetError(
                f"{what_of(plan)} is priced in ρ (zCDP) and {self.path.name} accounts in pure ε; "
                "nothing was released"
            )
        costs = self.view().cell_costs
        after = costs + plan.charge.dense(costs.size)
        if after.size and float(after.max()) > float(self.total_budget):
            raise BudgetError(
                f"{what_of(plan)} would raise cell #{int(after.argmax())}'s cost to {float(after.max()):.6g}, "
                f"over the total budget {float(self.total_budget):g}; nothing was released"
            )
        charge = plan.charge
        if charge.delta > 0:  # δ adds up per cell like α (store/view.py); the project caps the largest
            deltas = self.view().cell_deltas + charge.delta * (charge.dense(costs.size) > 0)
            cap = float(self.delta_cap)
            if float(deltas.max()) > cap * (1 + 1e-12):
                why = (
                    "the project allows no δ (its δ cap is 0: pure α-DP releases only)"
                    if cap == 0
                    else f"over the project's δ cap {cap:g}"
                )
                raise BudgetError(
                    f"{what_of(plan)} would raise cell #{int(deltas.argmax())}'s δ to "
                    f"{float(deltas.max()):.3g}, {why}; nothing was released"
                )
        rows = planned_rows(plan, self.schema.shape)
        checks = self._claims_gate(plan, rows)  # before the scan and the draw: public inputs only
        payload = plan.record()
        drawn: dict[str, Any] = {}
        if plan.needs_data:
            sampler = sampler if sampler is not None else OpenDPSampler()  # imports opendp on first draw
            if not getattr(sampler, "secure", False) and not self.test_project:
                raise StoreError(
                    f"refusing sampler {getattr(sampler, 'name', sampler)!r}: it is not secure and "
                    f"{self.path.name} is not a test project"
                )
            try:
                self.snapshot(progress, cancelled)  # the scan (once per open project); no cancelling after it
            except DpdeskError:
                pass  # a vanished or unreadable source: cube() names it as a binding problem
            cube = self.cube()
            checkpoint("answer:cube")
            drawn = plan.draw(cube, sampler, allow_insecure=self.test_project)
            checkpoint("answer:drawn")
        payload.update(drawn)
        payload.update(
            mechanism=plan.mechanism.name, charge=plan.charge.to_json(payload), basis=plan.basis.to_json()
        )
        # what the view and verify will charge is the mechanism's privacy map: it must be what was priced
        contribution = plan.mechanism.contribution(json.loads(canonical_json(payload)), self.schema.shape)
        mapped = contribution.charge
        if (
            rows is None and self.view().claims
        ):  # rows known from the recorded payload only: still before recording
            try:
                checks = self._claims_gate(plan, [(r.query, r.alpha, r.family) for r in contribution.rows])
            except BaseException:
                del drawn, payload  # never shown, never returned
                raise
        if any(c.touches for _, c in checks):
            payload["claims"] = recorded(checks)
        if not same_charge(mapped, plan.charge, self.schema.n_cells):
            del drawn, payload  # never shown, never returned
            raise StoreError(
                f"{what_of(plan)}: the planned per-cell charge differs from the {plan.mechanism.name} "
                "mechanism's privacy map; nothing was recorded"
            )
        try:
            entry = self._record(plan.mechanism.kind, rid, payload, "answered" if rid is not None else None)
        except BaseException as exc:
            if not drawn:
                raise
            del drawn, payload  # never shown, never returned
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            raise DrawDiscarded(
                f"the fresh answer to {rid!r} could not be recorded ({exc}); it was discarded unseen"
            ) from None
        checkpoint("answer:committed" if plan.needs_data else "answer:recorded")
        return release_from_entry(entry, recovered=False)

    def _claims_gate(
        self, plan: ReleasePlan, rows: list[tuple[Query, float, str]] | None
    ) -> tuple[tuple[WatchedClaim, ClaimCheck], ...]:
        """Every watched claim's check on ``plan`` (``rows`` None: not known yet, checked after the draw);
        raises :class:`~dpdesk.store.watch.ClaimDeclined` (nothing recorded) if one declines it."""
        view = self.view()
        if not view.claims or rows is None:
            return ()
        with view.assessing() as state:
            checks = self.claim_gate(state, plan, rows)
        refusal = declined(checks, what_of(plan))
        if refusal is not None:
            raise refusal
        return checks

    def _check_basis(self, plan: ReleasePlan) -> None:
        """Refuse a plan assessed against another ledger head or other settings, in one line."""
        b, (seq, now) = plan.basis, self.head()
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
        settings = self.answering_settings().to_json()
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
        self._require_writer()
        done = self.entry_for(request_id)
        if done is not None:
            return release_from_entry(done, recovered=True)
        a = self.assess(request_id, method=method)
        checkpoint("answer:assessed")
        decision = getattr(a, "decision", "spend")  # a count's assessment decides; other kinds spend
        if expect is not None and decision != expect:
            raise RequestStateError(
                f"request {request_id!r}: the decision is now {decision!r}, not {expect!r}"
            )
        return self.release(a, sampler)
