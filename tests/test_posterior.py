"""Tests for dpdesk.engine.inference.posterior: the three methods against exact references, intervals, probabilities.

References are independent of the module: the partial-fraction closed form (distinct continuous
scales), the exact discrete Laplace pmf and its convolutions, and numpy's own samplers.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpdesk.engine.errors import Cancelled, DpdeskError
from dpdesk.engine.inference.posterior import posterior

# ------------------------------------------------------------------ references


def partial_fraction_weights(scales):
    """``w_k = Π_{j≠k} c_k²/(c_k² − c_j²)``: the partial fractions of ``Π 1/(1 + c_k² t²)`` (DESIGN §1).

    Numerically unstable when scales are close: a reference for tests, not a method.
    """
    c = np.asarray(scales, float)
    assert np.all(c > 0) and np.unique(c).size == c.size, "scales must be positive and distinct"
    c2 = c**2
    d = c2[:, None] - c2[None, :]
    np.fill_diagonal(d, 1.0)
    r = c2[:, None] / d
    np.fill_diagonal(r, 1.0)
    return c, r.prod(axis=1)


def closed_form_density(z, scales):
    """Density of ``Σ_k X_k``, ``X_k ~ Laplace(c_k)`` with distinct ``c_k``: ``Σ_k w_k e^{−|z|/c_k}/(2 c_k)``."""
    c, w = partial_fraction_weights(scales)
    z = np.abs(np.asarray(z, dtype=float))[..., None]
    return np.sum(w * np.exp(-z / c) / (2 * c), axis=-1)


def oracle_cdf(x, scales):
    """CDF of a sum of Laplace(c_k), distinct c_k, from the partial-fraction weights."""
    c, w = partial_fraction_weights(scales)
    x = np.asarray(x, float)[..., None]
    upper = 0.5 * np.sum(w * np.exp(-np.abs(x) / c), axis=-1)
    return np.where(x[..., 0] >= 0, 1 - upper, upper)


def l1_to_oracle(post, scales):
    """Σ|mass − exact bin mass| plus the exact mass off the grid (twice the TV distance)."""
    z = post.grid - post.center
    exact = oracle_cdf(z + post.spacing / 2, scales) - oracle_cdf(z - post.spacing / 2, scales)
    return float(np.abs(post.mass - exact).sum() + (1 - exact.sum()))


def discrete_laplace_pmf(k, b):
    p = math.exp(-1 / b)
    return (1 - p) / (1 + p) * p ** np.abs(k)


def sample_sum(A, b, fams, n, rng):
    """Draws of Σ A_k N_k with numpy's samplers (independent of the module's own sampler)."""
    s = np.zeros(n)
    for a, bk, f in zip(A, b, fams):
        if f == "laplace":
            s += a * rng.laplace(0, bk, n)
        else:
            p = math.exp(-1 / bk)
            s += a * (rng.geometric(1 - p, n) - rng.geometric(1 - p, n))
    return s


# distinct scales from 1e-3 to 1e4, at least 25% apart so the oracle's weights stay well conditioned
@st.composite
def distinct_scales(draw, max_terms=5):
    m = draw(st.integers(1, max_terms))
    logs = draw(st.lists(st.floats(math.log(1e-3), math.log(1e4)), min_size=m, max_size=m))
    logs = sorted(logs)
    for i in range(1, m):
        logs[i] = max(logs[i], logs[i - 1] + math.log(1.25))
    return [math.exp(v) for v in logs]


# ------------------------------------------------------------------ fft against the oracle


@settings(max_examples=60, deadline=None, derandomize=True)
@given(scales=distinct_scales(), center=st.floats(-1e4, 1e4), data=st.data())
def test_fft_matches_closed_form_within_1e_8(scales, center, data):
    # split each scale c_k = |A_k| b_k into a signed coefficient and a noise scale
    A = np.array([data.draw(st.sampled_from([-3.0, -1.0, -0.25, 0.5, 1.0, 2.0])) for _ in scales])
    b = np.array(scales) / np.abs(A)
    post = posterior(center, A, b)
    err = l1_to_oracle(post, scales)
    assert err <= 1e-8
    assert err <= post.error_bound + 1e-11  # the rigorous bound holds (oracle rounding aside)
    # the bound is conservative: with scales 10⁴ apart the refinement stops a little above 1e-8
    assert post.error_bound <= 1e-7
    assert 100 <= post.grid.size <= 5000


def test_fft_single_laplace_is_exact_bin_masses():
    post = posterior(3.0, [1.0], [2.0])
    assert l1_to_oracle(post, [2.0]) < 1e-9


def test_zero_coefficients_are_dropped_and_signs_do_not_matter():
    a = posterior(1.0, [0.5, 0.0, -2.0], [2.0, 7.0, 1.0])
    b = posterior(1.0, [-0.5, 2.0], [2.0, 1.0])
    np.testing.assert_array_equal(a.grid, b.grid)
    np.testing.assert_allclose(a.mass, b.mass, atol=1e-15)


def test_no_noise_is_a_point_mass():
    post = posterior(7.5, [0.0, 0.0], [1.0, 2.0])
    assert post.std == 0 and post.lattice
    ci = post.interval(0.01)
    assert (ci.low, ci.high, ci.confidence) == (7.5, 7.5, 1.0)


# ------------------------------------------------------------------ direct and mc against the oracle


@pytest.mark.parametrize("scales", [[1.0], [2.0, 0.7], [30.0, 12.0, 5.0], [5.0, 1e-3]])
def test_direct_matches_closed_form_within_its_bound(scales):
    post = posterior(0.0, np.ones(len(scales)), scales, method="direct", gamma=1e-6)
    err = l1_to_oracle(post, scales)
    assert err <= post.error_bound
    assert post.error_bound < 1e-3  # the estimate is small enough to be useful


@pytest.mark.parametrize("scales", [[1.0, 0.3], [40.0, 25.0, 3.0]])
def test_mc_matches_closed_form_within_monte_carlo_error(scales):
    post = posterior(
        0.0, np.ones(len(scales)), scales, method="mc", samples=200_000, rng=np.random.default_rng(1)
    )
    # error_bound is twice the Dvoretzky–Kiefer–Wolfowitz radius at risk 1e-3: every bin edge's
    # cumulative mass lies within half of it of the exact CDF (fails with probability ≤ 1e-3)
    edges = post.grid - post.center + post.spacing / 2
    assert np.max(np.abs(np.cumsum(post.mass) - oracle_cdf(edges, scales))) <= post.error_bound / 2
    assert post.error_bound == pytest.approx(2 * math.sqrt(math.log(2e3) / 4e5))


def test_mc_sample_size_follows_corollary_4_1_with_floor():
    calls = []
    post = posterior(
        0.0, [1.0], [1.0], method="mc", gamma=0.5, rng=np.random.default_rng(2), progress=calls.append
    )
    # with γ = 0.5 the bound |u|/γ² max(u)(1-max(u)) is far below the 10⁴ floor
    assert post.method == "mc" and calls[-1] == 1.0
    counts = post.mass * 10_000  # exactly the floor of 10⁴ samples were histogrammed
    np.testing.assert_allclose(counts, np.round(counts), atol=1e-9)
    assert 1 - post.mass.sum() <= 0.5 / 4 + 4 / math.sqrt(10_000)  # only the dropped tail is missing


# ------------------------------------------------------------------ lattice (discrete Laplace)


def test_lattice_one_component_is_the_discrete_laplace_pmf():
    post = posterior(10.0, [1.0], [3.0], "discrete_laplace")
    assert post.lattice and post.spacing == 1.0
    k = post.grid - 10.0
    np.testing.assert_array_equal(k, np.round(k))
    ref = discrete_laplace_pmf(k, 3.0)
    np.testing.assert_allclose(post.mass, ref, rtol=0, atol=1e-14)
    assert np.abs(post.mass - ref).sum() + (1 - ref.sum()) <= post.error_bound < 1e-9


def test_lattice_two_components_is_their_convolution():
    post = posterior(0.0, [1.0, -2.0], [3.0, 1.5], "discrete_laplace")
    k1 = np.arange(-200, 201)
    k2 = np.arange(-200, 201)
    p1 = discrete_laplace_pmf(k1, 3.0)
    p2 = np.zeros(801)
    p2[::2] = discrete_laplace_pmf(k2, 1.5)  # 2·N on the even integers -400..400
    conv = np.convolve(p1, p2)  # support -600..600
    ref = conv[600 + post.grid.astype(int)]
    np.testing.assert_allclose(post.mass, ref, rtol=0, atol=1e-14)
    assert np.abs(post.mass - ref).sum() + (1 - ref.sum()) <= post.error_bound
    for method in ("direct",):
        other = posterior(0.0, [1.0, -2.0], [3.0, 1.5], "discrete_laplace", method=method)
        np.testing.assert_allclose(other.mass, ref, rtol=0, atol=1e-9)


def test_lattice_step_for_common_fractional_coefficients():
    post = posterior(0.0, [0.5, 1.5], [2.0, 2.0], "discrete_laplace")
    assert post.lattice and post.spacing == 0.5
    assert abs(post.mass.sum() - 1) < 1e-9
    ci = post.interval(0.1)
    assert ci.confidence >= 0.9 and (ci.high / 0.5) == round(ci.high / 0.5)


@pytest.mark.parametrize(
    "A,b,fams",
    [
        (
            [0.48, 0.36, -0.03, 0.5, -0.5, 0.26, 0.07, 0.24],
            [20, 10, 20, 10, 10, 40, 40, 10],
            "discrete_laplace",
        ),
        ([0.3, -0.7], [5.0, 2.0], "discrete_laplace"),
        ([math.sqrt(2) / 3, -math.pi / 5, math.e / 7], [6.0, 3.0, 9.0], "discrete_laplace"),
        ([1.0, 0.37], [4.0, 3.0], ["laplace", "discrete_laplace"]),
    ],
)
def test_discrete_non_integer_coefficients_agree_with_monte_carlo(A, b, fams):
    # the first two sit on a fine lattice (steps 0.01 and 0.1: exact), the last two do not
    post = posterior(0.0, A, b, fams)
    fams = [fams] * len(A) if isinstance(fams, str) else fams
    n = 400_000
    s = np.sort(sample_sum(A, b, fams, n, np.random.default_rng(3)))
    for q in (0.05, 0.2, 0.5, 0.8, 0.95):
        x = float(np.quantile(s, q)) + 0.37 * post.spacing  # off the bin edges
        empirical = np.searchsorted(s, x, side="right") / n
        if post.lattice:  # x is off the lattice, so cdf is exact there
            assert abs(post.cdf(x) - empirical) <= 5 * math.sqrt(empirical * (1 - empirical) / n) + 1e-9
            continue
        sd = math.sqrt(empirical * (1 - empirical) / n)
        # a CDF read inside a bin is interpolated: allow the mass of that bin
        j = np.clip(np.searchsorted(post.grid, x), 1, post.grid.size - 1)
        slack = max(post.mass[j], post.mass[j - 1])
        assert abs(post.cdf(x) - empirical) <= 5 * sd + slack + post.error_bound


# ------------------------------------------------------------------ std


@pytest.mark.parametrize("fams", ["laplace", "discrete_laplace"])
def test_std_matches_sample_std(fams):
    rng = np.random.default_rng(4)
    A, b = rng.normal(size=6), rng.uniform(0.5, 5, size=6)
    post = posterior(0.0, A, b, fams)
    n = 400_000
    s = sample_sum(A, b, [fams] * 6, n, rng)
    # sd of the sample std ≈ std·sqrt((kurtosis − 1)/(4n)); Laplace-type sums have kurtosis ≤ 6
    assert abs(s.std() - post.std) <= 5 * post.std * math.sqrt(5 / (4 * n))


# ------------------------------------------------------------------ intervals and probabilities


def test_single_laplace_interval_matches_theorem_5_3():
    for b, delta in [(1.0, 0.05), (20.0, 0.01), (0.01, 0.2)]:
        post = posterior(5.0, [1.0], [b])
        ci = post.interval(delta)
        half = b * math.log(1 / delta)
        assert abs((ci.high - ci.low) / 2 - half) <= post.spacing
        assert 1 - math.exp(-(ci.high - 5.0) / b) >= 1 - delta - 1e-12  # the true mass suffices
        assert ci.confidence >= 1 - delta


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(scales=distinct_scales(4), delta=st.floats(1e-4, 0.5), discrete=st.booleans())
def test_interval_holds_one_minus_delta_and_is_narrowest(scales, delta, discrete):
    fam = "discrete_laplace" if discrete else "laplace"
    post = posterior(1.5, np.ones(len(scales)), np.array(scales) + 0.5, fam)
    ci = post.interval(delta)
    assert ci.confidence >= 1 - delta
    assert ci.low <= post.center <= ci.high
    assert abs((ci.high - post.center) - (post.center - ci.low)) <= 1e-9 * (1 + post.std)
    assert post.central_mass(ci.high - post.center) == pytest.approx(ci.confidence, abs=1e-12)
    # the reported confidence never overstates the (interpolated) mass of the interval
    assert post.prob_between(ci.low, ci.high) >= ci.confidence - 1e-6
    # shrinking by one bin (one lattice step) on each side loses the required mass
    w = ci.high - post.center - post.spacing
    if w >= 0:
        assert post.central_mass(w) < 1 - delta


@settings(max_examples=40, deadline=None, derandomize=True)
@given(x=st.floats(-30, 30), y=st.floats(-30, 30), discrete=st.booleans())
def test_probabilities_are_consistent_with_the_cdf(x, y, discrete):
    fam = "discrete_laplace" if discrete else "laplace"
    post = posterior(0.0, [1.0, 2.0], [3.0, 1.0], fam)
    lo, hi = min(x, y), max(x, y)
    assert post.prob_between(lo, hi) == pytest.approx(post.cdf(hi) - post.prob_less(lo), abs=1e-14)
    assert post.prob_less(x) <= post.cdf(x) + 1e-15
    assert post.cdf(x) + post.prob_greater(x) == pytest.approx(post.total, abs=1e-14)
    # symmetry about the centre
    assert post.prob_greater(abs(x)) == pytest.approx(post.prob_less(-abs(x)), abs=1e-12)
    if not discrete:
        assert post.prob_less(x) == post.cdf(x)


def test_narrow_and_wide_posteriors_get_reasonable_grids():
    for b in (1e-4, 1.0, 1e5):
        post = posterior(0.0, [1.0, 0.5], [b, b])
        assert 100 <= post.grid.size <= 5000
        assert post.interval(0.05).high > 0


# ------------------------------------------------------------------ values, callbacks, validation


def test_posterior_is_frozen_and_read_only():
    post = posterior(0.0, [1.0], [1.0])
    with pytest.raises(dataclasses.FrozenInstanceError):
        post.center = 1.0  # type: ignore[misc]
    with pytest.raises(ValueError):
        post.mass[0] = 1.0
    with pytest.raises(ValueError):
        post.grid[0] = 1.0


@pytest.mark.parametrize("method", ["mc", "direct", "fft"])
def test_cancel_raises_cancelled(method):
    with pytest.raises(Cancelled):
        posterior(
            0.0, np.ones(40), np.linspace(1, 5, 40), method=method, samples=100_000, cancelled=lambda: True
        )


def test_progress_is_reported_for_direct():
    seen = []
    posterior(0.0, np.ones(40), np.linspace(1, 5, 40), method="direct", progress=seen.append)
    assert seen and seen[-1] == 1.0 and all(0 <= f <= 1 for f in seen)


@pytest.mark.parametrize(
    "kwargs,name",
    [
        (dict(noise_scales=[1.0, -2.0]), "noise_scales[1]"),
        (dict(noise_scales=[1.0, 0.0]), "noise_scales[1]"),
        (dict(coefficients=[1.0, float("nan")]), "coefficients[1]"),
        (dict(center=float("nan")), "center"),
        (dict(noise_scales=[1.0]), "noise_scales"),
        (dict(families=["laplace", "gauss"]), "families[1]"),
        (dict(method="exact"), "method"),
        (dict(gamma=0.0), "gamma"),
        (dict(samples=0, method="mc"), "samples"),
    ],
)
def test_bad_arguments_name_themselves(kwargs, name):
    args = dict(center=0.0, coefficients=[1.0, 2.0], noise_scales=[1.0, 2.0])
    args.update(kwargs)
    with pytest.raises(ValueError, match=name.replace("[", r"\[").replace("]", r"\]")):
        posterior(**args)


@pytest.mark.parametrize("delta", [0.0, 1.0, -0.1, float("nan"), 2.0])
def test_bad_delta_is_rejected(delta):
    with pytest.raises(DpdeskError, match="delta"):
        posterior(0.0, [1.0], [1.0]).interval(delta)


def test_the_reference_density_integrates_to_one_matches_one_laplace_and_its_cdf():
    # checks the oracle the methods are measured against, by quadrature and by one Laplace's formula
    z = np.linspace(-200, 200, 400_001)
    dens = closed_form_density(z, [3.0, 1.0, 0.5])
    assert abs(np.trapezoid(dens, z) - 1) < 1e-6
    np.testing.assert_allclose(closed_form_density(z[:5], [2.0]), np.exp(-np.abs(z[:5]) / 2) / 4)
    inside = (z >= -5 - 1e-9) & (z <= 7 + 1e-9)  # the grid holds both ends
    assert oracle_cdf(7.0, [3.0, 1.0, 0.5]) - oracle_cdf(-5.0, [3.0, 1.0, 0.5]) == pytest.approx(
        np.trapezoid(dens[inside], z[inside]), abs=1e-6
    )


def test_many_components_run_and_keep_the_exact_std():
    rng = np.random.default_rng(5)
    A, b = rng.normal(size=5000), rng.uniform(1, 20, size=5000)
    post = posterior(0.0, A, b)
    assert post.std == pytest.approx(math.sqrt(np.sum(2 * (A * b) ** 2)), rel=1e-12)
    assert post.error_bound <= 1e-9
    assert post.interval(0.05).confidence >= 0.95


def test_a_window_tiny_against_the_spread_keeps_the_grid_modest():
    # ±0.5 against a spread of ~10⁸ (a barely estimable query): aligning bins to ±ε would take ~10¹⁰
    # points; the mass of ±ε is read from the ordinary grid instead, and it is tiny, as it must be
    post = posterior(0.0, np.array([1.0, 0.3]), np.array([1.0e8, 2.0]), align=0.5)
    assert post.grid.size <= 64_001
    exact_bound = 1.0 / 1.0e8  # a Laplace(b) density never exceeds 1/(2b): mass of a width-1 window ≤ 1/(2b)
    assert post.central_mass(0.5) <= exact_bound + post.error_bound


def test_each_rows_family_is_read_once_per_distinct_family():
    """posterior's terms look each distinct family up once: every row's lattice and Gaussian flags as the
    registry gives them row by row, for names and family objects alike; the first unknown row named."""
    from dpdesk.engine.inference.posterior import _terms
    from dpdesk.engine.mechanisms.registry import NOISE_FAMILIES, noise_family

    rng = np.random.default_rng(5)
    names = [f.name for f in NOISE_FAMILIES]
    for fams in (
        ["laplace"] * 7,
        [names[i] for i in rng.integers(0, len(names), 40)],
        [NOISE_FAMILIES[i] for i in rng.integers(0, len(names), 12)],
        [names[0], NOISE_FAMILIES[1], names[2], NOISE_FAMILIES[0], names[0]],
    ):
        _, _, lattice, gaussian = _terms(np.ones(len(fams)), np.ones(len(fams)), fams)
        assert lattice.tolist() == [noise_family(f).lattice for f in fams]
        assert gaussian.tolist() == [noise_family(f).gaussian for f in fams]
    with pytest.raises(DpdeskError, match=r"families\[2\]"):
        _terms(np.ones(5), np.ones(5), ["laplace", "gaussian", "nope", "laplace", "other"])
