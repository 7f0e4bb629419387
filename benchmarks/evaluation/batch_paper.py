"""Batch answering on the paper's own settings (issue 19: "never worse than one by one").

The settings are those of ``eval_all.py``'s paper section. Bounded: total 1, empty history,
2ε ~ U[1, 1000]. Unbounded: no total, 2ε ~ U[50, 1000], and an initial 0.3-DP hierarchical tree over
the region of interest. Both use δ = 0.2 and Eq. 37–38 requests. Each stream runs under three systems
with their own simulation noise: the paper's inference system, dpdesk one by one (fusion, no policy),
and dpdesk batch (the look-ahead plan per batch of 20, no policy). Per stream we keep the answered
count, the final system cost ᾱ, hits and the summed claimed confidences.
"""

from __future__ import annotations

import numpy as np

from evaluation import batch_eval as B
from evaluation import data as D
from evaluation import systems as S

SETTINGS = {"bounded": ((1.0, 1000.0), 1.0, None), "unbounded": ((50.0, 1000.0), 1e12, 0.3)}
PAPER_SYSTEMS = ("paper inference", "dpdesk one by one", "dpdesk batch")
TREE_LEAVES = 256


def stream(ds: D.Dataset, setting: str, rep: int, k: int) -> list[D.RequestSpec]:
    """The paper section's stream for (dataset, setting, repetition) — the same generator and seed."""
    rng = np.random.default_rng([rep, 11 if setting == "bounded" else 13, len(ds.name)])
    return D.request_stream(ds.n, ds.cube.schema.shape, k, SETTINGS[setting][0], B.DELTA, rng)


def run(system: str, ds: D.Dataset, setting: str, rep: int, k: int, share: float) -> B.Outcome:
    _eps2, total, tree_alpha = SETTINGS[setting]
    specs = stream(ds, setting, rep, k)
    initial = S.tree_rows(min(TREE_LEAVES, ds.n), ds.cube.schema.shape, tree_alpha) if tree_alpha else []
    seed = 1000 * rep + PAPER_SYSTEMS.index(system)
    if system == "dpdesk batch":
        return B.run_batch(ds, specs, batch=20, cap=1.0, seed=seed, share=share, total=total, initial=initial)
    return B.run_one_by_one(
        ds, specs, fusion=system != "paper inference", policy=None, seed=seed, total=total, initial=initial
    )
