"""The one registry of release kinds: every mechanism a ledger entry may name, by the name it records.

The ledger view, verify, the ledger's entry kinds and the front ends read it; nothing else lists
mechanisms or release kinds.
"""

from __future__ import annotations

from collections.abc import Mapping

from dpdesk.engine.dirichlet.privacy_map import POSTERIOR_MECHANISMS
from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.mechanisms.base import Mechanism
from dpdesk.engine.mechanisms.postprocessing import INFERENCE, SHRINKAGE_ESTIMATE, SYNTHETIC_TABLE
from dpdesk.engine.mechanisms.registry import NOISE_FAMILIES
from dpdesk.engine.partition.privacy_map import PARTITION
from dpdesk.engine.planning.privacy_map import MEASUREMENTS
from dpdesk.engine.selection.mechanism import REPORT_NOISY_MAX

__all__ = ["MECHANISMS", "kinds", "mechanism"]

_ALL: tuple[Mechanism, ...] = (
    *NOISE_FAMILIES,
    INFERENCE,
    *POSTERIOR_MECHANISMS,
    PARTITION,
    REPORT_NOISY_MAX,
    SHRINKAGE_ESTIMATE,
    SYNTHETIC_TABLE,
    *MEASUREMENTS.values(),
)
MECHANISMS: Mapping[str, Mechanism] = {m.name: m for m in _ALL}


def mechanism(name: str) -> Mechanism:
    """The registered mechanism ``name`` (as recorded in ledger entries)."""
    try:
        return MECHANISMS[name]
    except (KeyError, TypeError):
        raise DpdeskError(f"unknown mechanism {name!r} (known: {', '.join(MECHANISMS)})") from None


def kinds() -> tuple[str, ...]:
    """The ledger entry kinds releases are recorded as (one per mechanism kind, in registry order)."""
    return tuple(dict.fromkeys(m.kind for m in MECHANISMS.values()))
