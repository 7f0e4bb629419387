"""Issue 34 item 10: a yes/no column previews in the spelling the cube matches — one spelling, so the
values a curator copies from the preview into the schema count every row."""

from __future__ import annotations

import pandas as pd
import pytest

from dpdesk.engine.schema import Schema
from dpdesk.sources import open_source


@pytest.mark.parametrize(
    "name, write",
    [
        ("flags.csv", lambda p: p.write_text("smoker,age\ntrue,30\nfalse,40\ntrue,50\n", encoding="utf-8")),
        ("answers.csv", lambda p: p.write_text("smoker,age\nYes,30\nNo,40\nYes,50\n", encoding="utf-8")),
        (
            "flags.parquet",
            lambda p: pd.DataFrame({"smoker": [True, False, True], "age": [30, 40, 50]}).to_parquet(p),
        ),
    ],
)
def test_the_preview_shows_what_the_cube_matches(tmp_path, name, write):
    path = tmp_path / name
    write(path)
    src = open_source(str(path))
    shown = sorted({str(v) for v in src.preview(10)["smoker"]})
    assert "True" not in shown and "False" not in shown  # Python's spelling, which nothing declared matches
    schema = Schema.from_dict(
        {"attributes": [{"name": "smoker", "column": "smoker", "kind": "categorical", "values": shown}]}
    )
    cube = src.build_cube(schema)
    assert cube.out_of_domain == 0 and sorted(cube.counts.tolist()) == [1, 2]
