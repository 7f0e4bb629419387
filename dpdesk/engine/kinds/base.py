"""The kind protocol: one release kind, as its home gives it to the registry (docs/architecture.md).

A **release kind** (a count, a max/argmax, a posterior of proportions, …) is one object, an instance of
a :class:`ReleaseKind` subclass defined in the kind's home (``engine/<home>/kind.py``) and listed once
in :data:`dpdesk.engine.registry.KINDS`. It owns, and the store and the front ends only ask it:

* its **mechanisms** — each with its privacy map on a recorded entry
  (:meth:`~dpdesk.engine.mechanisms.base.Mechanism.contribution`: the per-cell charge, per release, in
  the mechanism's own measure; accounting, not the kind, adds charges over releases and turns per-cell
  totals into the system cost);
* its **request reader** — how a request's text names it (:attr:`head`) and :meth:`read`, which checks a
  request completely at zero cost, so a queued request can always be planned;
* its **plan** — :meth:`plan` prices and decides a release from public inputs only, one frozen moment of
  the ledger (:class:`~dpdesk.engine.kinds.snapshot.LedgerSnapshot`), into a
  :class:`~dpdesk.engine.mechanisms.base.ReleasePlan` that ``Project.release`` records exactly;
* its **wording** — what the command line and the app say before the curator confirms and after the
  release (:meth:`report`, :meth:`preview`, :meth:`question`, :meth:`outcome`, the JSON forms);
* its **verify recomputation** — :meth:`recompute`, what an entry released re-derived from the public
  inputs before it (most kinds have nothing beyond the privacy map to recompute).

The defaults below are what a kind that does not override them does.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar

from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.mechanisms.base import Mechanism, ReleasePlan
from dpdesk.engine.queries.query import Query
from dpdesk.engine.schema import Schema

if TYPE_CHECKING:
    from dpdesk.engine.kinds.snapshot import LedgerSnapshot

__all__ = [
    "AdHoc",
    "Asked",
    "ClaimOffer",
    "ClaimVerdict",
    "Kind",
    "Read",
    "Recorded",
    "RecordedEntry",
    "ReleaseKind",
    "cost_text",
    "terms_text",
]


@dataclass(frozen=True)
class Read:
    """A request checked by its kind's reader: the cells it reads and what it states besides its text."""

    kind: str
    text: str | None
    cells: Query  # a count's coefficients, another kind's box: what "who asked about these cells" reads
    eps: float | None
    delta: float | None
    alpha: float | None


class Asked(Protocol):
    """What a plan is asked for: a queued request (the store's ``StoredRequest``) or :class:`AdHoc`."""

    @property
    def id(self) -> str | None: ...
    @property
    def kind(self) -> str: ...
    @property
    def query_text(self) -> str | None: ...
    @property
    def query(self) -> Query | None: ...
    @property
    def eps(self) -> float | None: ...
    @property
    def delta(self) -> float | None: ...
    @property
    def alpha(self) -> float | None: ...
    @property
    def requester(self) -> str: ...


@dataclass(frozen=True)
class AdHoc:
    """A release asked for on the spot (``dpdesk answer --query``, a dialog): not in the queue."""

    kind: str
    query_text: str | None = None
    query: Query | None = None
    eps: float | None = None
    delta: float | None = None
    alpha: float | None = None
    requester: str = ""
    id: str | None = None


class RecordedEntry(Protocol):
    """A ledger entry as the store reads it back (``dpdesk.store.ledger.LedgerEntry``)."""

    @property
    def seq(self) -> int: ...
    @property
    def payload(self) -> Mapping[str, Any]: ...
    def shown(self) -> str: ...
    def shown_interval(self) -> str: ...


class ClaimVerdict(Protocol):
    """A watched claim's check of a plan, as the store reports it (``dpdesk.store.watching.ClaimStatus``)."""

    @property
    def verdict(self) -> str: ...
    @property
    def largest_alpha(self) -> float | None: ...


class ClaimOffer(Protocol):
    """What a kind offers instead when watched claims decline its plan (a count's ``CounterOffer``): the α
    that passes them, and the ±ε at δ it buys (None: no fresh answer passes)."""

    @property
    def eps(self) -> float | None: ...
    @property
    def delta(self) -> float: ...
    @property
    def alpha(self) -> float: ...


class Recorded(Protocol):
    """A release as the store returns it once recorded (``dpdesk.store.release.Release``)."""

    @property
    def kind(self) -> str: ...
    @property
    def entry(self) -> RecordedEntry: ...
    @property
    def witness(self) -> str: ...
    def to_json(self) -> dict[str, Any]: ...


def terms_text(kind: str, eps: float | None, delta: float | None, alpha: float | None) -> str:
    """What a request states besides its text, in words (``±50 at 95 %``; ``ε = 0.5``; ``—``)."""
    from dpdesk.engine.vocabulary import terms_text as words

    return words(kind, eps, delta, alpha)


def cost_text(plan: ReleasePlan) -> str:
    """What every charged cell of a box-shaped plan pays: ``ε = 0.5`` (and ``δ = 1e-07`` for an (ε, δ) one)."""
    alpha = getattr(plan, "per_cell_alpha", None)  # what a kind states itself (a mean: α_S + α_C)
    if alpha is None:
        alpha = sum(t.scale for t in plan.charge.terms)  # one 0/1 box term: the α of each of its cells
    return f"ε = {alpha:.6g}" + (f" and δ = {plan.charge.delta:.3g}" if plan.charge.delta else "")


P = TypeVar("P", bound=ReleasePlan)


class ReleaseKind(Generic[P]):
    """One release kind (see the module docstring), generic in its plan type ``P``. Subclasses set the
    class attributes and override what their kind does; an instance is registered once in
    :data:`dpdesk.engine.registry.KINDS`."""

    name: ClassVar[str]  # registry key; a queued request's kind
    label: ClassVar[str]  # the curator's words for it ("max / argmax")
    mechanisms: tuple[Mechanism, ...] = ()  # every mechanism its entries may name (their privacy maps)
    head: ClassVar[re.Pattern[str] | None] = None  # how a request's text names it (None: no text form)
    example: ClassVar[str | None] = None  # a request's text, as the curator would type it
    queueable: ClassVar[bool] = False  # requests of this kind wait in the queue
    on_the_spot: ClassVar[bool] = False  # its text may be asked without queueing (``--query``)
    answers_requests: ClassVar[bool] = False  # every entry it records answers a queued request
    unconfirmed: ClassVar[str] = "not released (not confirmed)"  # said when the curator says no
    previewed: ClassVar[str] = "nothing was spent (preview only)"  # said after a preview
    recomputes: ClassVar[bool] = False  # verify asks :meth:`recompute` of its entries
    takes: ClassVar[frozenset[str]] = frozenset()  # the options its :meth:`plan` reads (besides ``method``)
    preview_decides: ClassVar[bool] = False  # its preview states a decision, which a claim's decline replaces

    # -- the request reader ---------------------------------------------------------------------
    def claims(self, text: object) -> bool:
        """Whether a request's text (or coefficients) asks for this kind."""
        return self.head is not None and isinstance(text, str) and self.head.match(text) is not None

    def read(
        self, schema: Schema, text: object, eps: float | None, delta: float | None, alpha: float | None
    ) -> Read:
        """Check a request completely (every check :meth:`plan` makes, at zero cost), in one line."""
        raise DpdeskError(f"a {self.label} is not queued as a request")

    def terms(self, eps: float | None, delta: float | None, alpha: float | None) -> str:
        """What a request states besides its text, in words."""
        return terms_text(self.name, eps, delta, alpha)

    # -- the plan ---------------------------------------------------------------------------------
    def plan(self, asked: Asked, snapshot: LedgerSnapshot, **options: Any) -> P:
        """The release plan of ``asked`` against one moment of the ledger (public inputs only). Options a
        kind does not take are ignored (a front end passes the same ones to every kind)."""
        raise DpdeskError(f"a {self.label} is planned by its own command, not as a request")

    # -- wording (the command line and the app say the same) ----------------------------------------
    def heading(self, asked: Asked, describe: str) -> str:
        """The first line about a queued request (``describe``: its query as the queue shows it)."""
        return f"request {asked.id}: {describe}  ({self.label}; {self.terms(asked.eps, asked.delta, asked.alpha)})"

    def preview(self, plan: P) -> list[str]:
        """The plan in words, before the curator confirms (the last line says when it cannot be released)."""
        return [plan.reason]

    def report(self, plan: P, heading: str | None = None, declined: Sequence[str] = ()) -> list[str]:
        """What ``dpdesk assess`` shows of the plan (nothing is spent); ``declined``: the watched claims
        that decline it, whose verdict is then its decision."""
        lines = ([heading] if heading else []) + self.preview(plan)
        return lines + ([f"decision: declined by claim {', '.join(declined)}"] if declined else [])

    def claim_offer(self, plan: P, statuses: Sequence[ClaimVerdict]) -> ClaimOffer | None:
        """What the kind offers instead when watched claims decline the plan (``statuses``: the claims'
        checks, each with ``verdict`` and ``largest_alpha``); None by default, or when none declines it."""
        return None

    def offer_lines(self, plan: P, offer: ClaimOffer | None, path: str) -> list[str]:
        """The :meth:`claim_offer` in words, each with the edit that accepts it (``path``: the project)."""
        return []

    def spend_words(self, plan: P) -> tuple[str, str, list[str]]:
        """What the app's spend confirmation names: the release, what it costs, notes beside them."""
        return f"{plan.request_id} ({self.label})", f"{cost_text(plan)} on every cell of its box", []

    def question(self, plan: P) -> str:
        """The y/N question before the release."""
        return f"release it, each cell of its box paying {cost_text(plan)}?"

    def outcome(self, release: Recorded, plan: P, path: str = "PROJECT") -> list[str]:
        """What was released, in words (shown only once it is recorded; ``path``: the project file)."""
        return [f"released: {release.kind} (ledger entry {release.entry.seq})"]

    def plan_json(self, plan: P, **options: Any) -> dict[str, Any]:
        """The plan as plain JSON (``--json``)."""
        to_json = getattr(plan, "to_json", None)
        return (
            dict(to_json()) if to_json is not None else {"reason": plan.reason, "releasable": plan.releasable}
        )

    def release_json(self, release: Recorded) -> dict[str, Any]:
        """The recorded release as plain JSON (``--json``)."""
        return release.to_json()

    # -- verify --------------------------------------------------------------------------------------
    def recompute(self, payload: Mapping[str, Any], snapshot: LedgerSnapshot) -> str | None:
        """What a recorded entry released, recomputed from the public inputs before it: a problem in one
        line (without the ``entry N:`` prefix), or None when it agrees or there is nothing to recompute."""
        return None

    def __repr__(self) -> str:
        return f"<release kind {self.name}>"


Kind = ReleaseKind[Any]  # a registered kind, whatever its plan type (what the registry holds)
