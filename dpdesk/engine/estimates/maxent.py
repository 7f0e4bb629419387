"""The maximum-entropy distribution behind released answers, and synthetic tables drawn from it.

The Chen–Zhou–Bhowmick seed §4: among distributions ``p`` over the cells, minimise
``KL(p ‖ p0) + Σ_i β_i |a_i/n − p[f_i]|`` (Eqs. 26, 41): relative entropy to the prior ``p0`` plus a soft
L1 penalty on the misfit to each released answer. It is **not** exactly consistent with the answers:
its dual (Eq. 37) maximises ``Σ_i w_i a_i/n − ln Z_w`` over the box ``|w_i| ≤ β_i`` and the fit becomes
exact only as the box grows. dpdesk writes ``β_i = τ·n/s_i`` with ``s_i = σ_i/√2`` (the Laplace scale),
i.e. in scaled weights ``v_i = w_i s_i/n`` the box is ``|v_i| ≤ τ`` and the gradient is each row's
misfit in units of its noise scale, ``(a_i − n·p_w[f_i])/s_i``. τ is chosen by k-fold cross-validation
on the released rows, as for the shrinkage estimate.

The solver is Monte Carlo maximum likelihood (Geyer & Thompson 1992) instead of the seed's stochastic
gradient with Metropolis-within-Gibbs (no convergence test): a round draws particles from the current
fit (the prior at first, exactly; then by resampling and exact Gibbs sweeps of the clique model), and
solves the dual on those particles with importance weights *exactly* by L-BFGS-B (box constraints;
stops when the largest projected gradient is below ``gtol``, i.e. every unclipped row is matched within
``gtol`` noise scales on the sample). Rounds stop when the solution's importance weights have an
effective sample size of at least ``ess_target`` of the particles — the sample then represents the fit
it produced — or after ``max_rounds`` (reported, never hidden).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import Bounds, minimize
from scipy.special import logsumexp

from dpdesk.engine.errors import Cancelled, DpdeskError
from dpdesk.engine.estimates.features import CliqueModel, cliques_of
from dpdesk.engine.estimates.kernel import check_prior
from dpdesk.engine.estimates.released import Released

__all__ = ["MaxEntFit", "consistent_answers", "fit_maxent"]


def _ro(a: Any) -> np.ndarray:
    out: np.ndarray = np.array(a, copy=True)
    out.setflags(write=False)
    return out


@dataclass(frozen=True, eq=False)
class MaxEntFit:
    """A fitted maximum-entropy distribution (post-processing of ``released`` only).

    ``particles`` (codes) with normalised ``weights`` represent ``p_w``; ``expected`` is ``n·p_w[f_i]``
    for every released row; ``rounds``, ``ess`` and ``max_gradient`` report the solver's convergence.
    """

    shape: tuple[int, ...]
    tau: float
    table_size: float
    scaled_weights: np.ndarray  # v_i, |v_i| ≤ τ
    expected: np.ndarray
    particles: np.ndarray
    weights: np.ndarray
    log_base: np.ndarray  # importance log-weights of the particles relative to the prior
    rounds: int
    evaluations: int
    converged: bool
    ess: float
    max_gradient: float
    model: CliqueModel
    scales: np.ndarray

    @property
    def w(self) -> np.ndarray:
        return np.asarray(self.scaled_weights * self.table_size / self.scales)

    def misfit(self, answers: np.ndarray) -> np.ndarray:
        """Each released row's ``(a_i − n·p_w[f_i]) / s_i``."""
        return np.asarray((answers - self.expected) / self.scales)

    def sample(
        self,
        rows: int,
        rng: np.random.Generator,
        *,
        sweeps: int = 5,
        progress: Callable[[float], None] | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> np.ndarray:
        """``rows`` synthetic rows (codes) from ``p_w``: resampled particles moved by exact Gibbs sweeps."""
        return draw_rows(
            self.model,
            self.model.potentials(self.w),
            self.particles,
            lambda k: _systematic(self.weights, k, rng),
            rows,
            rng,
            sweeps=sweeps,
            progress=progress,
            cancelled=cancelled,
        )


def draw_rows(
    model: CliqueModel,
    theta: list[np.ndarray],
    particles: np.ndarray,
    pick: Callable[[int], np.ndarray],
    rows: int,
    rng: np.random.Generator,
    *,
    sweeps: int,
    progress: Callable[[float], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> np.ndarray:
    """``rows`` synthetic rows: blocks of particles (``pick(k)`` indices) moved by ``sweeps`` Gibbs sweeps."""
    if not (isinstance(rows, (int, np.integer)) and rows > 0):
        raise DpdeskError(f"rows ({rows!r}) must be a positive integer")
    out = np.empty((int(rows), particles.shape[1]), dtype=np.int64)
    step = 1 << 17
    for s in range(0, int(rows), step):
        if cancelled is not None and cancelled():
            raise Cancelled()
        k = min(step, int(rows) - s)
        block = particles[pick(k)].copy()
        for _ in range(sweeps):
            model.sweep(block, theta, rng)
        out[s : s + k] = block
        if progress is not None:
            progress((s + k) / rows)
    return out


def _systematic(weights: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """Systematic resampling: ``k`` indices with expected counts ``k·weights``, shuffled."""
    pos = (rng.random() + np.arange(k)) / k
    idx = np.searchsorted(np.cumsum(weights), pos, side="right")
    idx = np.minimum(idx, weights.size - 1)
    rng.shuffle(idx)
    return idx


class _Problem:
    """The dual (seed Eq. 37) on a fixed particle set, with importance log-weights ``base``."""

    def __init__(
        self,
        model: CliqueModel,
        codes: list[np.ndarray],
        base: np.ndarray,
        answers: np.ndarray,
        scales: np.ndarray,
        n: float,
        rows: np.ndarray,
    ) -> None:
        self.model, self.codes, self.base = model, codes, base
        self.rows = rows  # released rows in the objective (others get weight 0)
        self.target = np.zeros(scales.size)
        self.target[rows] = answers[rows] / scales[rows]
        self.scales, self.n = scales, n
        self.mask = np.zeros(scales.size, dtype=bool)
        self.mask[rows] = True

    def weights_at(self, v: np.ndarray) -> tuple[np.ndarray, float]:
        w = np.where(self.mask, v * self.n / self.scales, 0.0)
        s = self.base + self.model.scores(self.model.potentials(w), self.codes)
        lz = float(logsumexp(s))
        return np.exp(s - lz), lz

    def __call__(self, v: np.ndarray) -> tuple[float, np.ndarray]:
        p, lz = self.weights_at(v)
        ef = self.model.expectations(p, self.codes, self.scales.size)
        # −(Σ v_i a_i/s_i − ln Z): minimised; gradient −(a_i − n E f_i)/s_i on the rows in use
        grad = np.where(self.mask, -(self.target - self.n * ef / self.scales), 0.0)
        return -(float(v @ self.target) - lz), grad


def consistent_answers(released: Released, table_size: float, rows: np.ndarray | None = None) -> np.ndarray:
    """The released answers made consistent with each other and with ``n``: every row's BLUE from ``rows``.

    Noisy answers almost surely violate the linear dependencies among their queries (a full marginal's
    cells sum to n; two marginals share a coarser one). Along each such dependency the fitted
    distribution does not change but the seed's dual (Eq. 37) gains linearly without bound: only the
    box stops it, so the optimum sits on the box for a reason unrelated to the fit, and the solver
    travels a flat direction of length ``τ·n/s`` to reach it (the non-convergence at large τ). Replacing
    the answers of ``rows`` by their generalised-least-squares projection (history's BLUE of each
    row with the table size known; post-processing) removes every such direction exactly. Returns the
    answers with those of ``rows`` (all when None) replaced.
    """
    from dpdesk.engine.estimates.shrinkage import ShrinkageModel

    use = np.arange(len(released)) if rows is None else np.asarray(rows, dtype=np.int64)
    sub = released.subset(use)
    out = np.array(released.answers, dtype=np.float64)
    out[use] = ShrinkageModel.fit(sub, table_size=table_size).estimate_many(sub.queries, [math.inf])[:, 0]
    return out


def fit_maxent(
    released: Released,
    *,
    table_size: float,
    tau: float,
    consistent: bool = False,
    prior: Sequence[np.ndarray] | None = None,
    particles: int = 200_000,
    rows: np.ndarray | None = None,
    seed: int = 0,
    gtol: float = 0.05,
    ess_target: float = 0.5,
    ess_min: float = 0.2,
    max_rounds: int = 6,
    sweeps: int = 3,
    start: MaxEntFit | None = None,
    progress: Callable[[float], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> MaxEntFit:
    """Fit the seed's maximum-entropy distribution to released rows (module docstring for the solver).

    Parameters
    ----------
    released : Released
        The released rows; each must depend on a few attributes (see :mod:`.features`).
    table_size : float
        The table size ``n`` (declared, or a released estimate): the answers are read as ``n·p[f_i]``.
    tau : float
        The trade-off: ``|v_i| ≤ τ``; larger fits the answers more closely.
    consistent : bool
        Fit the answers' consistent projection (:func:`consistent_answers` of the rows in use) instead of
        the raw noisy answers: the dual is then bounded without the box and the solver converges at
        any τ. ``expected`` is always compared with what the caller holds (``misfit(answers)``).
    rows : array of int or None
        Fit only these released rows (cross-validation); None fits all.
    start : MaxEntFit or None
        Warm start (weights and particles) from another fit of the same rows' model.
    """
    if not (math.isfinite(table_size) and table_size > 0):
        raise DpdeskError(f"table_size ({table_size!r}) must be a positive finite number")
    if not (tau > 0 and math.isfinite(tau)):
        raise DpdeskError(f"tau ({tau!r}) must be a positive finite number")
    shape, m = released.shape, len(released)
    use = np.arange(m) if rows is None else np.asarray(rows, dtype=np.int64)
    if consistent:
        released = _with_answers(released, consistent_answers(released, table_size, use))
    scales = np.sqrt(released.variances / 2.0)
    rng = np.random.default_rng(seed)
    model, parts, base, v = _starting_point(
        released, check_prior(prior, shape), use, tau, particles, rng, start
    )
    state = _Rounds(model, released, scales, table_size, tau, use, particles, rng)
    v, parts, base = state.run(
        v, parts, base, gtol, ess_target, ess_min, max_rounds, sweeps, progress, cancelled
    )
    codes = model.codes(parts)
    prob = _Problem(model, codes, base, released.answers, scales, table_size, use)
    p, _ = prob.weights_at(v)
    return MaxEntFit(
        shape=shape,
        tau=float(tau),
        table_size=float(table_size),
        scaled_weights=_ro(v),
        expected=_ro(table_size * model.expectations(p, codes, m)),
        particles=_ro(parts),
        weights=_ro(p),
        log_base=_ro(base),
        rounds=state.rounds,
        evaluations=state.evaluations,
        converged=state.converged,
        ess=state.ess,
        max_gradient=state.max_gradient,
        model=model,
        scales=_ro(scales),
    )


class _Rounds:
    """The fit's rounds: each solves the dual on the current particles, then (unless converged) takes a
    trust step and moves the particles to the new fit. Keeps the record :class:`MaxEntFit` reports."""

    def __init__(
        self,
        model: CliqueModel,
        released: Released,
        scales: np.ndarray,
        table_size: float,
        tau: float,
        use: np.ndarray,
        particles: int,
        rng: np.random.Generator,
    ) -> None:
        self.model, self.released, self.scales, self.n = model, released, scales, table_size
        self.tau, self.use, self.particles, self.rng = tau, use, particles, rng
        m = len(released)
        # Diagonal preconditioner: x_i = c_i v_i with c_i² ≈ the dual's curvature (n/s_i)² Var(f_i).
        sens = np.array([float(q.sensitivity) for q in released.queries])
        answers = np.abs(released.answers)
        self.c = (table_size / scales) * np.sqrt(np.maximum(answers, scales) * sens / table_size)
        self.lo, self.hi = np.zeros(m), np.zeros(m)
        self.lo[use], self.hi[use] = -tau * self.c[use], tau * self.c[use]
        self.converged, self.ess, self.max_gradient, self.rounds, self.evaluations = (
            False,
            0.0,
            math.inf,
            0,
            0,
        )

    def run(
        self,
        v: np.ndarray,
        parts: np.ndarray,
        base: np.ndarray,
        gtol: float,
        ess_target: float,
        ess_min: float,
        max_rounds: int,
        sweeps: int,
        progress: Callable[[float], None] | None,
        cancelled: Callable[[], bool] | None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(v, particles, log-base)`` after the last round."""
        model, c, n, scales = self.model, self.c, self.n, self.scales
        for r in range(1, max_rounds + 1):
            self.rounds = r
            if cancelled is not None and cancelled():
                raise Cancelled()
            prob = _Problem(model, model.codes(parts), base, self.released.answers, scales, n, self.use)
            res = _solve(prob, v, c, Bounds(self.lo, self.hi), self.tau, self.use, gtol)
            self.evaluations += res.nfev
            target_v = np.clip(res.x / c, self.lo / np.maximum(c, 1e-300), self.hi / np.maximum(c, 1e-300))
            self.max_gradient = _projected_gradient(prob(target_v)[1], target_v, self.tau, self.use)
            p, _ = prob.weights_at(target_v)
            self.ess = float(1.0 / np.sum(p * p)) / self.particles
            if progress is not None:
                progress(r / max_rounds)
            if self.ess >= ess_target and self.max_gradient <= gtol * 1.01:
                self.converged = True
                return target_v, parts, base
            v, p, self.ess = _trust_step(prob, v, target_v, p, self.ess, ess_min, self.particles)
            if r == max_rounds:
                break
            # next round: particles from the current fit (resample, then exact Gibbs sweeps)
            parts = parts[_systematic(p, self.particles, self.rng)]
            theta = model.potentials(v * n / scales)
            for _ in range(sweeps):
                model.sweep(parts, theta, self.rng)
            base = _base(model, parts, v, n, scales)
        return v, parts, base


def _with_answers(released: Released, answers: np.ndarray) -> Released:
    return Released(released.shape, released.queries, answers, released.variances, released.fourth_moments)


def _starting_point(
    released: Released,
    prior: tuple[np.ndarray, ...],
    use: np.ndarray,
    tau: float,
    particles: int,
    rng: np.random.Generator,
    start: MaxEntFit | None,
) -> tuple[CliqueModel, np.ndarray, np.ndarray, np.ndarray]:
    """The model, particles, their importance log-weights and the weights ``v`` a fit starts from: a warm
    start's (same particles and shape), or the prior's."""
    shape, m = released.shape, len(released)
    if start is not None:
        if start.particles.shape[0] != particles or start.shape != shape:
            raise DpdeskError(
                "maximum entropy: a warm start must come from a fit with the same particles and shape"
            )
        v = np.where(np.isin(np.arange(m), use), np.clip(start.scaled_weights, -tau, tau), 0.0)
        return start.model, start.particles.copy(), np.array(start.log_base), v
    cliques, constant = cliques_of(released.queries, shape)
    model = CliqueModel(shape, cliques, prior, constant)
    return model, model.sample_prior(rng, particles), np.zeros(particles), np.zeros(m)


def _solve(
    prob: _Problem, v: np.ndarray, c: np.ndarray, bounds: Bounds, tau: float, use: np.ndarray, gtol: float
) -> Any:
    """One round's L-BFGS-B on the dual in preconditioned coordinates ``x = c·v``, stopped by the
    convergence test (every unclipped row matched within ``gtol`` noise scales)."""
    last: dict[str, np.ndarray] = {}

    def scaled(x: np.ndarray) -> tuple[float, np.ndarray]:
        f, g = prob(x / c)
        last["x"], last["g"] = x.copy(), g
        return f, g / c

    def stop(intermediate_result: Any) -> None:
        x = intermediate_result.x
        if (
            "x" in last
            and np.array_equal(x, last["x"])
            and _projected_gradient(last["g"], x / c, tau, use) <= gtol
        ):
            raise StopIteration

    return minimize(
        scaled,
        v * c,
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        callback=stop,
        options={"maxiter": 5000, "gtol": 0.0, "ftol": 0.0, "maxcor": 30},
    )


def _trust_step(
    prob: _Problem,
    v: np.ndarray,
    target_v: np.ndarray,
    p: np.ndarray,
    ess: float,
    ess_min: float,
    particles: int,
) -> tuple[np.ndarray, np.ndarray, float]:
    """Move only as far as the particles still represent the fit (ESS ≥ ``ess_min``), from ``v`` towards
    ``target_v`` (whose weights are ``p``): ``(v, weights, ESS)``."""
    step, v_new = 1.0, target_v
    while ess < ess_min and step > 1e-3:
        step *= 0.5
        v_new = v + step * (target_v - v)
        p, _ = prob.weights_at(v_new)
        ess = float(1.0 / np.sum(p * p)) / particles
    return v_new, p, ess


def _base(model: CliqueModel, parts: np.ndarray, v: np.ndarray, n: float, scales: np.ndarray) -> np.ndarray:
    """Importance log-weights of particles drawn from ``p_v`` relative to the prior: ``−Σ w_i f_i``."""
    return -model.scores(model.potentials(v * n / scales), model.codes(parts))


def _projected_gradient(grad: np.ndarray, v: np.ndarray, tau: float, use: np.ndarray) -> float:
    g = grad[use]
    x = v[use]
    at_hi = (x >= tau * (1 - 1e-9)) & (g < 0)
    at_lo = (x <= -tau * (1 - 1e-9)) & (g > 0)
    g = np.where(at_hi | at_lo, 0.0, g)
    return float(np.max(np.abs(g))) if g.size else 0.0
