"""Issue 34 item 13: the HTML report's per-cell table is a summary a person can read; the whole table is
a CSV beside the report, holding every costed cell's cost as the ledger view computes it."""

from __future__ import annotations

import csv

import numpy as np

from dpdesk.engine.mechanisms.noise import SeededSampler
from dpdesk.store import Project
from dpdesk.store.audit_export import cells_file_for, export_report
from dpdesk.store.report import CELLS_LISTED

SCHEMA = {
    "attributes": [
        {"name": "a", "column": "a", "kind": "categorical", "values": [f"a{i}" for i in range(12)]},
        {"name": "b", "column": "b", "kind": "categorical", "values": [f"b{i}" for i in range(10)]},
    ]
}


def test_a_report_over_many_cells_lists_the_most_charged_and_attaches_them_all(tmp_path):
    table = tmp_path / "t.csv"
    table.write_text("a,b\n" + "".join(f"a{i % 12},b{i % 10}\n" for i in range(500)), encoding="utf-8")
    path = tmp_path / "p.dpdesk"
    Project.create(
        path, name="t", schema=SCHEMA, source_location=str(table), total_budget=10.0, test_project=True
    ).close()
    with Project.open(path, "w") as p:
        for i in range(12):  # each row of a costs more than the last: 120 costed cells, all different rows
            rid = p.add_request(f'count(a="a{i}")', 5 + i, 0.05).id
            p.answer(rid, SeededSampler(i))
        out = tmp_path / "report.html"
        verdict = export_report(p, out, {})
        costs = p.view().cell_costs
    assert verdict.ok
    page = out.read_text(encoding="utf-8")
    body = page.split("<h2>Per-cell privacy costs</h2>", 1)[1]
    assert body.count("<tr><td>") == CELLS_LISTED < int(np.count_nonzero(costs)) == 120
    assert "120 cells of the 120 carry a cost" in body and "report-cells.csv" in body
    rows = list(csv.DictReader(cells_file_for(out).open(encoding="utf-8")))
    assert len(rows) == 120
    assert sorted(float(r["cost"]) for r in rows) == sorted(float(c) for c in costs[costs > 0])
    top = max(float(r["cost"]) for r in rows)
    assert f"<td>{top:.6g}</td>" in body.split("</tr>", 2)[1]  # the most-charged first
