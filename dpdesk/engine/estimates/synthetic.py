"""A maximum-entropy synthetic table as a release (seed §4): the fit to the released answers, ``rows``
synthetic rows drawn with a recorded seed, the digest of those rows and a fit report per released row.

Like the estimate (:mod:`.plans`, whose public inputs it shares) it reads the released history only and
is a zero-cost :class:`~dpdesk.engine.mechanisms.base.ReleasePlan` the one release path records.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.estimates.maxent import MaxEntFit, fit_maxent
from dpdesk.engine.estimates.plans import FOLDS, HistoryInputs, _num, _prior_line
from dpdesk.engine.estimates.privacy_map import SYNTHETIC_TABLE
from dpdesk.engine.estimates.released import Released
from dpdesk.engine.limits import check_whole
from dpdesk.engine.mechanisms.base import Basis
from dpdesk.engine.mechanisms.charge import Charge
from dpdesk.engine.mechanisms.postprocessing import PostProcessing

__all__ = ["MAXENT_TAUS", "SyntheticPlan", "answers_on_rows", "plan_synthetic"]

# the τ grid of the maximum-entropy fit (scaled weights, |v| ≤ τ)
MAXENT_TAUS = (0.001, 0.01, 0.03, 0.1, 1.0)


def answers_on_rows(query: Any, codes: np.ndarray, shape: tuple[int, ...]) -> float:
    """A query's answer on a table of rows given as attribute codes (``codes[:, d]``)."""
    if hasattr(query, "values_at_codes"):
        return float(np.sum(query.values_at_codes(codes)))
    if query.terms is not None:
        total = 0.0
        for t in query.terms:
            v = np.full(codes.shape[0], t.weight)
            for d, f in enumerate(t.factors):
                v *= f[codes[:, d]]
            total += float(v.sum())
        return total
    flat = np.ravel_multi_index(tuple(codes[:, d] for d in range(len(shape))), shape)
    dense = np.zeros(int(math.prod(shape)))
    dense[query.indices] = query.values
    return float(dense[flat].sum())


@dataclass(frozen=True)
class SyntheticPlan:
    """A maximum-entropy synthetic table drawn from released history, ready to be recorded."""

    codes: np.ndarray  # rows × attributes (read-only); becomes the exported table after recording
    seed: int
    fit: MaxEntFit
    tau_source: str
    cv_mse: tuple[tuple[float, float], ...]  # (τ, CV estimate of the mean squared misfit), when chosen by CV
    released: Released
    table_size: float
    size_source: str
    prior_attributes: tuple[str, ...]
    basis: Basis
    mechanism: PostProcessing = SYNTHETIC_TABLE
    request_id: str | None = None
    releasable: bool = True
    reason: str = "a synthetic table from released answers (post-processing)"
    needs_data: bool = False
    charge: Charge = field(default_factory=Charge)

    @property
    def rows(self) -> int:
        return int(self.codes.shape[0])

    @property
    def digest(self) -> str:
        """SHA-256 of the synthetic rows' codes (int64, C order): recorded, so the export can be checked."""
        return hashlib.sha256(np.ascontiguousarray(self.codes, dtype=np.int64).tobytes()).hexdigest()

    def report(self) -> list[tuple[int, float, float, float]]:
        """Per released row: ``(row, released, fitted n·p[f], synthetic table's answer scaled to n)``."""
        scale = self.table_size / self.rows
        return [
            (
                i,
                float(self.released.answers[i]),
                float(self.fit.expected[i]),
                scale * answers_on_rows(q, self.codes, self.released.shape),
            )
            for i, q in enumerate(self.released.queries)
        ]

    @property
    def warnings(self) -> tuple[str, ...]:
        f = self.fit
        if f.converged:
            return ()
        return (
            f"the maximum-entropy fit did not pass its convergence test at τ = {f.tau:g} after {f.rounds} "
            f"rounds (largest misfit gradient {f.max_gradient:.3g} noise scales, importance-sample "
            f"efficiency {f.ess:.2f}): the table follows the released answers less closely than "
            "stated; try a smaller τ",
        )

    def record(self) -> dict[str, Any]:
        f = self.fit
        misfit = f.misfit(self.released.answers)
        return {
            "rows": self.rows,
            "seed": self.seed,
            "attributes": len(self.released.shape),
            "description": f"synthetic table of {self.rows:,} rows (maximum entropy, τ = {f.tau:g}, seed {self.seed})",
            "rows_sha256": self.digest,
            "values": [],
            "fitted_to": "consistent projection of the answers",
            "tau": f.tau,
            "tau_source": self.tau_source,
            "cv": [[t, _num(m)] for t, m in self.cv_mse],
            "table_size": self.table_size,
            "table_size_source": self.size_source,
            "prior_attributes": list(self.prior_attributes),
            "history_prefix": len(self.released),
            "converged": bool(f.converged),
            "rounds": f.rounds,
            "ess": f.ess,
            "max_gradient": _num(f.max_gradient),
            "max_abs_misfit": float(np.max(np.abs(misfit))) if misfit.size else 0.0,
            "rms_misfit": float(np.sqrt(np.mean(misfit**2))) if misfit.size else 0.0,
        }

    def draw(self, cube: Any, sampler: Any, *, allow_insecure: bool = False) -> dict[str, Any]:
        return {}  # post-processing: nothing is drawn from the data

    def to_json(self) -> dict[str, Any]:
        out = self.record()
        out.update(
            kind=self.mechanism.kind, mechanism=self.mechanism.name, alpha=0.0, warnings=list(self.warnings)
        )
        return out

    def lines(self) -> list[str]:
        r = self.record()
        out = [
            f"synthetic table of {self.rows:,} rows from {len(self.released)} released answers "
            f"(maximum entropy, seed {self.seed})",
            "fitted to the released answers made consistent with each other and the table size (their BLUE)",
            f"trade-off τ = {self.fit.tau:g} ({self.tau_source}); fit: misfit of the released answers "
            f"{r['rms_misfit']:.3g} noise scales r.m.s., {r['max_abs_misfit']:.3g} at most",
            f"table size: {self.table_size:.6g} — {self.size_source}",
            _prior_line(self.prior_attributes),
        ]
        out += [f"WARNING: {w}" for w in self.warnings]
        out.append("privacy cost: none (post-processing of released answers; recorded in the ledger)")
        return out


# Synthetic rows are drawn and written in memory: 10⁸ rows of a few attributes is gigabytes already.
MAX_SYNTHETIC_ROWS = 10**8


def plan_synthetic(
    inputs: HistoryInputs,
    *,
    rows: int,
    seed: int = 0,
    tau: float | None = None,
    particles: int = 50_000,
    progress: Callable[[float], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> SyntheticPlan:
    """Fit the maximum-entropy distribution to the released rows and draw ``rows`` synthetic rows (seeded).

    ``tau`` None chooses it from :data:`MAXENT_TAUS` by 5-fold cross-validation of the released rows'
    held-out misfit (fewer than 10 rows: the middle of the grid).
    """
    from dpdesk.engine.estimates.maxent_cv import cross_validate_maxent

    if isinstance(rows, bool) or not isinstance(rows, (int, np.integer)) or rows < 1:
        raise DpdeskError(f"rows ({rows!r}) must be a positive whole number")
    check_whole(rows, "rows", 1, MAX_SYNTHETIC_ROWS)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise DpdeskError(f"seed ({seed!r}) must be a non-negative whole number")
    check_whole(seed, "seed", 0, 2**63 - 1)
    if tau is not None and not (math.isfinite(tau) and tau > 0):
        raise DpdeskError(f"tau ({tau!r}) must be a positive finite number")
    released, n, prior = inputs.released, inputs.table_size, inputs.prior
    if n is None:
        raise DpdeskError(
            "a synthetic table needs the table size: declare it (the known-bounds prior), give it, "
            "or release the total count first"
        )

    def part(lo: float, hi: float) -> Callable[[float], None] | None:
        return None if progress is None else (lambda f: progress(lo + (hi - lo) * f))

    cv: tuple[tuple[float, float], ...] = ()
    if tau is None:
        if len(released) >= 2 * FOLDS:
            res = cross_validate_maxent(
                released,
                table_size=n,
                taus=MAXENT_TAUS,
                prior=prior,
                k=FOLDS,
                seed=seed,
                particles=particles,
                consistent=True,
                progress=part(0.0, 0.6),
                cancelled=cancelled,
            )
            tau, how = res.best_tau, "cross-validation"
            cv = tuple(zip(map(float, res.taus), map(float, res.mse)))
        else:
            tau, how = (
                MAXENT_TAUS[len(MAXENT_TAUS) // 2],
                f"default (fewer than {2 * FOLDS} released answers)",
            )
    else:
        how = "given"
    fit = fit_maxent(
        released,
        table_size=n,
        tau=tau,
        prior=prior,
        particles=particles,
        seed=seed,
        consistent=True,
        progress=part(0.6, 0.8),
        cancelled=cancelled,
    )
    codes = fit.sample(int(rows), np.random.default_rng(seed), progress=part(0.8, 1.0), cancelled=cancelled)
    codes.setflags(write=False)
    return SyntheticPlan(
        codes, int(seed), fit, how, cv, released, n, inputs.size_source, inputs.prior_attributes, inputs.basis
    )
