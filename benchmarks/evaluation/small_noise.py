"""End-to-end calibration in issue 12 item 1's regime: integer noise at scales ``S/α ≲ 1.5``.

The history is the issue's example — on a 3-cell table, discrete-Laplace answers to ``[1,0,0]`` at
α ≈ 1.24, ``[0,1,0]`` at 2.55, ``[0,0,1]`` at 1.0 and ``[1,1,1]`` at 2.69 (noise scales 0.81, 0.39,
1.0, 0.37) — so the BLUE weights of most later queries are off one lattice. Each *block* is one such
3-cell table: a project holds many blocks side by side (an attribute ``block`` × ``cell``), each with its
own four fresh answers through :meth:`Project.release` (OpenDP's sampler). Charges are per cell and
the blocks' rows touch disjoint cells, so every block's history, decisions and claims are those of a
project of its own, and its noise is independent of the other blocks'. Later requests on the block are
borderline ones the engine infers from that history; each claims ``confidence_at_eps`` for the released
window, and we note whether the window holds the true count.

Every block has 10 records in each cell. A fresh answer's α is the smallest that meets its request
(ε = 1 and δ = ``2p²/(1 + p)``, ``p = e^{−α}``, asks for α just above the issue's value).
"""

from __future__ import annotations

import math
import sqlite3
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CELLS = ("x", "y", "z")
PER_CELL = 10
ALPHAS = (('cell="x"', 1.24), ('cell="y"', 2.55), ('cell="z"', 1.0), ("", 2.69))  # the rows
# borderline requests (query on the block, ε, δ): each is inferred from the block's history
LATER = (
    ('count({b}, cell=["x","y"])', 1.6, 0.1),  # the query; at δ = 0.08 it must not be inferred
    ('count({b}, cell="z")', 1.0, 0.3),
    ('count({b}, cell=["y","z"])', 1.0, 0.3),
    ('count({b}, cell="x") - count({b}, cell="y")', 1.0, 0.3),
    ('count({b}, cell="y")', 1.0, 0.06),
    ("count({b})", 1.0, 0.05),
)
# the example: exact enumeration and a 4·10⁶-draw simulation give 0.9137 (± 0.003 allowed)
EXAMPLE = ('count({b}, cell=["x","y"])', 1.6, 0.08)
EXAMPLE_TRUTH, EXAMPLE_TOL = 0.9137, 0.003


def _delta_for(alpha: float) -> float:
    """δ at which ε = 1 needs α (discrete Laplace: ``Pr(|K| > 1) = 2p²/(1 + p)``), a hair below it."""
    p = math.exp(-alpha)
    return 0.999 * 2 * p * p / (1 + p)


def _query(template: str, block: str) -> str:
    return template.replace("{b}", f'block="{block}"')


@dataclass(frozen=True)
class BlockResult:
    """One block: per later request (in :data:`LATER` order) its decision, claim, bound and hit."""

    decisions: tuple[str, ...]
    claims: tuple[float, ...]
    bounds: tuple[float, ...]
    promises: tuple[float, ...]
    hits: tuple[bool, ...]
    example: tuple[str, float]  # the example: decision and claim
    largest_scale: float  # of the block's fresh noise, S/α (discrete Laplace)
    families: frozenset[str]
    fused: bool


def run(
    projects: int, blocks: int, folder: Path | None = None, sampler_for: Any = None
) -> tuple[list[BlockResult], float]:
    """``projects`` real projects of ``blocks`` blocks each; returns every block's result and the seconds.

    Fresh answers come from OpenDP, or with ``sampler_for`` from ``sampler_for(j)`` for project ``j`` (a
    seeded sampler: the projects are then test projects, the only kind that may draw from one)."""
    from dpdesk.engine.answering.fresh import true_answer
    from dpdesk.store import Project

    names = [f"b{i}" for i in range(blocks)]
    schema = {
        "attributes": [
            {"name": "block", "column": "block", "kind": "categorical", "values": names},
            {"name": "cell", "column": "cell", "kind": "categorical", "values": list(CELLS)},
        ]
    }
    t0, out = time.perf_counter(), []
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        tmp = Path(tmp)
        con = sqlite3.connect(tmp / "blocks.sqlite")
        con.execute("CREATE TABLE t (block TEXT, cell TEXT)")
        con.executemany(
            "INSERT INTO t VALUES (?, ?)", [(b, c) for b in names for c in CELLS for _ in range(PER_CELL)]
        )
        con.commit()
        con.close()
        for j in range(projects):
            sampler = None if sampler_for is None else sampler_for(j)
            with Project.create(
                tmp / f"p{j}.dpdesk",
                name="small noise",
                schema=schema,
                source_location=str(tmp / "blocks.sqlite"),
                source_table="t",
                total_budget=100.0,
                test_project=sampler is not None,
            ) as p:
                cube = p.cube()
                for b in names:
                    scales, families, fused = [], set(), False
                    for where, alpha in ALPHAS:
                        text = f'count(block="{b}"' + (f", {where})" if where else ")")
                        a = p.assess(p.add_request(text, 1.0, _delta_for(alpha)).id)
                        r = p.release(a, sampler)
                        families.add(r.kind if r.kind != "fresh" else a.family)
                        fused |= bool(a.fused)
                        scales.append(a.sensitivity / float(a.spend_alpha))
                    rid = p.add_request(_query(EXAMPLE[0], b), EXAMPLE[1], EXAMPLE[2]).id
                    ex = p.assess(rid)
                    example = (ex.decision, float(ex.confidence_at_eps))
                    p.reject(rid, "calibration: the issue's example is only assessed")
                    rows = []
                    for template, eps, delta in LATER:
                        a = p.assess(p.add_request(_query(template, b), eps, delta).id)
                        if a.decision != "infer":
                            rows.append((a.decision, float(a.confidence_at_eps), 0.0, 1 - delta, False))
                            continue
                        release = p.release(a, sampler)
                        lo, hi = release.interval
                        truth = true_answer(a.request.query, cube)
                        hit = lo - 1e-9 <= truth <= hi + 1e-9  # windows end on counts up to rounding
                        rows.append(
                            (
                                a.decision,
                                float(a.confidence_at_eps),
                                float(a.error_bound or 0.0),
                                1 - delta,
                                hit,
                            )
                        )
                    d, c, e, pr, h = zip(*rows)
                    out.append(BlockResult(d, c, e, pr, h, example, max(scales), frozenset(families), fused))
    return out, time.perf_counter() - t0
