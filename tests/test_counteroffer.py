"""Issue 34 item 8: a counter-offer is the best answer the remaining budget and the curator's spend-policy
cap allow — wider than asked when the request is declined, fused with history where history knows the
query — and accepting it gives terms the same rules then answer."""

from __future__ import annotations

import numpy as np

from dpdesk.engine.answering.counteroffer import counter_offer
from dpdesk.engine.answering.request import Request, Settings
from dpdesk.engine.answering.workflow import assess
from dpdesk.engine.budget.policy import SpendPolicy, headroom
from dpdesk.engine.inference.history import History, HistoryRow
from dpdesk.engine.queries.query import query_from_vector

SHAPE = (4,)
Q = query_from_vector(np.array([1.0, 1.0, 0.0, 0.0]), SHAPE)


def _history(rows: int) -> History:
    h = History(SHAPE)
    for i in range(rows):  # the same query answered before, loosely: history knows it a little
        h.append(HistoryRow(Q, 0.02, 500.0 + (-1) ** i * 7.0))
    return h


def test_a_request_the_policy_cap_declines_is_offered_the_best_answer_within_the_cap():
    settings = Settings(1.0, policy=SpendPolicy(cap=0.3))
    h = History(SHAPE)
    a = assess(h, Request("r", Q, 3.0, 0.05), settings)
    room, _ = headroom(Q, np.asarray(a.cell_costs), 1.0)
    assert a.decision == "reject" and a.needed_alpha > 0.3 * room  # declined by the cap, not the budget
    offer = counter_offer(a, 1.0)
    assert offer.limit == "spend policy cap" and offer.eps > 3.0 and offer.alpha <= 0.3 * room + 1e-12
    # accepted, the new terms are answered under the same policy, within the cap
    b = assess(h, Request("r", Q, offer.eps, offer.delta), settings)
    assert b.decision == "spend" and b.spend_alpha <= 0.3 * room + 1e-12
    # and it is the best: a visibly narrower ε (beyond its 3-digit rounding) needs more than the cap
    c = assess(h, Request("r", Q, offer.eps * 0.98, offer.delta), settings)
    assert c.decision == "reject"


def test_with_history_the_offer_is_fused_and_narrower_than_a_fresh_answer_alone():
    settings = Settings(0.3)
    h = _history(4)
    a = assess(h, Request("r", Q, 2.0, 0.05), settings)
    assert a.decision == "reject" and a.estimable
    offer = counter_offer(a, 0.3)
    room, _ = headroom(Q, np.asarray(a.cell_costs), 0.3)
    alone = a.noise.alpha_for(a.sensitivity, offer.eps, 0.05)
    assert alone > room  # alone, this ε would not fit: fusion with history buys it
    b = assess(h, Request("r", Q, offer.eps, 0.05), settings)
    assert b.decision == "spend" and b.spend_alpha <= room + 1e-12
