"""The posterior plot of a discrete-noise history with non-integer BLUE weights (issue 14, item 4).

Discrete noise combined with weights such as 0.48 and 0.52 puts θ's mass on a fine irregular set of
points, so the raw mass function is a jagged comb. The plot must show it binned to a readable width —
whole units for a count, centred on the integers — with each bin holding the posterior's probability.
"""

from __future__ import annotations

import numpy as np
import pytest

from .conftest import wait_assessed

pg = pytest.importorskip("pyqtgraph")


def _local_maxima(y: np.ndarray) -> int:
    d = np.sign(np.diff(y))
    d = d[d != 0]
    return int(np.sum((d[:-1] > 0) & (d[1:] < 0)))


@pytest.fixture
def comb_project(tmp_path):
    """Four fresh discrete-Laplace answers (small noise) whose BLUE for count(g="a") has weights ≈ 0.48/0.52."""
    from dpdesk.store import Project

    table = tmp_path / "t.csv"
    table.write_text("g\n" + "a\n" * 100 + "b\n" * 200 + "c\n" * 150, encoding="utf-8")
    schema = {"attributes": [{"name": "g", "column": "g", "kind": "categorical", "values": ["a", "b", "c"]}]}
    path = tmp_path / "comb.dpdesk"
    with Project.create(path, name="comb", schema=schema, source_location=str(table), total_budget=50.0) as p:
        for q, eps in [
            ('count(g="a")', 4),
            ('count(g="b")', 4),
            ('count(g=["a","b","c"])', 3),
            ('count(g=["b","c"])', 2),
            ('count(g="a")', 30),
        ]:
            p.add_request(q, eps, 0.05)
    with Project.open(path, "w") as p:
        for rid in ("r1", "r2", "r3", "r4"):
            p.answer(rid)
    return path


def test_a_discrete_posterior_with_non_integer_weights_is_drawn_in_unit_bins_not_as_a_comb(
    qtbot, comb_project, tmp_path, settings, dialogs
):
    from dpdesk.gui.app.main_window import MainWindow

    win = MainWindow(settings, demo_folder=tmp_path / "data")
    qtbot.addWidget(win)
    win.resize(1600, 1000)
    win.show()
    assert win.open_project(str(comb_project))
    win.requests.select_request("r5")
    a = wait_assessed(qtbot, win, "r5")
    post = a.posterior
    weights = np.asarray(a.estimate.coefficients)
    assert a.decision == "infer" and np.any(np.abs(weights - np.round(weights)) > 0.1)  # non-integer BLUE
    assert post.spacing < 1
    lo, hi = a.interval
    raw = np.asarray(post.mass)[(post.grid >= lo) & (post.grid <= hi)]
    assert _local_maxima(raw) >= 5  # the raw masses really are a comb

    plot = win.requests.answer.plot
    assert plot.mode == "binned" and plot.bin_width == 1.0
    bars = [i for i in plot.plotItem.items if isinstance(i, pg.BarGraphItem)]
    assert len(bars) == 1
    x, height = np.asarray(bars[0].opts["x"], float), np.asarray(bars[0].opts["height"], float)
    assert np.all(x == np.round(x)) and np.all(np.diff(x) == 1.0)  # one bar per integer the count can take
    assert height.sum() == pytest.approx(post.total, abs=1e-9)
    # each bar is the posterior's mass of [k − ½, k + ½): the grid points inside it, give or take the
    # grid bins next to its two edges and the error the posterior states for its masses
    grid, mass, h = np.asarray(post.grid), np.asarray(post.mass), post.spacing
    for k, y in zip(x, height):
        inside = mass[(grid >= k - 0.5) & (grid < k + 0.5)].sum()
        straddle = mass[
            (np.abs(grid - (k - 0.5)) < h) | (np.abs(grid - (k + 0.5)) < h)
        ].sum()  # binned atoms: ±1 bin
        assert abs(y - inside) <= straddle + post.error_bound + 1e-12
    shown = height[height >= 0.01 * height.max()]
    assert _local_maxima(shown) == 1  # one hump, not a comb
    assert plot.plotItem.getAxis("left").labelText == "posterior mass per bin of width 1"
    win.grab().save(str(tmp_path / "binned-posterior.png"))
    win.close()


def test_bins_follow_the_lattice_of_the_values_a_weighted_query_can_take():
    from dpdesk.engine.inference.posterior import posterior
    from dpdesk.engine.queries.query import query_from_vector
    from dpdesk.gui.widgets.posterior_plot import readable_bins, value_step

    def q(*v):
        return query_from_vector(np.array(v, dtype=float), (len(v),))

    assert value_step(q(1, 1, 0)) == 1 and value_step(q(2, 2, 0)) == 2 and value_step(q(2, -3, 0)) == 1
    assert value_step(q(0.5, 1.5, 0)) == 0.5 and value_step(q(0.5, 0.3, 0)) == 0
    # a value on multiples of 0.5 estimated with discrete noise and weights 0.48/0.52: bins of 0.5·(1, 2, 5…)
    post = posterior(100.25, [0.48, 0.52], [1.5, 1.5], ["discrete_laplace"] * 2)
    assert post.spacing < 0.5
    centres, masses, width = readable_bins(post, 0.5, view=30.0)
    assert width == 0.5 and np.allclose(centres / 0.5, np.round(centres / 0.5))
    assert masses.sum() == pytest.approx(post.total, abs=1e-9)
    _, _, wide = readable_bins(post, 0.5, view=400.0)  # a wide view: fewer, wider bins, still on the lattice
    assert wide == 2.5
