"""Selberg's brackets reuse what they computed (the trigonometric samples of an interval, its answer, the
weights of a node count) and give the same numbers as computing each afresh."""

from __future__ import annotations

import numpy as np

from dpdesk.engine.inference import grid as G
from dpdesk.engine.inference import selberg as S


def _sum(seed: int) -> G.Components:
    rng = np.random.default_rng(seed)
    A = rng.uniform(0.05, 1.5, 30)
    return G.make_components(A, rng.uniform(1.0, 30.0, 30), np.ones(30, bool))


def test_an_interval_asked_again_or_elsewhere_gets_the_same_bounds():
    comp = _sum(1)
    bl = S.Bandlimited(comp)
    first = [bl.interval_to(-w, w) for w in (3.0, 10.0, 25.0)] + [bl.interval_to(-2.0, 7.5)]
    again = [bl.interval_to(-w, w) for w in (3.0, 10.0, 25.0)] + [bl.interval_to(-2.0, 7.5)]
    assert first == again
    for (lo, hi), got in zip([(-3.0, 3.0), (-10.0, 10.0), (-25.0, 25.0), (-2.0, 7.5)], first):
        assert S.Bandlimited(comp).interval_to(lo, hi) == got  # a fresh bracket, nothing reused


def test_kept_samples_and_weights_change_no_sum():
    comp = _sum(2)
    bl = S.Bandlimited(comp)
    for n in (1024, 4096, 16384):
        ph = bl.phi(n)[1:]
        j = np.arange(1, ph.size + 1)
        for c, w in ((0.0, 6.0), (1.5, 4.0)):
            plain = S.central_sums(ph, j, n, bl.period, w, c)
            kept = S.central_sums(
                ph,
                j,
                n,
                bl.period,
                w,
                c,
                weights=tuple(v[: ph.size] for v in S._weights_upto(n)),
                trig=bl._trig_at(c, w, ph.size),
            )
            assert plain == kept
