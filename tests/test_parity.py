"""Parity queries over two-label attributes are linear counting queries (seed §6)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dpdesk.engine.errors import QueryError
from dpdesk.engine.queries.parity import parity_query
from dpdesk.engine.queries.text import parse_query
from dpdesk.engine.schema import Schema


@pytest.fixture
def bits() -> Schema:
    attrs = [
        {"name": f"b{i}", "column": f"b{i}", "kind": "categorical", "values": [0, 1]} for i in range(1, 5)
    ]
    attrs.append({"name": "colour", "column": "colour", "kind": "categorical", "values": ["r", "g", "b"]})
    return Schema.from_dict({"attributes": attrs})


def test_coefficients_are_the_xor_of_the_chosen_bits(bits):
    q = parity_query(bits, ["b1", "b3", "b4"])
    dense = q.dense().reshape(bits.shape)
    for idx in itertools.product(*(range(k) for k in bits.shape)):
        assert dense[idx] == (idx[0] ^ idx[2] ^ idx[3])
    assert q.sensitivity == 1.0 and len(q.terms) == 2
    assert parse_query("parity(b1, b3, b4)", bits) == q
    assert parse_query('count(b2="1") + parity(b1)', bits).dense().max() == 2.0


@pytest.mark.parametrize(
    "text, message",
    [
        ("parity(colour)", "two-label attributes; 'colour' has 3 labels"),
        ("parity(b1, b9)", "unknown attribute 'b9'"),
        ("parity(b1, b1)", "twice"),
        ("parity()", "expected an attribute name"),
    ],
)
def test_bad_parity_fails_with_one_line(bits, text, message):
    with pytest.raises(QueryError) as e:
        parse_query(text, bits)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_answered_from_a_cell_release_exactly_like_any_count(bits):
    from dpdesk.engine.mechanisms.noise import SeededSampler
    from dpdesk.engine.partition.plan import cells_plan
    from dpdesk.engine.partition.release import draw_release

    counts = np.random.default_rng(0).integers(0, 9, bits.shape)
    rel = draw_release(cells_plan(bits), 0.5, counts, SeededSampler(1), allow_insecure=True)
    q = parity_query(bits, ["b2", "b4"])
    est = rel.estimate(q)
    assert est.estimate == pytest.approx(float(q.dense() @ rel.values[0].reshape(-1)))
    assert est.std == pytest.approx(np.sqrt(q.dense().sum()) * np.sqrt(2 * np.exp(-0.5)) / (1 - np.exp(-0.5)))
