"""The seed's maximum-entropy distribution for released marginals (§4): Gibbs particles and stochastic
scaling, with a stated convergence test.

The model is ``p(t) ∝ p0(t)·exp(Σ_k θ_k[t_{A_k}])`` (seed Eq. 36, one log-potential per released cell)
with the seed's box ``|θ| ≤ τ·n/s`` (Eq. 37, ``s`` the Laplace scale). Exact inference is out of reach
(a complete pairwise graph over the attributes has one junction-tree clique: the whole domain), so
expectations come from **Gibbs sampling**, as in the seed, but with a convergence test.

**Targets.** With ``consistent`` (default) the fit's targets ``a`` are :func:`nonnegative_marginals`
(table size ``n`` kept): consistent, so one distribution can meet them all, and non-negative, so
a distribution can meet each cell. (Clipping the plain projection's negative cells instead leaves
targets no distribution meets: on §5.2 a floor of 0.23 noise scales RMS under every fit's misfit.)

**Solver** (a Robbins–Monro stochastic approximation of iterative scaling, with Polyak–Ruppert
averaging). θ starts (``start="bethe"``) from each marginal's pointwise mutual information with the
1-way targets as margins, or (``"independent"``) from the 1-way targets alone. A round: ``sweeps``
exact systematic-scan Gibbs sweeps of ``particles`` persistent chains under the iterate θ_r; then one
pass over the marginals, one at a time, of the linearised scaling step

    θ_k += clip(η_r·(a_k − μ̂_k^w)/(a_k + κ), ±trust),  then into the box,

where ``μ̂_k^w`` are the particles' counts under importance weights ``exp(Σ Δθ)`` of the updates made
so far in the pass (so overlapping marginals do not each move the components they share) and
``κ = n/particles`` (one particle's weight); the particles are then resampled by those weights. The
step is the Newton step of the dual in a cell's own coordinate and it is **unbiased in counts**: its
expectation vanishes exactly where ``E_θ[μ̂] = a``. (The log-ratio of iterative proportional fitting
is not: its Jensen bias raises every sparsely sampled cell each round; on §5.2 it left the largest
cells ~10 % short.) ``η_r = 1`` while the in-loop misfit keeps falling (by a factor ``plateau`` per
round, for at most ``burn`` rounds), then ``η = (j + 1)^−decay`` in the j-th round after. The
returned θ is the **average of the iterates over the latter half of that decaying phase**
(Polyak–Ruppert): with ``0.5 < decay < 1`` the steps stay large enough to move along the slowly
contracting directions of the sequential pass (a ``1/j`` step sums only like ``log j``), and the
average removes the Monte Carlo jitter the larger steps leave in the last iterate. Measured on §5.2
(RMS misfit of θ on fresh chains, noise scales): ``1/j`` with clipped targets, last iterate
0.52–0.71 and its average no better; ``1/j`` with these targets, last iterate 0.30 (once);
``decay = 0.6``, last iterate 0.58–0.64, average ≤ 0.2.

**Convergence test**, on the average θ̄ only, and only on chains independent of everything it was
fitted to: ``particles`` fresh chains drawn from the prior and swept ``confirm`` times under θ̄ (the
persistent chains are resampled copies of one another and remember the samples θ was fitted to:
their counts vary more than independent draws). It runs once the decaying phase has
``2·confirm_every`` rounds and then every ``confirm_every`` rounds. With ``d_i = μ̂_i − a_i`` and
``v_i = a_i(n − a_i)/M`` the binomial variance of a count from ``M`` particles, over the ``m``
released cells not held on the box with their misfit pointing outward:

- ``B = mean_i(d_i² − v_i)/s²``, the mean squared misfit beyond Monte Carlo error in noise scales²
  (``bias_rms = √max(B, 0)``); its standard error at zero misfit is ``√(2Σv_i²)/(m s²)``
  (``check.bias_se``), dominated by the largest cells;
- ``Z = mean_i(d_i² − v_i)/v_i`` over the ``m_z`` of them where at least one particle is expected
  (``a_i ≥ κ``), the same in units of each cell's own Monte Carlo variance; at zero misfit its mean
  is 0 and its standard error at most ``√(3/m_z)`` (``var((X − λ)²)/λ² = 2 + 1/λ`` for Poisson
  counts of ``λ ≥ 1`` particles); reported in noise scales as ``z_rms`` and its one-sided 97.7 %
  upper bound ``z_upper`` from ``Z + 2√(3/m_z)``.

Converged when ``B + 2·bias_se ≤ gtol²`` (``check.bias_upper ≤ gtol``): with 97.7 % confidence the
RMS misfit of θ̄ beyond Monte Carlo error is at most ``gtol`` noise scales. The bound needs
``2·bias_se`` below ``gtol²``: with too few particles the test cannot pass. Each test is a 2.3 %
test; a fit whose RMS misfit exceeds ``gtol`` and is tested ``k`` times passes with probability below
``k·2.3 %`` (``tests`` lists every test). (At ``gtol = 0.5`` the fit adds on average at most
``s²/4`` to a cell's squared error, an eighth of the release's own noise variance ``2s²``.) ``Z`` is
reported, not tested: it weighs small cells by their small Monte Carlo variance. Where the test
passes, the expected counts match the targets to ``gtol`` noise scales and cells held on the box push
outward: the box-constrained dual's optimality conditions, i.e. the seed's solution, to that
tolerance. ``max_iter`` rounds without it: ``converged`` is False (reported, never hidden) and the
average is tested once more so that ``check`` describes the θ returned. ``a`` is the target's
non-negative part (only ``consistent=False`` has negative targets). On return ``particles`` are the
fresh chains of the last test, under the returned θ.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpdesk.engine.errors import Cancelled, DpdeskError
from dpdesk.engine.estimates.features import CliqueModel
from dpdesk.engine.estimates.fitcheck import FitCheck, check_fit
from dpdesk.engine.estimates.marginals import Marginal, _check, _ro, marginal_model, nonnegative_marginals
from dpdesk.engine.estimates.maxent import _systematic, draw_rows

__all__ = ["FitOptions", "MarginalFit", "fit_marginals"]


@dataclass(frozen=True)
class FitOptions:
    """The solver's settings (module docstring), checked when made.

    ``particles`` persistent chains (at least 100) drawn with ``seed``; a round makes ``sweeps`` Gibbs
    sweeps; full steps (η = 1) last at most ``burn`` rounds and end early at the first round whose
    in-loop ``bias_rms`` exceeds ``plateau`` times the best so far; then ``η = (j + 1)^−decay``
    (0.5 < decay ≤ 1; 1 is the plain ``1/j``); a cell's θ moves at most ``trust`` nats a round. A test
    sweeps fresh chains ``confirm`` times and runs every ``confirm_every`` rounds; the fit has converged
    when the test's bound is at most ``gtol`` noise scales, else it stops after ``max_iter`` rounds.
    ``start`` is ``"bethe"`` or ``"independent"``.
    """

    particles: int = 200_000
    seed: int = 0
    gtol: float = 0.5
    max_iter: int = 300
    sweeps: int = 3
    burn: int = 8
    plateau: float = 0.8
    decay: float = 0.6
    confirm: int = 30
    confirm_every: int = 8
    trust: float = 1.0
    start: str = "bethe"

    def __post_init__(self) -> None:
        if not (isinstance(self.particles, (int, np.integer)) and self.particles >= 100):
            raise DpdeskError(f"particles ({self.particles!r}) must be an integer of at least 100")
        if not 0.5 < self.decay <= 1.0:
            raise DpdeskError(
                f"decay ({self.decay!r}) must be in (0.5, 1]: the steps must sum to infinity, their squares not"
            )
        for name in ("confirm", "confirm_every"):
            value = getattr(self, name)
            if not (isinstance(value, (int, np.integer)) and value >= 1):
                raise DpdeskError(f"{name} ({value!r}) must be a positive integer")
        if self.start not in ("bethe", "independent"):
            raise DpdeskError(f"start ({self.start!r}) must be 'bethe' or 'independent'")


@dataclass(frozen=True, eq=False)
class MarginalFit:
    """The maximum-entropy fit to released marginals (:func:`fit_marginals`), with its convergence record.

    ``theta[k]`` is the log-potential table of marginal k (the seed's weights ``w_i`` of its cells,
    ``|w_i| ≤ τ·n/s_i``): the Polyak–Ruppert average of the last ``averaged`` iterates. ``targets`` are
    the consistent non-negative answers it fits and ``expected`` the model's ``n·p[cell]`` estimated from
    ``particles``, fresh chains under ``theta`` (both flattened in the marginals' order). ``check`` is
    the convergence test on those chains and ``bias_rms`` its RMS misfit beyond Monte Carlo error in
    noise scales; ``tests`` has one row (round, bias_rms, bias_upper) per test of an average.
    ``trace``/``z_trace`` are the in-loop statistics of each round's iterate on the persistent chains
    (a progress record, not the test: see :func:`fit_marginals`).
    """

    shape: tuple[int, ...]
    tau: float
    table_size: float
    theta: tuple[np.ndarray, ...]
    targets: np.ndarray
    expected: np.ndarray
    particles: np.ndarray
    iterations: int
    converged: bool
    bias_rms: float
    trace: np.ndarray  # in-loop bias_rms of each round's iterate
    model: CliqueModel
    check: FitCheck  # the test of the returned θ on fresh chains
    z_trace: np.ndarray  # in-loop z_rms after every round
    tests: np.ndarray  # (round, bias_rms, bias_upper) of every test of an average, in order
    averaged: int  # iterates averaged into theta

    def sample(
        self,
        rows: int,
        rng: np.random.Generator,
        *,
        sweeps: int = 5,
        progress: Callable[[float], None] | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> np.ndarray:
        """``rows`` synthetic rows (codes): the final particles resampled, then moved by exact Gibbs sweeps."""
        m = self.particles.shape[0]
        return draw_rows(
            self.model,
            [t.reshape(-1) for t in self.theta],
            self.particles,
            lambda k: rng.integers(0, m, k),
            rows,
            rng,
            sweeps=sweeps,
            progress=progress,
            cancelled=cancelled,
        )


def fit_marginals(
    shape: Sequence[int],
    marginals: Sequence[Marginal],
    *,
    table_size: float,
    tau: float,
    consistent: bool = True,
    prior: Sequence[np.ndarray] | None = None,
    theta0: Sequence[np.ndarray] | None = None,
    progress: Callable[[float], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
    **options: Any,
) -> MarginalFit:
    """The seed's maximum-entropy distribution for the released ``marginals`` (method and test: the
    module docstring); ``options`` are :class:`FitOptions` (``particles``, ``seed``, ``gtol``, …).

    Parameters
    ----------
    shape : sequence of int
        The domain's attribute sizes.
    marginals : sequence of Marginal
        The released marginals (noise variance ``2s²`` per cell, any noise family).
    table_size : float
        The table size ``n`` (declared, or a released estimate).
    tau : float
        The seed's trade-off in noise-scale units: ``|θ_i| ≤ τ·n/s_i``.
    consistent : bool
        Fit :func:`~.marginals.nonnegative_marginals` (with ``n`` kept) instead of the raw noisy tables.
    theta0 : sequence of arrays or None
        A warm start (e.g. a fit at a nearby τ), replacing ``start``; clipped into this τ's box.
    """
    if not (math.isfinite(table_size) and table_size > 0):
        raise DpdeskError(f"table_size ({table_size!r}) must be a positive finite number")
    if not (math.isfinite(tau) and tau > 0):
        raise DpdeskError(f"tau ({tau!r}) must be a positive finite number")
    opts = FitOptions(**options)
    shape = tuple(int(s) for s in shape)
    if not marginals:
        raise DpdeskError("maximum entropy: no marginals to fit")
    _check(shape, marginals)
    n = float(table_size)
    tables = nonnegative_marginals(shape, marginals, n) if consistent else [mg.table for mg in marginals]
    fit = _Fit(shape, marginals, tables, marginal_model(shape, marginals, prior), opts, n, float(tau))
    if theta0 is not None:
        fit.warm_start(theta0)
    converged, it, (final_check, parts, theta, counts) = fit.run(progress, cancelled)
    return MarginalFit(
        shape=shape,
        tau=float(tau),
        table_size=n,
        theta=tuple(_ro(t) for t in theta),
        targets=_ro(np.concatenate([t.reshape(-1) for t in tables])),
        expected=_ro(np.concatenate([h.reshape(-1) for h in counts])),
        particles=_ro(parts),
        iterations=it,
        converged=converged,
        bias_rms=final_check.bias_rms,
        trace=_ro(np.array(fit.trace)),
        model=fit.model,
        check=final_check,
        z_trace=_ro(np.array(fit.z_trace)),
        tests=_ro(np.array(fit.tests)),
        averaged=len(fit.iterates) - len(fit.iterates) // 2,
    )


# (the test of an average, its fresh chains, the θ tested, its counts)
_Tested = tuple[FitCheck, np.ndarray, list[np.ndarray], list[np.ndarray]]


class _Fit:
    """One fit's state: the targets, the box, the persistent chains, the iterate and its record."""

    def __init__(
        self,
        shape: tuple[int, ...],
        marginals: Sequence[Marginal],
        tables: list[np.ndarray],
        model: CliqueModel,
        opts: FitOptions,
        n: float,
        tau: float,
    ) -> None:
        self.marginals, self.model, self.opts, self.n = marginals, model, opts, n
        self.rng = np.random.default_rng(opts.seed)
        self.parts = model.sample_prior(self.rng, int(opts.particles))
        self.kappa = n / opts.particles
        self.plus = [np.clip(t, 0.0, None) for t in tables]
        self.scale2 = [mg.variance / 2.0 for mg in marginals]
        self.bound = [tau * n / math.sqrt(v) for v in self.scale2]
        self.theta = _start(shape, marginals, model, self.plus, self.kappa, self.bound, opts.start)
        self.trace: list[float] = []
        self.z_trace: list[float] = []
        self.tests: list[tuple[int, float, float]] = []
        self.iterates: list[list[np.ndarray]] = []  # θ_r of every round of the decaying phase

    def warm_start(self, theta0: Sequence[np.ndarray]) -> None:
        if len(theta0) != len(self.marginals):
            raise DpdeskError(f"theta0: {len(theta0)} tables for {len(self.marginals)} marginals")
        self.theta = [
            np.clip(np.asarray(t, dtype=np.float64).reshape(mg.table.shape), -bd, bd)
            for t, mg, bd in zip(theta0, self.marginals, self.bound)
        ]

    def check(self, counts: list[np.ndarray], theta: list[np.ndarray]) -> FitCheck:
        return check_fit(counts, self.plus, self.scale2, theta, self.bound, self.n, self.opts.particles)

    def test(self, it: int, th: list[np.ndarray]) -> _Tested:
        """``th`` on fresh chains from the prior, independent of every sample θ was fitted to."""
        fresh = self.model.sample_prior(self.rng, int(self.opts.particles))
        flat_th = [t.reshape(-1) for t in th]
        for _ in range(self.opts.confirm):
            self.model.sweep(fresh, flat_th, self.rng)
        hs = _counts(self.model.codes(fresh), self.marginals, self.kappa)
        found = self.check(hs, th)
        self.tests.append((it, found.bias_rms, found.bias_upper))
        return found, fresh, th, hs

    def run(
        self, progress: Callable[[float], None] | None, cancelled: Callable[[], bool] | None
    ) -> tuple[bool, int, _Tested]:
        """Rounds until the average passes its test or ``max_iter``; the returned θ is tested last."""
        opts, it, best, decay_from = self.opts, 0, math.inf, None
        last: _Tested | None = None
        for it in range(1, int(opts.max_iter) + 1):
            if cancelled is not None and cancelled():
                raise Cancelled()
            codes, bias = self.sweep()
            if progress is not None:
                progress(it / opts.max_iter)
            if decay_from is None and (it > opts.burn or bias > opts.plateau * best):
                decay_from = it  # the full step no longer gains: decaying steps and averaging from here
            best, last = min(best, bias), None
            if decay_from is not None:
                self.iterates.append([t.copy() for t in self.theta])
                done = len(self.iterates)
                if done >= 2 * opts.confirm_every and done % opts.confirm_every == 0:
                    last = self.test(it, _tail_average(self.iterates))
                    if last[0].passes(opts.gtol):
                        return True, it, last
            self.scale(codes, 1.0 if decay_from is None else (it - decay_from + 2.0) ** -opts.decay)
        if (
            last is None
        ):  # the returned θ (the average, or the iterate if no decaying phase ran) is tested once
            last = self.test(it, _tail_average(self.iterates) if self.iterates else self.theta)
        return False, it, last

    def sweep(self) -> tuple[list[np.ndarray], float]:
        """A round's Gibbs sweeps of the persistent chains under θ; their codes and in-loop misfit."""
        flat = [t.reshape(-1) for t in self.theta]
        for _ in range(self.opts.sweeps):
            self.model.sweep(self.parts, flat, self.rng)
        codes = self.model.codes(self.parts)
        check = self.check(_counts(codes, self.marginals, self.kappa), self.theta)
        self.trace.append(check.bias_rms)
        self.z_trace.append(check.z_rms)
        return codes, check.bias_rms

    def scale(self, codes: list[np.ndarray], eta: float) -> None:
        """One sequential pass of linearised scaling, then the particles resampled by their weights.

        One marginal at a time on the importance-weighted particles (each update reweights them by
        exp(Δθ), so overlapping marginals do not double-count the components they share); the step is
        unbiased in counts, so its fixed point is the solution.
        """
        n, kappa, trust = self.n, self.kappa, self.opts.trust
        logw = np.zeros(self.parts.shape[0])
        for k, mg in enumerate(self.marginals):
            w = np.exp(logw - logw.max())
            w /= w.sum()
            h = np.bincount(codes[k], weights=w, minlength=mg.table.size).reshape(mg.table.shape) * n
            # a trust region: a cell the particles barely visit must not move far on their say-so
            step = np.clip(eta * (self.plus[k] - h) / (self.plus[k] + kappa), -trust, trust)
            new = np.clip(self.theta[k] + step, -self.bound[k], self.bound[k])
            delta = new - self.theta[k]
            self.theta[k] = new
            logw += delta.reshape(-1)[codes[k]]
        # the next round's particles: resampled by weight, then moved by Gibbs sweeps under the new θ
        w = np.exp(logw - logw.max())
        self.parts = self.parts[_systematic(w / w.sum(), self.parts.shape[0], self.rng)]


def _counts(codes: Sequence[np.ndarray], marginals: Sequence[Marginal], kappa: float) -> list[np.ndarray]:
    """Each marginal's table of particle counts, one particle weighing ``kappa`` rows."""
    return [
        np.bincount(k, minlength=mg.table.size).reshape(mg.table.shape) * kappa
        for k, mg in zip(codes, marginals)
    ]


def _tail_average(iterates: list[list[np.ndarray]]) -> list[np.ndarray]:
    """Polyak–Ruppert: the mean of the latter half of the iterates, table by table."""
    tail = iterates[len(iterates) // 2 :]
    return [np.mean([th[k] for th in tail], axis=0) for k in range(len(tail[0]))]


def _start(
    shape: Sequence[int],
    marginals: Sequence[Marginal],
    model: CliqueModel,
    plus: Sequence[np.ndarray],
    kappa: float,
    bound: Sequence[float],
    start: str,
) -> list[np.ndarray]:
    """The starting θ: the Bethe-style guess (each marginal's pointwise mutual information) or independence."""
    log_target = [np.log(t + kappa) for t in plus]
    holders = [sum(a in mg.axes for mg in marginals) for a in range(len(shape))]
    # each attribute's 1-way target, read from one marginal holding it (consistent tables agree)
    one_target = {}
    for a in range(len(shape)):
        for mg, t in zip(marginals, plus):
            if a in mg.axes:
                one_target[a] = np.log(t.sum(axis=tuple(k for k, b in enumerate(mg.axes) if b != a)) + kappa)
                break
    # the 1-way targets in place of the prior's margins, shared out over the marginals holding each attribute
    theta: list[np.ndarray] = []
    for mg, lt in zip(marginals, log_target):
        th = lt.copy() if start == "bethe" else np.zeros(mg.table.shape)
        for pos, a in enumerate(mg.axes):
            view = tuple(-1 if q == pos else 1 for q in range(len(mg.axes)))
            if start == "bethe":
                th = th - one_target[a].reshape(view)
            th = th + ((one_target[a] - model.log_prior[a]) / holders[a]).reshape(view)
        theta.append(
            np.clip(th - th.max(), -bound[len(theta)], bound[len(theta)])
            if np.isfinite(th).all()
            else np.zeros(mg.table.shape)
        )
    return theta
