"""Small declared cubes for the partition-release tests."""

from __future__ import annotations

import numpy as np
import pytest

from dpdesk.engine.schema import Schema


def make_schema(sizes, numeric=(0,)) -> Schema:
    attrs = []
    for i, k in enumerate(sizes):
        if i in numeric:
            attrs.append({"name": f"a{i}", "column": f"a{i}", "kind": "numeric", "edges": list(range(k + 1))})
        else:
            attrs.append(
                {
                    "name": f"a{i}",
                    "column": f"a{i}",
                    "kind": "categorical",
                    "values": [f"v{j}" for j in range(k)],
                }
            )
    return Schema.from_dict({"attributes": attrs})


@pytest.fixture
def sized_schema():
    """``sized_schema((k0, k1, ...), numeric=(0,))``: attributes a0, a1, ... of those sizes."""
    return make_schema


@pytest.fixture
def schema3() -> Schema:
    """age (8 numeric bins) × sex (2) × edu (3)."""
    return Schema.from_dict(
        {
            "attributes": [
                {"name": "age", "column": "age", "kind": "numeric", "edges": list(range(0, 90, 10))},
                {"name": "sex", "column": "sex", "kind": "categorical", "values": ["F", "M"]},
                {"name": "edu", "column": "edu", "kind": "categorical", "values": ["a", "b", "c"]},
            ]
        }
    )


@pytest.fixture
def counts3(schema3) -> np.ndarray:
    return np.random.default_rng(3).poisson(20, schema3.shape)
