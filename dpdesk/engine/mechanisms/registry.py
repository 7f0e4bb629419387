"""The noise families of counts and the posterior methods, each listed once.

The engine, argparse choices and the GUI read these tables; nothing else lists families or methods,
and nothing switches on their names. A new noise family for counts goes into :data:`NOISE_FAMILIES`,
in order of preference (:func:`family_for` picks the first that applies). Release kinds and their
mechanisms are listed in :mod:`dpdesk.engine.registry`.
"""

from __future__ import annotations

from collections.abc import Mapping

from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.mechanisms.gaussian import DISCRETE_GAUSSIAN, GAUSSIAN
from dpdesk.engine.mechanisms.laplace import DISCRETE_LAPLACE, LAPLACE, NoiseMechanism
from dpdesk.engine.queries.query import Query

__all__ = [
    "NOISE_FAMILIES",
    "POSTERIOR_METHODS",
    "check_method",
    "family_for",
    "method_names",
    "noise_family",
    "noise_family_names",
]

# Noise for a fresh count, most preferred first: exact integer noise whenever the query allows it. Laplace
# applies to every query, so the Gaussian families (priced in ρ-zCDP) are never picked by default: a
# project accounted in zCDP names them (engine/budget/zcdp.py).
NOISE_FAMILIES: tuple[NoiseMechanism, ...] = (DISCRETE_LAPLACE, LAPLACE, DISCRETE_GAUSSIAN, GAUSSIAN)

# Posterior methods (paper §4), the default first, with what the curator is told about each.
POSTERIOR_METHODS: Mapping[str, str] = {
    "fft": "characteristic function, exact up to a stated bound (default)",
    "direct": "direct convolution: truncated per-row masses convolved, with a stated error bound",
    "mc": "Monte Carlo: sampled, so its error bound holds with probability 0.999 (seeded; the seed is recorded)",
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


def family_for(query: Query, measure: str = "epsilon") -> NoiseMechanism:
    """The preferred noise family that can answer ``query`` and is priced in ``measure`` (the project's
    unit: discrete Laplace for integer coefficients in pure ε, the discrete Gaussian in ρ)."""
    return next(f for f in NOISE_FAMILIES if f.measure == measure and f.applies_to(query))
