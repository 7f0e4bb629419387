"""Canonical JSON: one text per value, whichever path builds it (a release may hold millions of numbers)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpdesk.store.canonical import canonical_json
from dpdesk.store.ledger import _freeze, thaw


def _reference(obj):
    """The canonical text built element by element with the standard library only."""

    def plain(v):
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        if isinstance(v, (list, tuple, np.ndarray)):
            return [plain(x) for x in (v.tolist() if isinstance(v, np.ndarray) else v)]
        if isinstance(v, (bool, np.bool_)):
            return bool(v)
        if isinstance(v, (int, np.integer)):
            return int(v)
        if isinstance(v, (float, np.floating)):
            return float(v)
        return v

    return json.dumps(plain(obj), sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def test_flat_numbers_and_mixed_lists_give_the_same_text_as_element_by_element():
    rng = np.random.default_rng(3)
    values = [float(x) for x in rng.normal(0, 1e6, 5000)] + [0, -3, 2**60, 1e-310]
    payload = {
        "values": [values, list(range(7))],
        "mixed": [1, 2.5, True, None, "x", np.float64(0.1), np.int64(4)],
        "array": rng.integers(0, 9, 11),
        "nested": ({"b": 1, "a": (0.5, 2)},),
    }
    assert canonical_json(payload) == _reference(payload)
    assert json.loads(canonical_json(payload))["values"][0] == values
    assert thaw(_freeze(json.loads(canonical_json(payload)))) == json.loads(canonical_json(payload))


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_a_non_finite_number_in_a_long_flat_list_is_refused(bad):
    with pytest.raises(ValueError, match="non-finite"):
        canonical_json({"values": [1.0] * 1000 + [bad]})
