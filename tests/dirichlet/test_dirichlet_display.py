"""Credible bands and densities of Dirichlet proportions, and the plot that draws them."""

from __future__ import annotations

import numpy as np
import pytest

from dpdesk.engine.dirichlet.display import beta_density, proportion_bands


def test_bands_cover_the_marginals_of_dirichlet_draws():
    params = np.array([6.0, 2.5, 1.0, 0.7])
    bands = proportion_bands(params, level=0.9)
    draws = np.random.default_rng(0).dirichlet(params, size=200_000)
    assert np.allclose(bands.mean, draws.mean(axis=0), atol=2e-3)
    inside = ((draws >= bands.low) & (draws <= bands.high)).mean(axis=0)
    assert np.allclose(inside, 0.9, atol=4e-3)  # 4 binomial sds at n = 200 000
    below = (draws < bands.low).mean(axis=0)
    assert np.allclose(below, 0.05, atol=3e-3)  # equal-tailed
    assert not bands.mean.flags.writeable
    with pytest.raises(ValueError):
        proportion_bands(np.array([1.0]))
    with pytest.raises(ValueError):
        proportion_bands(np.array([1.0, 0.0]))


def test_beta_density_integrates_to_one():
    grid = np.linspace(0, 1, 20001)
    dens = beta_density(np.array([3.5, 7.0]), grid)
    assert np.trapezoid(dens, grid) == pytest.approx(1.0, abs=1e-6)
    with pytest.raises(ValueError):
        beta_density(np.array([1.0, 1.0, 1.0]), grid)


def test_plot_draws_curves_for_two_categories_and_bars_otherwise(qtbot):
    from dpdesk.gui.widgets.plots import pg
    from dpdesk.gui.widgets.proportions_plot import ProportionsPlot

    w = ProportionsPlot()
    qtbot.addWidget(w)
    w.set_series(["yes", "no"], [("prior", np.array([1.0, 1.0])), ("released", np.array([14.0, 8.0]))])
    curves = [i for i in w.plotItem.items if isinstance(i, pg.PlotDataItem)]
    assert w.mode == "curves" and len(curves) == 2
    x, y = curves[1].getData()
    assert x[np.argmax(y)] == pytest.approx(13 / 20, abs=2e-3)  # the Beta(14, 8) mode
    w.set_series(
        ["a", "b", "c"],
        [
            ("prior", np.ones(3)),
            ("released", np.array([9.0, 3.0, 2.0])),
            ("Laplace alternative", np.array([8.0, 4.0, 1.0])),
        ],
    )
    bars = [i for i in w.plotItem.items if isinstance(i, pg.BarGraphItem)]
    whiskers = [i for i in w.plotItem.items if isinstance(i, pg.ErrorBarItem)]
    assert w.mode == "bars" and len(bars) == 3 and len(whiskers) == 3
    heights = bars[1].opts["height"]
    assert np.allclose(heights, [9 / 14, 3 / 14, 2 / 14])
    w.set_series(["a", "b"], [])
    assert w.mode == "empty"
