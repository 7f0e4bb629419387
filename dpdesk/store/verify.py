"""Audit a project file: what ``dpdesk verify`` checks and guarantees.

1. The fixed settings (name, total budget, neighbour model, schema, test flag, initial source) still
   hash to the genesis the ledger chains from.
2. Sequence numbers run 1, 2, 3, … without gaps; every payload is canonical JSON; every
   ``prev_hash`` is the previous entry's hash and every ``hash = SHA-256(prev_hash ‖ entry)``.
3. The ``ledger_head`` row names the last entry (so deleting the newest entries is caught).
4. Budget recomputation: a ledger view (:mod:`dpdesk.store.view`) built here from the raw entries —
   never a cached one — charges every release per cell by its mechanism's own privacy map; the
   maximum never exceeds the total budget after any entry, each recorded per-cell charge is what the
   privacy map gives for the recorded parameters, no cell's δ (summed over the (α, δ) releases charging
   it) exceeds the project's δ cap, and each recorded sensitivity, system cost and
   history prefix matches the recomputation; a release extends the ledger head it was assessed on; an
   answer inferred from a partition release kept out of the history names an earlier such release, and
   (flat prior) its estimate is that release's, recomputed.
5. Every decided request has exactly one deciding entry and the matching status; the current source
   binding is the one the last ``rebind`` entry (or the genesis) records.
6. Watched claims (:mod:`dpdesk.store.watch`): every release recorded while claims are watched spent
   the crossing risk it records on each claim it touches — recomputed here from public inputs — and
   none was released past a claim's remaining risk.
7. Optionally, the ledger still extends ledger heads someone holds (``--extends HASH``): a ledger
   rewritten and consistently re-chained passes 1–6 but not this.
8. Requests (format 10): every decided request is, as stored, what its deciding entry recorded (a
   digest of its requester, kind, text, coefficients, terms and time), or for an older entry what the
   migration's ``requests`` entry recorded.
9. The receipt log (:mod:`dpdesk.store.receipts`): the file still holds, at its place, every head this
   machine recorded or handed out — so a file cut back to an older head, with ``ledger_head`` fixed, fails.
10. Batch plans (format 9): every measurement that names a recorded plan is that plan's next one, as
   the plan recorded it, and of the newest plan — so no measurement of a resumed batch is bought twice.
The first problem found names the entry (``entry 7: …``).

Besides problems, the report says what a file of format 7 or older still *exposes* of the raw data
(``exposes``): its unkeyed source bindings — in the genesis, in rebind entries, in the current binding —
hold the source's plain hash, row count and out-of-domain count (store/binding.py). The hash chain
covers them, so they stay; they are not problems, and ``ok`` does not depend on them.

:func:`verify` reads only an :class:`AuditRecord`: the project file's contents exactly as stored,
which :meth:`Project.audit_record <dpdesk.store.project.Project.audit_record>` gathers.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dpdesk.engine.budget.mode import ZcdpAccounting, accounting_from_json
from dpdesk.engine.errors import Cancelled, DpdeskError
from dpdesk.engine.kinds.settings import Settings
from dpdesk.engine.registry import kind_of_mechanism, request_entry_kinds
from dpdesk.engine.registry import kinds as release_kinds
from dpdesk.engine.schema import Schema
from dpdesk.store import ledger
from dpdesk.store import view as view_module
from dpdesk.store.assessing import snapshot_of
from dpdesk.store.binding import exposes
from dpdesk.store.canonical import genesis_hash
from dpdesk.store.ledger import LedgerEntry, RawRow, thaw
from dpdesk.store.receipts import Receipt
from dpdesk.store.verify_release import Bad, _check_release
from dpdesk.store.view import LedgerView, MalformedEntry, mechanism_of
from dpdesk.store.vouched import Batches, check_receipts, check_requests
from dpdesk.store.watch import gate, same_risks

_REPORT_EVERY = 16  # entries replayed between progress reports and cancel checks
_CHAIN_SHARE = 0.15  # of verify's time: hashing the chain (the replay after it is the rest)


@dataclass(frozen=True)
class AuditRecord:
    """What a project file holds, read as stored and not yet checked: all that :func:`verify` reads."""

    settings: dict[str, Any]  # the fixed settings as stored now (name, budget, schema, …)
    schema: Schema  # ``settings["schema"]`` as the project reads it
    genesis: str  # the genesis hash stored beside them
    rows: tuple[RawRow, ...]  # every ledger row in sequence order
    head: tuple[int, str] | None  # the ``ledger_head`` row (seq, hash)
    statuses: dict[str, str]  # request id -> status
    source: dict[str, Any]  # the current source binding's identity
    requests: dict[str, str] = field(default_factory=dict)  # request id -> digest of the row as stored


@dataclass(frozen=True)
class VerifyReport:
    """The outcome of :func:`verify`. ``ok`` only if every check held."""

    ok: bool
    entries: int
    fresh: int
    inferred: int
    rejected: int
    rebinds: int
    system_cost: float | None  # recomputed from the ledger (None if the chain broke first)
    total_budget: float
    head_hash: str | None
    problems: tuple[str, ...]
    first_bad_seq: int | None  # the first ledger entry that failed, if an entry failed
    delta_spent: float | None = (
        None  # the largest per-cell δ of releases charged in (α, δ) (0 while all are pure)
    )
    delta_cap: float = 0.0  # the project's δ cap (0: pure α-DP releases only)
    kinds: tuple[tuple[str, int], ...] = ()  # (entry kind, how many), for every kind present
    exposes: tuple[str, ...] = ()  # what the file shows of the raw data besides releases (format 7 and older)
    receipts: int = 0  # heads from this machine's receipt log the file was checked against
    # zCDP accounting (None: pure ε): then system_cost and total_budget are per-cell ρ, stated as ε below
    accounting: ZcdpAccounting | None = None

    @property
    def epsilon_spent(self) -> float | None:
        """The system cost as the privacy loss ε it states (under zCDP converted at the project's δ)."""
        if self.system_cost is None or self.accounting is None:
            return self.system_cost
        return self.accounting.epsilon_of(self.system_cost)

    @property
    def remaining(self) -> float | None:
        return None if self.system_cost is None else self.total_budget - self.system_cost

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "entries": self.entries,
            "fresh": self.fresh,
            "inferred": self.inferred,
            "rejected": self.rejected,
            "rebinds": self.rebinds,
            "system_cost": self.system_cost,
            "total_budget": self.total_budget,
            "remaining": self.remaining,
            "head_hash": self.head_hash,
            "problems": list(self.problems),
            "first_bad_seq": self.first_bad_seq,
            "delta_spent": self.delta_spent,
            "delta_cap": self.delta_cap,
            "kinds": dict(self.kinds),
            "exposes": list(self.exposes),
            "receipts": self.receipts,
        } | (
            {}
            if self.accounting is None
            else {
                "accounting": self.accounting.to_json(),
                "epsilon_total": self.accounting.epsilon,
                "epsilon_spent": self.epsilon_spent,
            }
        )


def _check_recomputed(e: LedgerEntry, view: LedgerView, settings: Settings, bad: Bad) -> None:
    """What the entry released, recomputed by its kind from the public inputs before it (a zero-cost
    estimate: the released answers before it at its recorded τ and table size)."""
    kind = kind_of_mechanism(mechanism_of(e).name)
    if not kind.recomputes:
        return
    p = thaw(e.payload)
    with view.assessing() as s:
        if "history_prefix" in p and len(s.history) != p["history_prefix"]:
            return  # reported with the release (history_prefix)
        problem = kind.recompute(p, snapshot_of(s, view, settings, 0.0))
    if problem is not None:
        bad(e.seq, f"entry {e.seq}: {problem}")


def _check_claims(e: LedgerEntry, view: LedgerView, bad: Bad) -> None:
    """The risk a release spent on each watched claim, recomputed from public inputs before it (the
    history's structure, the release's rows, the claim, the basis's declared table size): it is what
    the entry records, and no claim was spent past its budget."""
    if not view.claims and "claims" not in e.payload:
        return
    c = mechanism_of(e).contribution(thaw(e.payload), view.schema.shape)
    size = ((e.payload.get("basis") or {}).get("settings") or {}).get("table_size")
    with view.assessing() as s:
        checks = gate(
            s.claims,
            s.history,
            [(r.query, r.alpha, r.family) for r in c.rows],
            charge=c.charge,
            needs_data=bool(c.rows) or bool(c.charge.terms),
            structured=bool(s.structured),
            row_limit=view_module.HISTORY_ROW_LIMIT,
            table_size=None if size is None else float(size),
        )
    differs = same_risks(e.payload.get("claims"), checks)
    if differs is not None:
        bad(e.seq, f"entry {e.seq}: {differs} (recomputed from public inputs)")
    for w, chk in checks:
        if not chk.allowed:
            bad(e.seq, f"entry {e.seq}: released although watched claim {w.id} declines it ({chk.reason})")


def verify(
    record: AuditRecord,
    extends: Sequence[str] = (),
    *,
    receipts: Sequence[Receipt] = (),
    progress: Callable[[float], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> VerifyReport:
    """Check everything the module docstring lists; every problem found is in the report.

    ``extends`` are ledger heads someone holds (a release's witness): each must be an entry of the
    verified chain (or its genesis), else the ledger was rewritten since that release. ``receipts`` are the
    heads this machine recorded or handed out (:mod:`dpdesk.store.receipts`): the file must still hold
    each one at its place, else it is behind a head it once had, or was rewritten. ``progress(f)``
    hears the fraction of entries replayed (the long part: a long ledger takes minutes); ``cancelled()``
    is asked as often, and :class:`~dpdesk.engine.errors.Cancelled` raised when it says so.
    """
    audit = _Audit(record)
    if genesis_hash(record.settings) != record.genesis:
        audit.bad(
            None,
            "project settings (name, total budget, δ cap, schema, test flag or initial source) were changed "
            "after creation: they no longer match the ledger's genesis hash",
        )
    entries, chain_problem = audit.chain(progress, cancelled)
    binding = audit.replay(entries, progress, cancelled)
    if chain_problem is None:
        check_receipts(entries, receipts, audit.bad)
    for witness in extends:
        if witness != record.genesis and witness not in {e.hash for e in entries}:
            audit.bad(
                None,
                f"the ledger does not extend the head {witness[:16]}… a release was given (entries changed or "
                f"removed since, or another ledger)",
            )
    if chain_problem is None:
        if record.source != binding:
            audit.bad(
                None,
                "the source binding differs from the one recorded in the ledger (changed without a rebind)",
            )
        audit.statuses(entries)
        check_requests(entries, record.requests, audit.bad)
    return audit.report(entries, intact=chain_problem is None, receipts=len(receipts))


class _Audit:
    """One verification's record of problems (sorted by the entry they name) and what it replayed."""

    def __init__(self, record: AuditRecord) -> None:
        self.record = record
        self.found: list[tuple[float, int, str]] = []
        declared = float(record.settings["total_budget"])
        self.delta_cap = float(record.settings.get("delta_cap", 0.0))  # absent: a pure project (δ cap 0)
        # absent: pure ε; a zCDP project's per-cell totals are in ρ, its budget the ρ its (ε, δ) allows
        self.accounting = accounting_from_json(record.settings.get("accounting"), declared)
        self.total = declared if self.accounting is None else self.accounting.budget
        self.settings = Settings(declared) if self.accounting is None else Settings.zcdp(self.accounting)
        # from the raw entries, never a cached one
        self.view = LedgerView(record.schema, record.genesis, self.accounting)
        self.counts: Counter[str] = Counter()
        self.decided: dict[str, int] = {}
        self.batches = Batches()

    def bad(self, seq: int | None, message: str) -> None:
        self.found.append((math.inf if seq is None else seq, len(self.found), message))

    def chain(
        self, progress: Callable[[float], None] | None, cancelled: Callable[[], bool] | None
    ) -> tuple[list[ledger.LedgerEntry], str | None]:
        """The entries that chain from the genesis, and the first break (None: intact); the head row."""
        rows = self.record.rows
        entries, problem = ledger.check_chain(
            rows,
            self.record.genesis,
            cancelled=cancelled,
            progress=None if progress is None else lambda f: progress(_CHAIN_SHARE * f),
        )
        if problem is not None:
            at = len(entries)
            self.bad(at + 1 if not rows or not isinstance(rows[at].seq, int) else rows[at].seq, problem)
            return entries, problem
        head, last = self.record.head, (entries[-1].seq, entries[-1].hash) if entries else None
        if head is not None and (last is None or head[0] > last[0]):
            missing = 1 if last is None else last[0] + 1
            self.bad(
                missing,
                f"entry {missing}: missing — the ledger head records entry {head[0]} but the ledger "
                f"ends at {last[0] if last else 'no entry'} (entries deleted by hand)",
            )
        elif (tuple(head) if head else None) != last:
            self.bad(
                None if last is None else last[0],
                f"entry {last[0] if last else '-'}: the ledger head records "
                f"{'entry ' + str(head[0]) if head else 'no entry'} (entries appended or the head edited by hand)",
            )
        return entries, None

    def replay(
        self,
        entries: Sequence[ledger.LedgerEntry],
        progress: Callable[[float], None] | None,
        cancelled: Callable[[], bool] | None,
    ) -> Any:
        """Every entry through a fresh ledger view, each release checked; returns the binding the
        ledger's rebinds lead to."""
        binding = self.record.settings["initial_source"]
        for i, e in enumerate(entries):
            if i % _REPORT_EVERY == 0:
                if cancelled is not None and cancelled():
                    raise Cancelled("verify cancelled")
                if progress is not None:
                    progress(_CHAIN_SHARE + (1 - _CHAIN_SHARE) * i / len(entries))
            self.counts[e.kind] += 1
            self._decides(e)
            try:
                binding = self._entry(e, binding)
            except MalformedEntry as exc:
                self.bad(e.seq, str(exc))
            except (KeyError, TypeError, ValueError, DpdeskError) as exc:
                self.bad(e.seq, f"entry {e.seq}: malformed {e.kind} payload ({exc})")
        return binding

    def _decides(self, e: ledger.LedgerEntry) -> None:
        where = f"entry {e.seq}"
        if e.request_id is None and e.kind in request_entry_kinds():
            self.bad(e.seq, f"{where}: a {e.kind} entry without a request id")
        if e.request_id is not None:
            if e.request_id in self.decided:
                self.bad(
                    e.seq,
                    f"{where}: request {e.request_id!r} already decided by entry {self.decided[e.request_id]}",
                )
            self.decided.setdefault(e.request_id, e.seq)

    def _entry(self, e: ledger.LedgerEntry, binding: Any) -> Any:
        view = self.view
        self.batches.check(e, self.bad)
        if e.kind in release_kinds():
            _check_claims(e, view, self.bad)
            _check_recomputed(e, view, self.settings, self.bad)
        viewed = view.add(e)
        if viewed is not None:
            _check_release(viewed, view, self.total, self.delta_cap, self.bad)
        elif e.kind == "rebind":
            if thaw(e.payload["previous"]) != binding:
                self.bad(e.seq, f"entry {e.seq}: rebinds from a source that was not the bound one")
            binding = thaw(e.payload["current"])
        return binding

    def statuses(self, entries: Sequence[ledger.LedgerEntry]) -> None:
        """Every decided request has its deciding entry and the matching status, and no other one."""
        statuses = self.record.statuses
        for e in entries:
            if e.request_id is None:
                continue
            want = "rejected" if e.kind == "rejected" else "answered"
            if statuses.get(e.request_id) != want:
                self.bad(
                    e.seq,
                    f"entry {e.seq}: request {e.request_id!r} is {statuses.get(e.request_id, 'missing')!r}, "
                    f"expected {want!r}",
                )
        for rid, status in statuses.items():
            if status != "pending" and rid not in self.decided:
                self.bad(None, f"request {rid!r} is {status} but no ledger entry decides it")

    def report(self, entries: Sequence[ledger.LedgerEntry], intact: bool, receipts: int) -> VerifyReport:
        found, counts, view = sorted(self.found), self.counts, self.view
        problems = [m for _, _, m in found]
        return VerifyReport(
            ok=not problems,
            entries=len(self.record.rows),
            fresh=counts["fresh"],
            inferred=counts["inferred"],
            rejected=counts["rejected"],
            rebinds=counts["rebind"],
            system_cost=view.system_cost if intact else None,
            total_budget=self.total,
            accounting=self.accounting,
            head_hash=entries[-1].hash if entries and intact else None,
            problems=tuple(problems),
            first_bad_seq=int(found[0][0]) if found and found[0][0] != math.inf else None,
            delta_spent=view.delta_spent if intact else None,
            delta_cap=self.delta_cap,
            kinds=tuple(sorted(counts.items())),
            exposes=_exposures(self.record, entries),
            receipts=receipts,
        )


def _exposures(record: AuditRecord, entries: Sequence[ledger.LedgerEntry]) -> tuple[str, ...]:
    """What the file's unkeyed source bindings (format 7 and older) show of the data, where."""
    out = []
    initial = exposes(record.settings.get("initial_source") or {})
    if initial:
        out.append(f"the initial source binding (covered by the genesis hash) holds {', '.join(initial)}")
    rebinds = [
        e.seq
        for e in entries
        if e.kind == "rebind"
        and any(exposes(thaw(e.payload.get(k)) or {}) for k in ("previous", "current") if k in e.payload)
    ]
    if rebinds:
        out.append(
            f"rebind entr{'y' if len(rebinds) == 1 else 'ies'} {', '.join(map(str, rebinds))} hold the same of "
            "the bindings they replaced or made"
        )
    current = exposes(record.source)
    if current:
        out.append(
            f"the current source binding holds {', '.join(current)} "
            "(`dpdesk project rebind` replaces it with a keyed fingerprint)"
        )
    return tuple(out)
