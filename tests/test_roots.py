"""The fusion search's root finder and quantile, written without SciPy (whose import costs a fresh
command most of a second), agree with SciPy: ``brentq`` visits the same points and returns the same
root to the bit; ``erfinv`` to two units in the last place."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, special

from dpdesk.engine.inference.roots import brentq, erfinv

FUNCTIONS = [
    (lambda x: x**3 - 2 * x - 5, 2.0, 3.0),
    (lambda x: math.cos(x) - x, 0.0, 1.0),
    (lambda x: math.exp(x) - 1e-3, -10.0, 5.0),
    (lambda x: math.tanh(50 * (x - 0.3)), -1.0, 1.0),  # steep: bisection steps
    (lambda x: (x - 1e-9) * 1e12, -1.0, 1.0),
    (lambda x: 0.95 - 1 / (1 + math.exp(-3 * x)), -20.0, 20.0),  # the shape of the fusion search
]


@pytest.mark.parametrize("k", range(len(FUNCTIONS)))
@pytest.mark.parametrize("tol", [(2e-12, 8.881784197001252e-16), (1e-4 / 4, 1e-12)])
def test_brentq_is_scipys_step_for_step(k, tol):
    f, a, b = FUNCTIONS[k]
    ours, theirs = [], []
    r1 = brentq(lambda x: ours.append(x) or f(x), a, b, xtol=tol[0], rtol=tol[1], maxiter=60)
    r2 = optimize.brentq(lambda x: theirs.append(x) or f(x), a, b, xtol=tol[0], rtol=tol[1], maxiter=60)
    assert r1 == r2 and ours == theirs


def test_brentq_errors_as_scipy():
    with pytest.raises(ValueError, match="different signs"):
        brentq(lambda x: x * x + 1, -1.0, 1.0)
    with pytest.raises(RuntimeError):
        brentq(lambda x: math.tanh(50 * (x - 0.3)), -1.0, 1.0, maxiter=2)


@pytest.mark.parametrize("p", [0.0, 1e-9, 0.5, 0.9, 0.95, 0.99, 0.999999, -0.7])
def test_erfinv_agrees_with_scipy(p):
    assert erfinv(p) == pytest.approx(float(special.erfinv(p)), rel=2 * np.finfo(float).eps, abs=1e-300)


def test_a_fused_spend_decision_imports_neither_scipy_optimize_nor_scipy_special():
    """The first spend decision of a fresh process (issue 35: ~1 s of these imports on every command)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from dpdesk.engine.answering.workflow import Request, assess\n"
        "from dpdesk.engine.inference.history import History, HistoryRow\n"
        "from dpdesk.engine.queries.query import query_from_vector\n"
        "h = History((4,))\n"
        "h.append(HistoryRow(query_from_vector([1, 1, 0, 0], (4,)), 0.05, 30.0))\n"
        "a = assess(h, Request('r', query_from_vector([1, 1, 0, 0], (4,)), 20.0, 0.05), 10.0)\n"
        "print(a.decision, a.pricing.fusion is not None, a.pricing.fusion_weight is not None)\n"
        "print(sorted(m for m in ('scipy.optimize', 'scipy.special') if m in sys.modules))\n"
    )
    ran = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert ran.stdout.splitlines() == ["spend True True", "[]"], ran.stdout
