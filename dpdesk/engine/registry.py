"""The one registry of release kinds and ledger decisions: every table of kinds is read off it.

:data:`KINDS` lists every release kind once (a request's text is matched against their heads; the
count reads whatever no other kind names). Each is its home's ``KIND`` object
(:class:`~dpdesk.engine.kinds.base.ReleaseKind`); adding a kind is its home plus one line here.
:data:`DECISIONS` lists the ledger entries that release nothing. Derived here, and nowhere else:
the mechanisms by the name an entry records (:func:`mechanism`), the kind that made an entry
(:func:`kind_of_mechanism`), the entry kinds of releases and decisions, the entries that must answer a
request, the claims' entries, the kinds a queued request can be and which text names which.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache, lru_cache

from dpdesk.engine.answering.kind import COUNT
from dpdesk.engine.dirichlet.kind import POSTERIOR
from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.estimates.kind import ESTIMATE, SYNTHETIC
from dpdesk.engine.kinds.base import Kind, Read
from dpdesk.engine.mechanisms.base import Mechanism
from dpdesk.engine.partition.kind import PARTITION_KIND
from dpdesk.engine.planning.kind import MEASUREMENT
from dpdesk.engine.schema import Schema
from dpdesk.engine.selection.kind import SELECTION
from dpdesk.engine.sums.kind import MEAN

__all__ = [
    "DECISIONS",
    "KINDS",
    "MECHANISMS",
    "Decision",
    "claim_kinds",
    "decision_kinds",
    "entry_kinds",
    "kind",
    "kind_of_mechanism",
    "kind_of_text",
    "kinds",
    "mechanism",
    "queueable",
    "read_request",
    "request_entry_kinds",
]

KINDS: tuple[Kind, ...] = (
    COUNT,
    POSTERIOR,
    PARTITION_KIND,
    SELECTION,
    ESTIMATE,
    SYNTHETIC,
    MEASUREMENT,
    MEAN,
)


@dataclass(frozen=True)
class Decision:
    """A ledger entry that releases nothing (its payload is the store's to read)."""

    name: str  # the entry kind
    label: str
    decides_request: bool = False  # it decides a queued request (a refusal)
    claims: bool = False  # it adds or removes a watched claim (store/watch.py)


DECISIONS: tuple[Decision, ...] = (
    Decision("rejected", "request refused", decides_request=True),
    Decision("rebind", "source re-bound"),
    Decision("watch", "claim watched", claims=True),
    Decision("unwatch", "claim unwatched", claims=True),
    Decision("batch", "batch plan recorded"),  # before its first measurement (store/batch.py, format 9)
    Decision("requests", "digests of the requests decided before format 10"),  # (store/db.py)
)


@dataclass(frozen=True)
class _Tables:
    """Everything derived from one tuple of kinds (recomputed only when :data:`KINDS` is another tuple)."""

    owners: dict[str, tuple[Mechanism, Kind]]  # mechanism name -> (mechanism, its kind)
    kinds: tuple[str, ...]  # the ledger entry kinds of releases, in registry order
    request_entries: tuple[str, ...]  # entries that always decide a queued request


@lru_cache(maxsize=4)
def _tables(kinds: tuple[Kind, ...]) -> _Tables:
    owners = {m.name: (m, k) for k in kinds for m in k.mechanisms}
    released = (m.kind for k in kinds if k.answers_requests for m in k.mechanisms)
    return _Tables(
        owners,
        tuple(dict.fromkeys(m.kind for m, _ in owners.values())),
        (*dict.fromkeys(released), *(d.name for d in DECISIONS if d.decides_request)),
    )


class _Mechanisms(Mapping[str, Mechanism]):
    """Every mechanism a ledger entry may name, by the name it records (read off :data:`KINDS`)."""

    def __getitem__(self, name: str) -> Mechanism:
        return _tables(KINDS).owners[name][0]

    def __iter__(self) -> Iterator[str]:
        return iter(_tables(KINDS).owners)

    def __len__(self) -> int:
        return len(_tables(KINDS).owners)


MECHANISMS: Mapping[str, Mechanism] = _Mechanisms()


def kind(name: str) -> Kind:
    """The release kind ``name`` (a queued request's kind)."""
    for k in KINDS:
        if k.name == name:
            return k
    raise DpdeskError(f"unknown request kind {name!r} (known: {', '.join(k.name for k in KINDS)})")


def queueable() -> tuple[Kind, ...]:
    """The kinds a queued request can be, in matching order."""
    return tuple(k for k in KINDS if k.queueable)


def kind_of_text(text: object) -> Kind:
    """The kind a request's text (or coefficients) asks for: the first whose head names it, else a count."""
    return next((k for k in KINDS if k.claims(text)), COUNT)


def read_request(
    schema: Schema, text: object, eps: float | None, delta: float | None, alpha: float | None
) -> Read:
    """Check a request of any kind completely; every problem is one line naming it."""
    if alpha is not None and not alpha > 0:
        raise DpdeskError(f"alpha ({alpha:g}) must be positive")
    return kind_of_text(text).read(schema, text, eps, delta, alpha)


def mechanism(name: str) -> Mechanism:
    """The registered mechanism ``name`` (as recorded in ledger entries)."""
    try:
        return MECHANISMS[name]
    except (KeyError, TypeError):
        raise DpdeskError(f"unknown mechanism {name!r} (known: {', '.join(MECHANISMS)})") from None


def kind_of_mechanism(name: str) -> Kind:
    """The release kind whose mechanism ``name`` made an entry."""
    mechanism(name)
    return _tables(KINDS).owners[name][1]


def kinds() -> tuple[str, ...]:
    """The ledger entry kinds releases are recorded as (one per mechanism kind, in registry order)."""
    return _tables(KINDS).kinds


@cache
def decision_kinds() -> tuple[str, ...]:
    return tuple(d.name for d in DECISIONS)


def entry_kinds() -> tuple[str, ...]:
    """Every kind a ledger entry may have: the releases' and the decisions'."""
    return (*kinds(), *decision_kinds())


@cache
def claim_kinds() -> tuple[str, ...]:
    """The entries that add or remove a watched claim."""
    return tuple(d.name for d in DECISIONS if d.claims)


def request_entry_kinds() -> tuple[str, ...]:
    """The entries that always decide a queued request (they must name it)."""
    return _tables(KINDS).request_entries
