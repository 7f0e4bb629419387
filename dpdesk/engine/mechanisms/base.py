"""The release protocol: what every release kind provides to the one release path.

A **mechanism** (after OpenDP's measurements, which pair a computation with its privacy map) is a small
object registered once in :mod:`dpdesk.engine.mechanisms.registry`. The ledger records its ``name`` in
every entry it makes, and everything derived from the ledger asks it, never a family string:

* :meth:`Mechanism.contribution` — the privacy map applied to a recorded entry: its per-cell
  :class:`~dpdesk.engine.mechanisms.charge.Charge`, the noisy linear rows it adds to the history the
  BLUE uses (none for non-linear releases), and the values it released.

A **release plan** (:class:`ReleasePlan`) is one priced, decided release computed from public inputs
only — a count's :class:`~dpdesk.engine.answering.workflow.Assessment`, or a plan of another kind. The
store's ``Project.release(plan)`` checks that the plan's :class:`Basis` (ledger head, settings) is still
the project's, then records exactly the plan: ``record()`` (known before any data is touched) plus
``draw(cube, sampler)`` (the noisy values; the only step that reads the data). It never re-decides.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol, runtime_checkable

from dpdesk.engine.errors import BudgetError
from dpdesk.engine.mechanisms.charge import Charge
from dpdesk.engine.queries.query import Query

__all__ = ["Basis", "Contribution", "Mechanism", "NoisyRow", "ReleasePlan", "check_requirement", "meets"]

# Computed posterior masses carry rounding of ~1e-12, and a fresh budget is built to reach exactly 1 − δ:
# a mass within this slack of 1 − δ meets the requirement (so a request asked again is answered free).
DECISION_SLACK = 1e-9


def meets(confidence: float | None, delta: float) -> bool:
    """Whether posterior mass ``confidence`` on ``[estimate − ε, estimate + ε]`` meets ``1 − δ``.

    The one definition of "meets (ε, δ)": inference, fusion and the spend policy all decide with it.
    """
    return confidence is not None and confidence >= 1.0 - delta - DECISION_SLACK


def check_requirement(eps: float, delta: float) -> None:
    """Raise a one-line BudgetError unless ε > 0 and δ ∈ (0, 1): an accuracy requirement
    ``Pr(|answer − θ| ≤ ε) ≥ 1 − δ``."""
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not math.isfinite(eps) or eps <= 0:
        raise BudgetError(f"eps ({eps!r}) must be a positive finite number")
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not 0 < delta < 1:
        raise BudgetError(f"delta ({delta!r}) must be strictly between 0 and 1")


class NoisyRow(NamedTuple):
    """One released noisy linear answer ``answer = Q·x + N`` with ``N`` of ``family`` at scale ``S/α``."""

    query: Query
    alpha: float
    answer: float
    family: str  # the registered noise family's name


@dataclass(frozen=True)
class Contribution:
    """What one recorded release adds to the ledger view (re-derived from the entry, never trusted)."""

    charge: Charge
    rows: tuple[NoisyRow, ...] = ()  # linear rows for the history's BLUE
    values: tuple[float, ...] = ()  # the released values, in the entry's order


@runtime_checkable
class Mechanism(Protocol):
    """A registered release mechanism. See the module docstring and docs/architecture.md."""

    @property
    def name(self) -> str:
        """Registry key, recorded as the ledger entry's "mechanism"."""
        ...

    @property
    def kind(self) -> str:
        """The ledger entry kind its releases are recorded as ("fresh", "inferred", ...)."""
        ...

    @property
    def label(self) -> str:
        """How the curator reads it ("discrete Laplace noise", "inference from history")."""
        ...

    def contribution(self, payload: Mapping[str, Any], shape: tuple[int, ...]) -> Contribution:
        """Its privacy map and rows for a release recorded with ``payload`` (plain JSON)."""
        ...


@dataclass(frozen=True)
class Basis:
    """What an assessment was computed from; a release is refused unless the project still has it.

    ``ledger_head`` is the hash of the newest ledger entry (the project's genesis hash for an empty
    ledger; None for an assessment made outside a project), ``settings`` the public answering settings
    it used (total budget, spend policy, prior), ``method`` the posterior method and ``seed`` the seed of
    any randomness it used (Monte Carlo inference; None when it used none).
    """

    ledger_head: str | None = None
    ledger_seq: int = 0
    settings: Mapping[str, Any] = field(default_factory=dict)
    method: str | None = None
    seed: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "ledger_head": self.ledger_head,
            "ledger_seq": self.ledger_seq,
            "settings": dict(self.settings),
            "method": self.method,
            "seed": self.seed,
        }


@runtime_checkable
class ReleasePlan(Protocol):
    """A priced, decided release, computed from public inputs only; recorded exactly as it is."""

    # (read-only members: the plans are frozen dataclasses and properties)
    @property
    def mechanism(self) -> Mechanism:
        """Whose privacy map prices it; its ``kind`` labels the ledger entry."""
        ...

    @property
    def request_id(self) -> str | None:
        """The queued request it answers (None: released on the curator's own initiative)."""
        ...

    @property
    def releasable(self) -> bool:
        """False for a refusal: nothing can be recorded."""
        ...

    @property
    def reason(self) -> str:
        """One line for the curator."""
        ...

    @property
    def charge(self) -> Charge:
        """What it costs each cell (``Charge()`` for post-processing)."""
        ...

    @property
    def basis(self) -> Basis:
        """What it was computed from."""
        ...

    @property
    def needs_data(self) -> bool:
        """True when ``draw`` reads the cube (noisy releases); False for post-processing."""
        ...

    def record(self) -> dict[str, Any]:
        """The ledger payload members fixed before any data is touched (parameters, decision details).

        Must hold everything :meth:`Mechanism.contribution` reads, except what :meth:`draw` adds.
        """
        ...

    def draw(self, cube: Any, sampler: Any, *, allow_insecure: bool = False) -> dict[str, Any]:
        """The payload members drawn from the data with the vetted ``sampler`` (``{}`` when
        ``needs_data`` is False). Never shown before the store has recorded them. ``allow_insecure``:
        a test project may draw from the seeded simulation sampler; any other is refused."""
        ...
