"""The transform's shortcuts change no number: φ is evaluated once per |t|, and a give-up skips only masses
the caller would discard (grid.fft_general; issue 19's planner checks hundreds of posteriors with it)."""

from __future__ import annotations

import numpy as np
import pytest

from dpdesk.engine.inference import aliases as AL
from dpdesk.engine.inference import grid as G


def _mixed(seed: int, n_cont: int, n_disc: int) -> G.Components:
    rng = np.random.default_rng(seed)
    A = np.concatenate([rng.uniform(0.01, 2.0, n_cont), rng.uniform(0.05, 1.5, n_disc)])
    b = rng.uniform(0.5, 40.0, A.size)
    return G.make_components(A, b, np.arange(A.size) >= n_cont)


@pytest.mark.parametrize("seed,n_cont,n_disc", [(1, 3, 5), (2, 60, 40), (3, 120, 0), (4, 1, 70)])
@pytest.mark.parametrize("L", [3, 375, 1125])
def test_phi_on_a_symmetric_grid_is_its_mirrored_half(seed, n_cont, n_disc, L):
    comp = _mixed(seed, n_cont, n_disc)
    t = 2 * np.pi * np.fft.fftfreq(L) / 0.37
    assert np.array_equal(G._even(G.phi, t, comp), G.phi(t, comp))


@pytest.mark.parametrize("seed,n_cont,n_disc", [(5, 2, 6), (6, 60, 40)])
def test_mirrored_aliases_equal_evaluating_each(seed, n_cont, n_disc):
    comp = _mixed(seed, n_cont, n_disc)
    L, hf, m = 1125, 0.21, 3
    w = 2 * np.pi * np.fft.fftfreq(L)
    tp, tm = (w + 2 * np.pi * m) / hf, (w - 2 * np.pi * m) / hf
    rng = np.random.default_rng(seed)
    need_p, need_m = rng.random(L) < 0.8, rng.random(L) < 0.8  # any masks, not only mirrored ones
    mirror = (-np.arange(L)) % L
    assert np.array_equal(tm[mirror], -tp)
    got = AL._alias_pair(tp, tm, need_p, need_m, comp, mirror)
    want = AL._alias_pair(tp, tm, need_p, need_m, comp)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    assert not got[0][~need_p].any() and not got[1][~need_m].any()


@pytest.mark.parametrize(
    "coef,h,n_out",
    [
        ([1.0, 0.7314, 0.4231, 1e-2], 0.05, 1001),  # discrete terms beside a tiny continuous one: loose
        ([1.0, 0.7314, 0.4231, 1e-2], 0.5, 201),
        ([1.0, 0.7314, 0.4231, 2.0], 0.05, 1001),  # a wide continuous term: resolved
    ],
)
def test_give_up_skips_exactly_the_masses_a_caller_discards(coef, h, n_out):
    comp = G.make_components(
        np.array(coef), np.array([3.0, 3.0, 5.0, 2.0]), np.array([True, True, True, False])
    )
    mass, err = G.fft_general(comp, h, n_out, 1e-9)
    for limit in (1e-6, err * (1 + 1e-12), err * (1 - 1e-12)):
        asked = []
        m2, e2 = G.fft_general(comp, h, n_out, 1e-9, give_up=lambda e: asked.append(e) or e > limit)
        assert e2 == err and asked == [err]  # the bound it would return, asked before the aliases are summed
        if err > limit:
            assert m2 is None
        else:
            assert np.array_equal(m2, mass)


def _reference_phi(t: np.ndarray, comp: G.Components) -> np.ndarray:
    """φ by its definition, factor by factor, in extended precision (numpy's long double)."""
    L = np.longdouble
    t = t.astype(L)
    ref = np.ones(t.size, dtype=L)
    for a, p, q in zip(comp.a, comp.p, comp.q):
        ref *= L(q) ** 2 / (L(q) ** 2 + 4 * L(p) * np.sin(L(a) * t / 2) ** 2)
    for c in comp.c:
        ref /= 1 + (L(c) * t) ** 2
    return ref.astype(float)


@pytest.mark.parametrize(
    "seed,n_cont,n_disc,start,n",
    [
        (7, 0, 56, 0, 20_000),  # many discrete terms, no decay (Selberg's nodes for a pure discrete sum)
        (8, 54, 73, 1024, 7_000),  # continuous and discrete, a later stretch of nodes (j from 1024)
        (9, 0, 3, 0, 5),  # a handful of nodes
        (10, 2, 300, 7, 3_001),  # more terms than one group holds
    ],
)
def test_phi_at_the_nodes_matches_its_definition(seed, n_cont, n_disc, start, n):
    comp = _mixed(seed, n_cont, n_disc)
    period = 733.3
    got = G.phi_nodes(start, start + n, period, comp)
    t = 2.0 * np.pi * (np.arange(start, start + n) / period)
    ref = _reference_phi(t, comp)
    tiny = ref <= np.exp(-80.0) * 1.0000001
    assert np.all(got[tiny] == 0.0)  # below e^-80: zero, as phi() gives
    assert np.max(np.abs(got - np.where(tiny, 0.0, ref))) < 1e-13
    assert np.max(np.abs(got - G.phi(t, comp))) < 1e-12  # the per-frequency evaluation, to its rounding


def test_blocks_that_fall_below_the_cutoff_are_zero():
    # wide discrete terms with unequal weights: φ stays below e^-80 away from its near-periods
    comp = G.make_components(np.array([3.1, 2.7, 5.3, 4.4] * 10), np.full(40, 20.0), np.ones(40, bool))
    got = G.phi_nodes(0, 50_000, 101.7, comp)
    t = 2.0 * np.pi * (np.arange(50_000) / 101.7)
    want = G.phi(t, comp)
    assert (got == 0).mean() > 0.5 and np.array_equal(got == 0, want == 0)
    assert np.max(np.abs(got - want)) < 1e-12


@pytest.mark.parametrize("seed,n_cont", [(11, 60), (12, 400)])
def test_series_of_many_small_continuous_terms_matches_their_logs(seed, n_cont):
    # more than 48 continuous terms: the small ones (|c t| < 1/2) enter through the power-sum series
    comp = _mixed(seed, n_cont, 0)
    comp = G.make_components(
        np.concatenate([comp.c * np.geomspace(1e-9, 1.0, n_cont)]), np.ones(n_cont), np.zeros(n_cont, bool)
    )  # scales over nine decades
    t = np.concatenate([np.geomspace(1e-3, 1e9, 4000), [0.0]]) / comp.c[-1]
    L = np.longdouble
    ref = -np.log1p((comp.c.astype(L)[None, :] * t.astype(L)[:, None]) ** 2).sum(axis=1).astype(float)
    got = G.log_phi(t, comp)
    live = ref > -80.0
    assert np.all(got[~live] == -80.0)
    assert np.max(np.abs(got[live] - ref[live]) / np.maximum(1.0, np.abs(ref[live]))) < 1e-13


def test_alias_bound_on_a_mirrored_half_is_the_same_bound():
    comp = _mixed(13, 40, 20)
    rest = G.Components(comp.c[:-1], comp.a, comp.p, comp.q)
    L, hf = 3375, 0.37
    w = 2 * np.pi * np.fft.fftfreq(L)
    r0 = G.phi(w / hf, rest)
    top = rest.c[-8:]

    def bound_rest(tau):
        return float(np.prod(1.0 / (1.0 + (top * tau) ** 2)))

    for n_from in (0, 4):
        got = AL.alias_residual(w, hf, float(comp.c[-1]), bound_rest, r0, rest.variance, n_from)
        want = AL.alias_residual(
            w, hf, float(comp.c[-1]), bound_rest, r0, rest.variance, n_from, mirrored=False
        )
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


def _alias_residual_block_by_block(w, hf, c1, bound_rest, r0, var_rest, n_from):
    """The alias bound as its docstring states it, one block of aliases at a time over whole arrays."""
    s, t0sq, abs_r0 = np.abs(np.sin(w / 2)), (np.abs(w) / hf) ** 2, np.abs(r0)
    plain, corr = np.zeros(w.shape), np.zeros(w.shape)
    na = n_from + 1
    while na < 2**24:
        nb = 2 * na
        tau, tmax = (2 * na - 1) * np.pi / hf, (2 * nb + 1) * np.pi / hf
        weight = 2 * (nb - na + 1) / (1 + (c1 * tau) ** 2) * s / ((na - 0.5) * np.pi)
        br = bound_rest(tau)
        plain += weight * br
        corr += weight * np.minimum(br + abs_r0, var_rest * (tmax**2 + t0sq) / 2)
        na = nb + 1
    tail = 2 * s * (hf / (c1 * np.pi)) ** 2 / (4 * np.pi) / (2 * (na - 1.5) ** 2) * 2
    return plain + tail, corr + tail


@pytest.mark.parametrize("seed,hf", [(13, 0.37), (14, 3.0), (15, 0.02), (None, 3.0), (None, 30.0)])
def test_alias_bound_summed_per_block_as_numbers_is_the_block_by_block_sum(seed, hf):
    # the blocks' weights are numbers times |sin(w/2)|: summing the numbers first changes only rounding;
    # seed None: a rest of small variance, whose variance bound is the smaller in the first blocks
    comp = (
        _mixed(seed, 40, 20)
        if seed is not None
        else G.make_components(
            np.array([1.0, 0.01, 0.02, 0.3]),
            np.array([40.0, 0.5, 0.7, 0.2]),
            np.array([False, False, False, True]),
        )
    )
    rest = G.Components(comp.c[:-1], comp.a, comp.p, comp.q)
    w = 2 * np.pi * np.fft.fftfreq(1215)
    r0 = G.phi(w / hf, rest)
    top = rest.c[-8:]

    def bound_rest(tau):
        return float(np.prod(1.0 / (1.0 + (top * tau) ** 2)))

    for n_from in (0, 1, 4, 32):
        got = AL.alias_residual(w, hf, float(comp.c[-1]), bound_rest, r0, rest.variance, n_from)
        want = _alias_residual_block_by_block(w, hf, float(comp.c[-1]), bound_rest, r0, rest.variance, n_from)
        for g, x in zip(got, want):
            assert np.all(x >= 0) and np.allclose(g, x, rtol=1e-12, atol=0.0)


def test_odd_fast_len_is_the_least_odd_5_smooth_number_at_or_above():
    def smooth(k):
        for f in (3, 5):
            while k % f == 0:
                k //= f
        return k == 1

    for n in list(range(2000)) + [140_000, 281_251, 421_875, 421_876]:
        want = next(k for k in range(max(n, 1) | 1, 10 * n + 3, 2) if smooth(k))
        assert G.odd_fast_len(n) == want


@pytest.mark.parametrize("x", [1e-6, 0.01, 0.7, 5.0, 60.0])
def test_laplace_bin_transform_in_real_arithmetic(x):
    # the DTFT of Laplace(1)'s bin masses of width x, against its complex closed form
    w = 2 * np.pi * np.fft.fftfreq(2001)
    coef = -np.exp(-x / 2) * np.expm1(-x)
    want = -np.expm1(-x / 2) + coef * np.real(np.exp(1j * w) / -np.expm1(-x + 1j * w))
    assert np.max(np.abs(AL._laplace_bins_dtft(1.0, x, w) - want)) < 1e-15
