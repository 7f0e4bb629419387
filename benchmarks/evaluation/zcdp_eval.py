"""Gaussian noise with per-cell zCDP accounting against pure ε (issue 37): systems and their runs.

Every system answers one request at a time over the same stream and cube, at the same total: ε = 1 and,
for the zCDP systems, δ = 10⁻⁶ (a pure-ε system's guarantee is (1, 0)-DP, stronger than (1, 10⁻⁶)). Noise
is simulation noise from a seeded sampler (continuous Laplace or continuous Gaussian, the paper's kind of
mechanism for every system), so runs are reproducible; the decisions read public inputs only.

* ``naive OpenDP, pure ε`` — every request answered fresh at Thm 5.3's α, composed over the whole table
  (Σα ≤ 1, whatever cells a request touches): what a per-request OpenDP user gets; a request it cannot
  afford is skipped and later cheaper ones are still answered;
* ``naive OpenDP, zCDP`` — the same with Gaussian noise at the accuracy's σ, ρ composed over the whole
  table (Σρ ≤ the largest ρ whose tight conversion is within (1, 10⁻⁶)) — the zCDP user of OpenDP/Tumult;
* ``paper inference`` — pure ε, per-cell costs (paper Thm 5.4), infer when history meets (ε, δ), else
  Thm 5.3's fresh Laplace answer (paper Fig. 4; ``fusion=False``);
* ``dpdesk pure ε`` — today's default: as above with a fresh answer fused with history at the smallest α
  that meets (ε, δ);
* ``dpdesk zCDP`` — the same engine (inference, fusion, the exact posterior of the history's noise,
  Laplace and Gaussian rows alike), fresh answers with Gaussian noise priced by the accuracy
  (σ = ε/z_{1−δ/2}, or the fused search), per-cell ρ (Laplace rows ε²/2 each), and the hard stop on the
  largest cell's ρ converted to ε at 10⁻⁶ with the tight conversion (CKS20 Cor. 13).

The zCDP systems use the engine's pieces directly (``assess`` prices and decides with the Gaussian family;
:mod:`dpdesk.engine.budget.zcdp` accounts and stops), so that many streams and systems fit one run; the
product path — real zCDP project files — is benchmarks/eval_zcdp_product.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dpdesk.engine.answering.fresh import release_fresh, true_answer
from dpdesk.engine.answering.workflow import Request, Settings, assess
from dpdesk.engine.budget import zcdp
from dpdesk.engine.budget.mode import ZcdpAccounting
from dpdesk.engine.inference.history import History, HistoryRow
from dpdesk.engine.mechanisms.gaussian import GAUSSIAN
from dpdesk.engine.mechanisms.laplace import LAPLACE
from dpdesk.engine.mechanisms.noise import SeededSampler
from evaluation.data import Dataset, RequestSpec

TOTAL, PRIVACY_DELTA = 1.0, 1e-6
SYSTEMS = ("naive OpenDP, pure ε", "naive OpenDP, zCDP", "paper inference", "dpdesk pure ε", "dpdesk zCDP")
UNLIMITED = 1e12  # the pricing call's own (pure) total: the zCDP hard stop is applied on top of it


@dataclass
class Run:
    """One system on one stream: per request whether it was answered, fresh, hit; the claims; the cost."""

    answered: np.ndarray
    fresh: np.ndarray
    hits: np.ndarray
    claimed: np.ndarray  # the confidence claimed for each answer (0 when not answered)
    system_cost: float = 0.0  # the final guarantee in ε (pure ε, or the converted largest ρ)
    rho: float = 0.0  # the largest per-cell ρ (zCDP systems)
    fresh_per_cell: np.ndarray = field(default_factory=lambda: np.zeros(0))  # fresh rows touching each cell

    @classmethod
    def empty(cls, k: int, n: int) -> Run:
        return cls(
            np.zeros(k, bool), np.zeros(k, bool), np.zeros(k, bool), np.zeros(k), 0.0, 0.0, np.zeros(n)
        )


def _start(ds: Dataset, initial, seed: int) -> tuple[History, np.ndarray, np.ndarray]:
    """History after the initial rows (Laplace, as in the paper), their per-cell ε and per-cell ρ."""
    hist, init = History(ds.cube.schema.shape), SeededSampler(seed + 7919)
    eps_cells, rho_cells = np.zeros(ds.n), np.zeros(ds.n)
    for q, a in initial:
        hist.append(
            HistoryRow(q, a, init.release("laplace", true_answer(q, ds.cube), q.sensitivity / a), "laplace")
        )
        charge = LAPLACE.charge_for(q, a)
        eps_cells += charge.dense(ds.n)
        rho_cells += zcdp.rho_charge(charge, ds.n).dense(ds.n)  # each row its own release: ε²/2 per cell
    return hist, eps_cells, rho_cells


def _claim(a, family) -> float:
    if a.fused_confidence is not None:
        return float(a.fused_confidence)
    q = a.request.query
    return 1.0 - family.tail(family.scale(q.sensitivity, float(a.spend_alpha)), a.request.eps)


def run_naive(ds: Dataset, specs: list[RequestSpec], *, zcdp_mode: bool, seed: int) -> Run:
    out = Run.empty(len(specs), ds.n)
    sampler = SeededSampler(seed)
    fam = GAUSSIAN if zcdp_mode else LAPLACE
    budget = zcdp.rho_for(TOTAL, PRIVACY_DELTA) if zcdp_mode else TOTAL
    spent = 0.0
    for i, s in enumerate(specs):
        q = s.query
        alpha = fam.alpha_for(q.sensitivity, s.eps, s.delta)
        cost = fam.rho(alpha) if zcdp_mode else alpha
        if spent + cost > budget:
            continue
        spent += cost
        y = sampler.release(fam, true_answer(q, ds.cube), fam.scale(q.sensitivity, alpha))
        out.answered[i] = out.fresh[i] = True
        out.hits[i] = abs(y - true_answer(q, ds.cube)) <= s.eps + 1e-9
        out.claimed[i] = 1.0 - fam.tail(fam.scale(q.sensitivity, alpha), s.eps)
        out.fresh_per_cell += np.abs(q.dense()) > 0
    out.rho = spent if zcdp_mode else 0.0
    out.system_cost = zcdp.epsilon_tight(spent, PRIVACY_DELTA) if zcdp_mode else spent
    return out


def run_one_by_one(
    ds: Dataset,
    specs: list[RequestSpec],
    *,
    zcdp_mode: bool,
    fusion: bool,
    seed: int,
    initial=(),
    total: float = TOTAL,
    progress=None,
) -> Run:
    """Paper Fig. 4 with dpdesk's engine, one request at a time (see the module notes)."""
    out = Run.empty(len(specs), ds.n)
    hist, eps_cells, rho_cells = _start(ds, initial, seed)
    sampler = SeededSampler(seed)
    fam = GAUSSIAN if zcdp_mode else LAPLACE
    # zCDP: the pricing call's own total is unlimited (the zCDP hard stop below is the one applied); its
    # accounting says the Gaussian charges are in ρ
    accounting = ZcdpAccounting(TOTAL, PRIVACY_DELTA) if zcdp_mode else None
    settings = Settings(UNLIMITED if zcdp_mode else total, fusion=fusion, accounting=accounting)
    zeros = np.zeros(ds.n)
    for i, s in enumerate(specs):
        req = Request(str(i), s.query, s.eps, s.delta)
        a = assess(hist, req, settings, family=fam, cell_costs=zeros if zcdp_mode else eps_cells)
        theta = true_answer(s.query, ds.cube)
        if a.decision == "infer":
            released, claim = a.release_estimate, float(a.confidence_at_eps)
        elif a.decision == "spend":
            charge = fam.charge_for(s.query, float(a.spend_alpha))
            if zcdp_mode:
                preview = zcdp.zcdp_preview(rho_cells, total, PRIVACY_DELTA, charge)
                if not preview.fits:
                    continue
                rho_cells = np.asarray(preview.cell_rho_after)
            else:
                eps_cells = np.asarray(a.budget.cell_costs_after)
            fresh = release_fresh(a, ds.cube, sampler, allow_insecure=True)
            hist.append(fresh.history_row())
            released, claim = fresh.released, _claim(a, fam)
            out.fresh[i] = True
            out.fresh_per_cell += np.abs(s.query.dense()) > 0
        else:
            continue
        out.answered[i] = True
        out.hits[i] = abs(released - theta) <= s.eps + 1e-9
        out.claimed[i] = claim
        if progress is not None:
            progress(i + 1)
    out.rho = float(rho_cells.max()) if zcdp_mode else 0.0
    out.system_cost = zcdp.epsilon_tight(out.rho, PRIVACY_DELTA) if zcdp_mode else float(eps_cells.max())
    return out


def run(system: str, ds: Dataset, specs: list[RequestSpec], *, seed: int, initial=(), total=TOTAL) -> Run:
    if system == "naive OpenDP, pure ε":
        return run_naive(ds, specs, zcdp_mode=False, seed=seed)
    if system == "naive OpenDP, zCDP":
        return run_naive(ds, specs, zcdp_mode=True, seed=seed)
    zc = system == "dpdesk zCDP"
    fusion = system != "paper inference"
    return run_one_by_one(ds, specs, zcdp_mode=zc, fusion=fusion, seed=seed, initial=initial, total=total)


def answers_per_cell(alpha_laplace: float, alpha_gauss: float) -> tuple[float, float]:
    """How many fresh answers one cell can pay for at one accuracy: pure ε ``1/α`` against zCDP
    ``ρ_budget/(α_G²/2)`` (the crossover in k that the stream measurements show)."""
    return TOTAL / alpha_laplace, zcdp.rho_for(TOTAL, PRIVACY_DELTA) / GAUSSIAN.rho(alpha_gauss)
