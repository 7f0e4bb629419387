"""Posteriors of histories mixing Gaussian and Laplace rows: exact to their stated bound, and calibrated.

1. Exactness: the mass of ``[−w, w]`` under ``Σ_k A_k N_k`` for sums mixing continuous and discrete
   Laplace and Gaussian terms, on one lattice and off it, against references written out here —
   discrete terms enumerated atom by atom (their masses from ``exp`` sums normalised with ``fsum``), the
   continuous part by the closed-form distribution function of a Gaussian, a Laplace, or their
   convolution (the normal–Laplace law, Reed & Jorgensen 2004):
   ``F(x) = Φ(x/s) − ½e^{s²/(2c²)}[e^{−x/c} Φ(x/s − s/c) − e^{x/c} Φ(−x/s − s/c)]``.
2. Fixed-truth coverage: with a flat prior ``θ̂ − θ = A·N``, so ``[θ̂ − w, θ̂ + w]`` covers the truth
   exactly when ``|A·N| ≤ w`` and its coverage equals its claimed mass. Random box histories over a
   fixed cube, each row's family drawn among Laplace and Gaussian ones, are run through the engine once
   with real noise; more draws of the same structure (the interval depends on public inputs only) come
   from samplers written here (a discrete Gaussian by inverse CDF over its enumerated masses). The hit
   rate must be within 4 binomial standard deviations of the mean claimed mass (a correct engine fails a
   check with probability < 1e-4; seeds are fixed, so the outcome is deterministic).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from stats_helpers import random_box, within_binomial

from dpdesk.engine.answering.fresh import true_answer
from dpdesk.engine.answering.workflow import Request, assess
from dpdesk.engine.cube import Cube
from dpdesk.engine.errors import QueryError
from dpdesk.engine.inference.history import History, HistoryRow
from dpdesk.engine.inference.posterior import posterior
from dpdesk.engine.mechanisms.noise import SeededSampler
from dpdesk.engine.queries.query import Query, Term
from dpdesk.engine.schema import Schema

# -- references ---------------------------------------------------------------------------------


def _phi(x: np.ndarray) -> np.ndarray:
    return 0.5 * np.vectorize(math.erfc, otypes=[float])(-np.asarray(x, dtype=float) / math.sqrt(2))


def _continuous_cdf(x: np.ndarray, gauss_var: float, laplace: float) -> np.ndarray:
    """``Pr(G + L ≤ x)`` for ``G ~ N(0, gauss_var)`` and ``L ~ Laplace(laplace)`` (either may be absent)."""
    x = np.asarray(x, dtype=float)
    if laplace == 0:
        return _phi(x / math.sqrt(gauss_var)) if gauss_var else (x >= 0).astype(float)
    c = laplace
    if gauss_var == 0:
        return np.where(x < 0, 0.5 * np.exp(np.minimum(x, 0) / c), 1 - 0.5 * np.exp(-np.maximum(x, 0) / c))
    s = math.sqrt(gauss_var)
    k = math.exp(s * s / (2 * c * c))
    return _phi(x / s) - 0.5 * k * (
        np.exp(-x / c) * _phi(x / s - s / c) - np.exp(x / c) * _phi(-x / s - s / c)
    )


def _lattice_masses(family: str, b: float) -> tuple[np.ndarray, np.ndarray]:
    """A discrete noise's integers carrying mass above e^-800 and their masses."""
    reach = int(40 * b) + 40 if family == "discrete_gaussian" else int(800 * b) + 2
    k = np.arange(-reach, reach + 1, dtype=float)
    w = np.exp(-k * k / (2 * b * b)) if family == "discrete_gaussian" else np.exp(-np.abs(k) / b)
    return k, w / math.fsum(w)


def _reference(A, b, families, w) -> float:
    """``Pr(|Σ A_k N_k| ≤ w)``: discrete atoms listed, the continuous part in closed form."""
    values, weights = np.zeros(1), np.ones(1)
    gauss_var, laplace = 0.0, []
    for a, s, f in zip(A, b, families):
        if f == "gaussian":
            gauss_var += (a * s) ** 2
        elif f == "laplace":
            laplace.append(abs(a) * s)
        else:
            k, m = _lattice_masses(f, s)
            values = (values[:, None] + a * k[None, :]).ravel()
            weights = (weights[:, None] * m[None, :]).ravel()
            keep = weights > 1e-24
            values, weights = values[keep], weights[keep]
    assert len(laplace) <= 1
    c = laplace[0] if laplace else 0.0
    if gauss_var == 0 and c == 0:
        return float(weights[np.abs(values) <= w * (1 + 1e-12)].sum())
    return float(
        np.dot(
            weights, _continuous_cdf(w - values, gauss_var, c) - _continuous_cdf(-w - values, gauss_var, c)
        )
    )


def test_the_normal_laplace_reference_is_the_convolution():
    """The closed form against a direct numerical convolution (trapezoid rule, step h = 5e-4, the Laplace
    kink on a node: error ≤ h²/12 · |jump of the integrand's slope| ≤ 2.1e-8 · ½ · ¼ < 1e-8)."""
    y = np.linspace(-60, 60, 240_001)
    lap = np.exp(-np.abs(y) / 2.0) / 4.0
    for x in (-3.0, 0.0, 1.7, 6.0):
        direct = float(np.trapezoid(lap * _phi((x - y) / 1.5), y))
        assert _continuous_cdf(np.array([x]), 1.5**2, 2.0)[0] == pytest.approx(direct, abs=1e-8)


SUMS = {
    "gaussian": ([1.0], [2.0], ["gaussian"], 2.0),
    "gaussian+laplace": ([0.7, -0.5], [3.0, 2.0], ["gaussian", "laplace"], 2.5),
    "gaussian+discrete laplace off lattice": ([1.0, 0.37], [0.4, 5.0], ["gaussian", "discrete_laplace"], 2.5),
    "discrete gaussians on a lattice": ([1.0, 2.0], [1.5, 0.8], ["discrete_gaussian"] * 2, 2.0),
    "discrete gaussian+discrete laplace off lattice": (
        [1.0, 0.37],
        [1.5, 3.0],
        ["discrete_gaussian", "discrete_laplace"],
        2.0,
    ),
    "discrete gaussian+narrow gaussian": ([1.0, 0.6], [2.5, 0.3], ["discrete_gaussian", "gaussian"], 2.0),
    "all four": (
        [1.0, 0.37, -0.5, 0.8],
        [1.5, 3.0, 1.0, 2.0],
        ["discrete_gaussian", "discrete_laplace", "gaussian", "laplace"],
        3.0,
    ),
}


@pytest.mark.parametrize("name", list(SUMS))
@pytest.mark.parametrize("method", ["fft", "direct"])
def test_mass_is_exact_to_the_stated_bound(name, method):
    A, b, families, w = SUMS[name]
    truth = _reference(A, b, families, w)
    post = posterior(0.0, A, b, families, method=method, align=w)
    got = post.prob_between(-w, w)
    # every method's reading is within its stated bound (a bracketed one reads a lower bound)
    assert truth - post.error_bound - 1e-12 <= got <= truth + post.error_bound + 1e-12, (
        post.method,
        got,
        truth,
    )
    if post.method in ("fft", "atoms"):
        assert post.error_bound < 1e-8
    std = math.sqrt(post.std**2)
    assert std == pytest.approx(
        math.sqrt(sum((a * s) ** 2 * _var(f, s) for a, s, f in zip(A, b, families))), rel=1e-9
    )


def _var(family: str, b: float) -> float:
    if family == "laplace":
        return 2.0
    if family == "gaussian":
        return 1.0
    k, m = _lattice_masses(family, b)
    return math.fsum(k * k * m) / (b * b)


@pytest.mark.parametrize("name", ["gaussian+laplace", "all four"])
def test_monte_carlo_agrees_within_its_bound(name):
    A, b, families, w = SUMS[name]
    post = posterior(0.0, A, b, families, method="mc", rng=11, samples=200_000)
    assert abs(post.prob_between(-w, w) - _reference(A, b, families, w)) <= post.error_bound


def test_a_credible_interval_of_gaussian_and_laplace_rows_holds_its_mass():
    A, b, families, _ = SUMS["all four"]
    post = posterior(0.0, A, b, families)
    for delta in (0.5, 0.1, 0.01):
        iv = post.interval(delta)
        assert _reference(A, b, families, iv.high) >= 1 - delta - post.error_bound
        assert iv.low == pytest.approx(-iv.high)


# -- fixed-truth coverage ------------------------------------------------------------------------

SCHEMA = Schema.from_dict(
    {
        "attributes": [
            {"name": "a", "column": "a", "kind": "categorical", "values": ["p", "q", "r", "s"]},
            {"name": "b", "column": "b", "kind": "numeric", "edges": [0, 10, 20, 40, 80]},
        ]
    }
)
COUNTS = np.array([[5, 40, 12, 0], [80, 33, 2, 19], [7, 7, 150, 61], [0, 1, 3, 26]])
CUBE = Cube(SCHEMA, COUNTS)


def _draws(rng: np.random.Generator, family: str, b: float, size: int) -> np.ndarray:
    """Noise draws written here, independent of the engine's samplers."""
    if family == "laplace":
        return rng.laplace(0.0, b, size)
    if family == "gaussian":
        return rng.normal(0.0, b, size)
    if family == "discrete_laplace":
        p = -math.expm1(-1.0 / b)
        return (rng.geometric(p, size) - rng.geometric(p, size)).astype(float)
    k, m = _lattice_masses(family, b)
    cum = np.cumsum(m)
    return k[np.minimum(np.searchsorted(cum, rng.random(size) * cum[-1]), k.size - 1)]


def _simulate(rng, families, structures, draws_per_structure, delta):
    """Per simulated error: (claimed interval mass, hit, claimed mass at ±ε, hit at ±ε)."""
    sampler = SeededSampler(int(rng.integers(2**31)))
    out, made = [], 0
    while made < structures:
        rows = [random_box(rng, SCHEMA.shape) for _ in range(int(rng.integers(2, 6)))]
        fams = [str(rng.choice(families)) for _ in rows]
        alphas = rng.uniform(0.05, 0.6, size=len(rows))
        coefs = rng.integers(-1, 2, size=len(rows))
        coefs[0] = 1
        try:
            target = Query(
                SCHEMA.shape,
                terms=tuple(Term(c * t.weight, t.factors) for c, r in zip(coefs, rows) if c for t in r.terms),
            )
        except QueryError:  # the combination cancelled out
            continue
        made += 1
        theta = true_answer(target, CUBE)
        eps = float(rng.uniform(2, 40))
        scales = np.array([q.sensitivity / a for q, a in zip(rows, alphas)])
        first = np.array([sampler.release(f, 0, s) for f, s in zip(fams, scales)])  # the noise alone (θ = 0)
        h = History(SCHEMA.shape)
        for q, a, f, n in zip(rows, alphas, fams, first):
            h.append(HistoryRow(q, float(a), true_answer(q, CUBE) + float(n), f))
        a = assess(h, Request("t", target, eps=eps, delta=delta), 100.0, cell_costs=np.zeros(SCHEMA.n_cells))
        A = np.asarray(a.estimate.coefficients)
        assert a.estimate.estimate - theta == pytest.approx(float(A @ first), abs=1e-9 * (1 + abs(theta)))
        w = a.interval[1] - a.estimate.estimate
        more = np.stack([_draws(rng, f, s, draws_per_structure - 1) for f, s in zip(fams, scales)], axis=1)
        for err in np.concatenate([[A @ first], more @ A]):
            out.append((a.interval_confidence, abs(err) <= w, a.confidence_at_eps, abs(err) <= eps))
    return out


@pytest.mark.calibration
@pytest.mark.parametrize(
    "families,delta",
    [
        (("laplace", "gaussian"), 0.1),
        (("discrete_laplace", "discrete_gaussian"), 0.2),
        (("laplace", "discrete_laplace", "gaussian", "discrete_gaussian"), 0.05),
    ],
    ids=["continuous", "discrete", "all-four"],
)
def test_intervals_over_mixed_histories_cover_as_claimed(families, delta):
    rng = np.random.default_rng(3700 + len(families) + int(100 * delta))
    res = _simulate(rng, families, structures=30, draws_per_structure=250, delta=delta)
    claimed = [r[0] for r in res]
    assert min(claimed) >= 1 - delta - 1e-9
    within_binomial([r[1] for r in res], claimed)
    within_binomial([r[3] for r in res], [r[2] for r in res])
