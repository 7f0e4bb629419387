"""The posterior request's text form and the counts it reads from a cube."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpdesk.engine.cube import build_cube
from dpdesk.engine.dirichlet.request import parse_posterior
from dpdesk.engine.errors import QueryError
from dpdesk.engine.schema import Schema

SCHEMA = Schema.from_dict(
    {
        "attributes": [
            {
                "name": "age",
                "kind": "numeric",
                "edges": [0, 30, 65, 90],
                "labels": ["0-30", "30-65", "65-90"],
            },
            {"name": "education", "kind": "categorical", "values": ["school", "college", "degree"]},
            {"name": "sex", "kind": "categorical", "values": ["F", "M"]},
            {"name": "one", "kind": "categorical", "values": ["only"]},
        ]
    }
)


def _cube(seed: int = 0):
    rng = np.random.default_rng(seed)
    n = 500
    df = pd.DataFrame(
        {
            "age": rng.uniform(0, 90, n),
            "education": rng.choice(["school", "college", "degree"], n),
            "sex": rng.choice(["F", "M"], n),
            "one": ["only"] * n,
        }
    )
    return df, build_cube(df, SCHEMA)


def test_text_form_and_counts_match_a_direct_count_of_the_rows():
    q = parse_posterior('posterior(education | age="65-90"; prior=1)', SCHEMA)
    assert (
        q.attribute == "education" and q.box == (("age", ("65-90",)),) and q.prior.tolist() == [1.0, 1.0, 1.0]
    )
    df, cube = _cube()
    old = df[df.age >= 65]
    expected = [int((old.education == e).sum()) for e in ("school", "college", "degree")]
    assert q.counts(cube).tolist() == expected
    # the box's charged cells: every cell with age 65-90, whatever the education and sex
    box = q.box_query().dense().reshape(SCHEMA.shape)
    assert box[2].sum() == 3 * 2 * 1 and box[:2].sum() == 0
    cats = q.category_queries()
    assert [float(c.dense() @ cube.counts.reshape(-1)) for c in cats] == expected
    assert q.describe() == "posterior(education | age='65-90'; prior=1)"


def test_options_box_lists_and_whole_table():
    q = parse_posterior(
        "posterior('sex' | age=[\"0-30\", '30-65'], education=college; prior=[2, 0.5]; mechanism=smooth; "
        "budget=0.4; delta=1e-6; size=120)",
        SCHEMA,
    )
    assert q.prior.tolist() == [2.0, 0.5]
    assert q.box == (("age", ("0-30", "30-65")), ("education", ("college",)))
    assert q.options == {"mechanism": "exponential-smooth", "budget": 0.4, "delta": 1e-6, "size": 120.0}
    df, cube = _cube(1)
    sel = df[(df.age < 65) & (df.education == "college")]
    assert q.counts(cube).tolist() == [int((sel.sex == "F").sum()), int((sel.sex == "M").sum())]
    whole = parse_posterior("posterior(sex)", SCHEMA)
    assert whole.box == () and whole.counts(cube).sum() == len(df)


@pytest.mark.parametrize(
    "text, message",
    [
        ("posterior(income)", "unknown attribute 'income'"),
        ("posterior(sex; prior=-1)", "positive"),
        ("posterior(sex; prior=[1, 2, 3])", "prior has 3 values"),
        ("posterior(sex | )", "empty box"),
        ("posterior(sex | age=[])", "empty label list"),
        ("posterior(one)", "at least 2"),
        ("posterior(sex | sex=F)", "attribute itself"),
        ('posterior(sex | age="99")', "no label '99'"),
        ("posterior(sex; mechanism=magic)", "mechanism must be one of"),
        ("posterior(sex; colour=1)", "unknown option 'colour'"),
        ("posterior(sex; budget=1; budget=2)", "appears twice"),
        ("posterior(sex) extra", "expected end of request"),
        ('posterior(sex | age="0-30" ; prior=1 $)', "unexpected character '$'"),
        ("count(sex=F)", "expected 'posterior('"),
        ("", "empty text"),
    ],
)
def test_bad_requests_give_one_line_errors(text, message):
    with pytest.raises(QueryError) as err:
        parse_posterior(text, SCHEMA)
    msg = str(err.value)
    assert message in msg and "\n" not in msg and msg.startswith("posterior:")


def test_error_columns_point_at_the_problem():
    text = 'posterior(sex | age="0-30"; prior=1 $)'
    with pytest.raises(QueryError, match=f"column {text.index('$') + 1}:"):
        parse_posterior(text, SCHEMA)
    text = "posterior(sex | age=old)"
    with pytest.raises(QueryError, match=f"column {text.index('old') + 1}:"):
        parse_posterior(text, SCHEMA)
