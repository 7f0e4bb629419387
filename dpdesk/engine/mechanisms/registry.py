"""The one registry of release mechanisms, noise families and posterior methods.

The engine, the store, argparse choices and the GUI all read these tables; nothing else lists
families or methods, and nothing switches on their names. A new release kind adds its mechanism
object to :data:`MECHANISMS` (one line); a new noise family for counts also goes into
:data:`NOISE_FAMILIES`, in order of preference (:func:`family_for` picks the first that applies).
"""

from __future__ import annotations

from collections.abc import Mapping

from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.mechanisms.base import Mechanism
from dpdesk.engine.mechanisms.laplace import DISCRETE_LAPLACE, LAPLACE, NoiseMechanism
from dpdesk.engine.mechanisms.measurement import MEASUREMENTS
from dpdesk.engine.mechanisms.partition import PARTITION
from dpdesk.engine.mechanisms.posterior import POSTERIOR_MECHANISMS
from dpdesk.engine.mechanisms.postprocessing import INFERENCE, SHRINKAGE_ESTIMATE, SYNTHETIC_TABLE
from dpdesk.engine.mechanisms.selection import REPORT_NOISY_MAX
from dpdesk.engine.queries.query import Query

__all__ = [
    "MECHANISMS",
    "NOISE_FAMILIES",
    "POSTERIOR_METHODS",
    "check_method",
    "family_for",
    "kinds",
    "mechanism",
    "method_names",
    "noise_family",
    "noise_family_names",
]

# Noise for a fresh count, most preferred first: exact integer noise whenever the query allows it.
NOISE_FAMILIES: tuple[NoiseMechanism, ...] = (DISCRETE_LAPLACE, LAPLACE)

# Every mechanism a ledger entry may name, by the name it records.
MECHANISMS: Mapping[str, Mechanism] = {
    m.name: m
    for m in (
        *NOISE_FAMILIES,
        INFERENCE,
        *POSTERIOR_MECHANISMS,
        PARTITION,
        REPORT_NOISY_MAX,
        SHRINKAGE_ESTIMATE,
        SYNTHETIC_TABLE,
        *MEASUREMENTS.values(),
    )
}

# Posterior methods (paper §4), the default first, with what the curator is told about each.
POSTERIOR_METHODS: Mapping[str, str] = {
    "fft": "characteristic function, exact up to a stated bound (default)",
    "direct": "paper Algorithm 2: truncated per-row masses convolved, with a stated error bound",
    "mc": "Monte Carlo, paper Algorithm 1: sampled, so its error bound holds with probability 0.999 (seeded; "
    "the seed is recorded)",
}


def method_names() -> tuple[str, ...]:
    """The posterior methods' names, the default first (argparse ``choices``, the GUI's menu)."""
    return tuple(POSTERIOR_METHODS)


def check_method(method: str) -> str:
    """``method`` if it is a posterior method, else a one-line error naming the choices."""
    if method not in POSTERIOR_METHODS:
        raise DpdeskError(f"method ({method!r}) must be one of {', '.join(POSTERIOR_METHODS)}")
    return method


def noise_family_names() -> tuple[str, ...]:
    return tuple(f.name for f in NOISE_FAMILIES)


def noise_family(family: str | NoiseMechanism) -> NoiseMechanism:
    """The noise family named ``family`` (a family object is returned as it is)."""
    if isinstance(family, NoiseMechanism):
        return family
    for f in NOISE_FAMILIES:
        if f.name == family:
            return f
    raise DpdeskError(f"noise family ({family!r}) must be one of {', '.join(noise_family_names())}")


def family_for(query: Query) -> NoiseMechanism:
    """The preferred noise family that can answer ``query`` (discrete Laplace for integer coefficients)."""
    return next(f for f in NOISE_FAMILIES if f.applies_to(query))


def mechanism(name: str) -> Mechanism:
    """The registered mechanism ``name`` (as recorded in ledger entries)."""
    try:
        return MECHANISMS[name]
    except (KeyError, TypeError):
        raise DpdeskError(f"unknown mechanism {name!r} (known: {', '.join(MECHANISMS)})") from None


def kinds() -> tuple[str, ...]:
    """The ledger entry kinds releases are recorded as (one per mechanism kind, in registry order)."""
    return tuple(dict.fromkeys(m.kind for m in MECHANISMS.values()))
