"""A batch check asked several requests at a time (``DPDESK_THREADS``) reads exactly what one at a time does.

The would-be history is 24 overlapping ranges with discrete-Laplace noise over 16 cells (each request's
exact posterior a sum of many non-lattice terms); 20 range requests, some met and some not. Threads of 2
and 3 must give the same confidences bit for bit, stop an early-stopping check at the same request with
the same answers (the work past the stop is done and dropped: never recorded), and still be cancelled
between requests.
"""

from __future__ import annotations

import numpy as np
import pytest
from batch_helpers import N, range_batch, range_query

from dpdesk.engine.errors import Cancelled, DpdeskError
from dpdesk.engine.inference.history import History, HistoryRow
from dpdesk.engine.planning import checks
from dpdesk.engine.planning.checks import Checker


def _history() -> History:
    rng = np.random.default_rng(11)
    h = History((N,))
    for _ in range(24):
        lo = int(rng.integers(0, N - 1))
        h.append(HistoryRow(range_query(lo, int(rng.integers(lo + 1, N + 1))), 0.4, 0.0, "discrete_laplace"))
    return h


def _run(monkeypatch, width, **kw):
    monkeypatch.setenv("DPDESK_THREADS", str(width))
    asked = []
    infer = checks.infer
    monkeypatch.setattr(checks, "infer", lambda h, r, **a: (asked.append(r.id), infer(h, r, **a))[1])
    out = Checker(History((N,)), "fft", (), None).checked(_history(), REQS, **kw)
    return out, asked


REQS = range_batch(4, 20, eps2=(4.0, 40.0))


def test_threads_give_the_same_confidences_and_stop_at_the_same_request(monkeypatch):
    (serial, complete), _ = _run(monkeypatch, 1)
    assert complete and 0 < sum(c is not None for c in serial) < len(REQS)  # some met, some not
    for width in (2, 3):
        assert _run(monkeypatch, width)[0] == (serial, True)
    # the early-stopping check, asked in an order where the stopping miss opens a pair and a met
    # request follows it: the pair's second answer is computed and must not be recorded
    met = [k for k, c in enumerate(serial) if c is not None]
    short = [k for k, c in enumerate(serial) if c is None]
    order = [met[0], met[1], short[0], met[2], short[1], met[3]] + met[4:] + short[2:]
    only = [True] * len(REQS)
    for allowed, n_serial, n_threads in ((0, 3, {2: 4, 3: 3}), (1, 5, {2: 6, 3: 6})):
        (stopped, done), asked = _run(monkeypatch, 1, order=order, allowed_misses=allowed)
        assert not done and len(asked) == n_serial
        assert stopped == [serial[k] if k in order[:n_serial] else None for k in range(len(REQS))]
        for width in (2, 3):
            (got, done2), asked2 = _run(monkeypatch, width, order=order, allowed_misses=allowed, only=only)
            assert (got, done2) == (stopped, done)
            assert len(asked2) == n_threads[width]  # whole chunks computed, what lies past the stop dropped


def test_a_threaded_check_is_cancelled_between_requests_and_a_bad_setting_named(monkeypatch):
    monkeypatch.setenv("DPDESK_THREADS", "2")
    calls = []
    checker = Checker(History((N,)), "fft", (), lambda: calls.append(1) or len(calls) > 2)
    with pytest.raises(Cancelled):
        checker.checked(_history(), REQS)
    assert len(calls) == 3  # asked before each pair: two pairs done, cancelled before the third
    monkeypatch.setenv("DPDESK_THREADS", "two")
    with pytest.raises(DpdeskError, match="DPDESK_THREADS"):
        Checker(History((N,)), "fft", (), None).checked(_history(), REQS)
