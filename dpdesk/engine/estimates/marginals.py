"""Marginal-shaped histories: the consistent projection in closed form, and the max-entropy fit to it.

A *marginal* release publishes every cell of the table's marginal on attributes ``A`` with noise of one
variance ``σ_A²`` per cell. The seed's §5.2 releases all 36 two-way marginals of a 9-attribute table
(29 570 cells); the dense BLUE of :func:`~.maxent.consistent_answers` would factor a 29 570-row system.
This module does the same projection from the marginals' structure.

**The projection (derivation).** For a table ``y`` over attributes ``A`` and ``S ⊆ A`` let ``P_S`` be the
product over ``a ∈ S`` of ``(I − J/n_a)`` (centring along ``a``) and over ``a ∈ A∖S`` of ``J/n_a``
(averaging along ``a``). The ``P_S`` are orthogonal projections onto mutually orthogonal subspaces
``V_S`` that sum to the whole space (the ANOVA / Fourier decomposition). Write
``c_S(y) = centre_S(marg_S(y))``: the marginal of ``y`` on ``S``, centred along every axis of ``S``
(``c_∅`` is the total). Then ``P_S y = broadcast_A(c_S(y)) / N_{A∖S}`` with ``N_{A∖S} = Π_{a∈A∖S} n_a``.
Marginals ``{y_A}`` are consistent (come from one table ``x``) iff ``c_S(y_A) = c_S(x)`` for every
``S ⊆ A``, because marginalising maps ``V_S`` of ``A`` onto ``V_S`` of ``B ⊇ S`` and annihilates it for
``S ⊄ B``. So the consistent sets are parametrised by free centred tables ``{c_S}``, one per ``S`` in the
downward closure of the released attribute sets, and by orthogonality the weighted least-squares problem

    min Σ_A σ_A⁻² ‖y_A − Σ_{S⊆A} broadcast_A(c_S) / N_{A∖S}‖²

splits into one problem per ``S``: ``min Σ_{A⊇S} ‖c_S(y_A) − c_S‖² / (σ_A² N_{A∖S})`` (a broadcast table
has squared norm ``N_{A∖S}`` times its own). Its solution is the **inverse-variance weighted average**
``c_S = Σ_{A⊇S} ω_A c_S(y_A) / Σ_{A⊇S} ω_A`` with ``ω_A = 1/(σ_A² N_{A∖S})`` — ``c_S(y_A)`` sums
``N_{A∖S}`` noisy cells per entry, so that is its variance. With equal noise, a component shared by
marginals of equal size is their plain average; otherwise the marginal that sums fewer noisy cells
weighs more. A known table size fixes ``c_∅ = n`` (the BLUE with the universal query known).
Each consistent marginal is ``Σ_{S⊆A} broadcast_A(c_S) / N_{A∖S}``. This is the generalised
least-squares projection — the BLUE of every released cell — at a cost of one pass over the tables.

**The fit.** :func:`fit_marginals` fits the seed's maximum-entropy model (§4) to the projected marginals
with one log-potential per released cell, never a query object per cell: Gibbs particles with iterative
proportional fitting and a stated convergence test (its docstring).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from dpdesk.engine.errors import Cancelled, DpdeskError
from dpdesk.engine.estimates.features import Clique, CliqueModel
from dpdesk.engine.estimates.fitcheck import FitCheck, check_fit
from dpdesk.engine.estimates.kernel import check_prior
from dpdesk.engine.estimates.maxent import _systematic, draw_rows

__all__ = [
    "FitCheck",
    "Marginal",
    "MarginalFit",
    "consistent_marginals",
    "fit_marginals",
    "marginal_model",
    "nonnegative_marginals",
]


@dataclass(frozen=True, eq=False)
class Marginal:
    """Released counts of every cell of the marginal on ``axes`` (increasing), noise variance ``variance``."""

    axes: tuple[int, ...]
    table: np.ndarray
    variance: float

    def __post_init__(self) -> None:
        axes = tuple(int(a) for a in self.axes)
        if list(axes) != sorted(set(axes)):
            raise DpdeskError(f"marginal: axes {axes} must be increasing and distinct")
        if not (math.isfinite(self.variance) and self.variance > 0):
            raise DpdeskError(f"marginal on {axes}: the noise variance ({self.variance!r}) must be positive")
        t = np.array(self.table, dtype=np.float64, copy=True)
        if t.ndim != len(axes) or not np.all(np.isfinite(t)):
            raise DpdeskError(
                f"marginal on {axes}: its table must be finite with one dimension per attribute"
            )
        t.setflags(write=False)
        object.__setattr__(self, "axes", axes)
        object.__setattr__(self, "table", t)


def _check(shape: Sequence[int], marginals: Sequence[Marginal]) -> None:
    for mg in marginals:
        if mg.axes and (mg.axes[-1] >= len(shape) or mg.axes[0] < 0):
            raise DpdeskError(f"marginal on {mg.axes}: attribute out of range 0..{len(shape) - 1}")
        want = tuple(shape[a] for a in mg.axes)
        if mg.table.shape != want:
            raise DpdeskError(f"marginal on {mg.axes}: table shape {mg.table.shape}, the domain needs {want}")


def _component(table: np.ndarray, axes: tuple[int, ...], sub: tuple[int, ...]) -> np.ndarray:
    """``c_S(y)``: the marginal of ``table`` (over ``axes``) on ``sub``, centred along each axis of ``sub``."""
    drop = tuple(k for k, a in enumerate(axes) if a not in sub)
    c = table.sum(axis=drop) if drop else table
    for k in range(c.ndim):
        c = c - c.mean(axis=k, keepdims=True)
    return c


def consistent_marginals(
    shape: Sequence[int], marginals: Sequence[Marginal], total: float | None = None
) -> list[np.ndarray]:
    """The generalised least-squares consistent marginals (module docstring), one table per input.

    Parameters
    ----------
    shape : sequence of int
        The domain's attribute sizes.
    marginals : sequence of Marginal
        Released marginals with independent noise (equal variance within each).
    total : float or None
        The table size if known (declared): the projection then keeps it exactly.
    """
    shape = tuple(int(s) for s in shape)
    _check(shape, marginals)
    subsets = sorted(
        {s for mg in marginals for r in range(len(mg.axes) + 1) for s in itertools.combinations(mg.axes, r)},
        key=lambda s: (len(s), s),
    )
    comps: dict[tuple[int, ...], np.ndarray] = {}
    for sub in subsets:
        num: np.ndarray | float = 0.0
        den = 0.0
        for mg in marginals:
            if set(sub) <= set(mg.axes):
                rest = math.prod(shape[a] for a in mg.axes if a not in sub)
                w = 1.0 / (mg.variance * rest)
                num = num + w * _component(mg.table, mg.axes, sub)
                den += w
        comps[sub] = np.asarray(num) / den
    if total is not None:
        if not math.isfinite(total):
            raise DpdeskError(f"total ({total!r}) must be finite")
        comps[()] = np.asarray(float(total))
    out = []
    for mg in marginals:
        y = np.zeros(mg.table.shape)
        for r in range(len(mg.axes) + 1):
            for sub in itertools.combinations(mg.axes, r):
                rest = math.prod(shape[a] for a in mg.axes if a not in sub)
                view = tuple(shape[a] if a in sub else 1 for a in mg.axes)
                y = y + comps[sub].reshape(view) / rest
        out.append(y)
    return out


def nonnegative_marginals(
    shape: Sequence[int],
    marginals: Sequence[Marginal],
    total: float | None = None,
    *,
    tol: float = 1e-6,
    max_iter: int = 10_000,
) -> list[np.ndarray]:
    """The consistent **non-negative** marginals nearest the release, one table per input.

    The weighted least-squares projection of :func:`consistent_marginals` can leave cells negative (at
    §5.2's scale, 2 885 of 29 570); clipping them to 0 breaks consistency again (marginals sharing an
    attribute then disagree on its 1-way counts), and no distribution fits inconsistent targets: on
    §5.2 the clipped targets lie 0.23 noise scales RMS from the nearest consistent non-negative set,
    a misfit no fit can remove. This is the projection, in the same norm ``Σ_A ‖·‖²/σ_A²``, onto the
    intersection of the consistent set (total kept if given) and the non-negative orthant, by
    **Dykstra's alternating projections** (the consistent projection, then clipping, with Dykstra's
    corrections so that the limit is the nearest point, not just a point of the intersection). The true
    table's marginals lie in that convex set, so the result is no farther from them, in that norm, than
    :func:`consistent_marginals`' — never a loss of accuracy.

    Stops when the consistent iterate's most negative cell and its distance to the clipped one are below
    ``tol`` counts; returns the clipped (non-negative) iterate.
    """
    x = consistent_marginals(shape, marginals, total)
    if min(float(t.min()) for t in x) >= 0.0:
        return x
    variances = [mg.variance for mg in marginals]
    fix_k = [np.zeros_like(t) for t in x]  # Dykstra's correction for the orthant
    fix_c = [np.zeros_like(t) for t in x]  # and for the consistent set
    z = x
    for _ in range(int(max_iter)):
        z = [np.clip(a + b, 0.0, None) for a, b in zip(x, fix_k)]
        fix_k = [a + b - c for a, b, c in zip(x, fix_k, z)]
        moved = [a + b for a, b in zip(z, fix_c)]
        x = consistent_marginals(
            shape, [Marginal(mg.axes, t, v) for mg, t, v in zip(marginals, moved, variances)], total
        )
        fix_c = [a - b for a, b in zip(moved, x)]
        gap = max(float(np.abs(a - b).max()) for a, b in zip(x, z))
        if gap <= tol and min(float(t.min()) for t in x) >= -tol:
            break
    else:
        raise DpdeskError(
            f"non-negative projection: no convergence in {max_iter} rounds (gap {gap:.3g} counts)"
        )
    return [np.clip(t, 0.0, None) for t in x]


def marginal_model(
    shape: Sequence[int], marginals: Sequence[Marginal], prior: Sequence[np.ndarray] | None = None
) -> CliqueModel:
    """The clique model whose rows are the marginals' cells, in order (row-major within each table)."""
    shape = tuple(int(s) for s in shape)
    cliques, start = [], 0
    for mg in marginals:
        k = mg.table.size
        cliques.append(
            Clique(mg.axes, mg.table.shape, np.arange(start, start + k), sp.identity(k, format="csr"))
        )
        start += k
    return CliqueModel(shape, cliques, check_prior(prior, shape))


def _ro(a: np.ndarray) -> np.ndarray:
    a = np.array(a, copy=True)
    a.setflags(write=False)
    return a


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
    particles: int = 200_000,
    seed: int = 0,
    gtol: float = 0.5,
    max_iter: int = 300,
    sweeps: int = 3,
    burn: int = 8,
    plateau: float = 0.8,
    decay: float = 0.6,
    confirm: int = 30,
    confirm_every: int = 8,
    trust: float = 1.0,
    start: str = "bethe",
    theta0: Sequence[np.ndarray] | None = None,
    progress: Callable[[float], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> MarginalFit:
    """The seed's maximum-entropy distribution for released marginals: Gibbs particles and stochastic scaling.

    The model is ``p(t) ∝ p0(t)·exp(Σ_k θ_k[t_{A_k}])`` (seed Eq. 36, one log-potential per released
    cell) with the seed's box ``|θ| ≤ τ·n/s`` (Eq. 37, ``s`` the Laplace scale). Exact inference is out
    of reach (a complete pairwise graph over the attributes has one junction-tree clique: the whole
    domain), so expectations come from **Gibbs sampling**, as in the seed, but with a convergence test.

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
        Fit :func:`nonnegative_marginals` (with ``n`` kept) instead of the raw noisy tables.
    decay : float
        The step's decay exponent after the plateau (0.5 < decay ≤ 1; 1 is the plain ``1/j``).
    confirm, confirm_every : int
        Gibbs sweeps of the fresh chains of a test, and the rounds between tests.
    burn, plateau : int, float
        Full steps (η = 1) last at most ``burn`` rounds, and end early at the first round whose in-loop
        ``bias_rms`` exceeds ``plateau`` times the best so far.
    trust : float
        The most a cell's θ moves in one round (nats).
    theta0 : sequence of arrays or None
        A warm start (e.g. a fit at a nearby τ), replacing ``start``; clipped into this τ's box.
    """
    if not (math.isfinite(table_size) and table_size > 0):
        raise DpdeskError(f"table_size ({table_size!r}) must be a positive finite number")
    if not (math.isfinite(tau) and tau > 0):
        raise DpdeskError(f"tau ({tau!r}) must be a positive finite number")
    if not (isinstance(particles, (int, np.integer)) and particles >= 100):
        raise DpdeskError(f"particles ({particles!r}) must be an integer of at least 100")
    shape = tuple(int(s) for s in shape)
    if not marginals:
        raise DpdeskError("maximum entropy: no marginals to fit")
    if not 0.5 < decay <= 1.0:
        raise DpdeskError(
            f"decay ({decay!r}) must be in (0.5, 1]: the steps must sum to infinity, their squares not"
        )
    for name, value in (("confirm", confirm), ("confirm_every", confirm_every)):
        if not (isinstance(value, (int, np.integer)) and value >= 1):
            raise DpdeskError(f"{name} ({value!r}) must be a positive integer")
    if start not in ("bethe", "independent"):
        raise DpdeskError(f"start ({start!r}) must be 'bethe' or 'independent'")
    _check(shape, marginals)
    n = float(table_size)
    tables = nonnegative_marginals(shape, marginals, n) if consistent else [mg.table for mg in marginals]
    model = marginal_model(shape, marginals, prior)
    rng = np.random.default_rng(seed)
    parts = model.sample_prior(rng, int(particles))
    kappa = n / particles
    plus = [np.clip(t, 0.0, None) for t in tables]
    scale2 = [mg.variance / 2.0 for mg in marginals]
    bound = [tau * n / math.sqrt(v) for v in scale2]
    theta = _start(shape, marginals, model, plus, kappa, bound, start)
    if theta0 is not None:
        if len(theta0) != len(marginals):
            raise DpdeskError(f"theta0: {len(theta0)} tables for {len(marginals)} marginals")
        theta = [
            np.clip(np.asarray(t, dtype=np.float64).reshape(mg.table.shape), -bd, bd)
            for t, mg, bd in zip(theta0, marginals, bound)
        ]

    def test(th: list[np.ndarray]) -> tuple[FitCheck, np.ndarray, list[np.ndarray]]:
        # fresh chains from the prior, independent of every sample θ was fitted to
        fresh = model.sample_prior(rng, int(particles))
        flat_th = [t.reshape(-1) for t in th]
        for _ in range(confirm):
            model.sweep(fresh, flat_th, rng)
        hs = _counts(model.codes(fresh), marginals, kappa)
        return check_fit(hs, plus, scale2, th, bound, n, particles), fresh, hs

    trace: list[float] = []
    checks: list[FitCheck] = []
    tests: list[tuple[int, float, float]] = []
    iterates: list[list[np.ndarray]] = []  # θ_r of every round of the decaying phase
    converged, it, best, decay_from = False, 0, math.inf, None
    last: tuple[FitCheck, np.ndarray, list[np.ndarray], list[np.ndarray]] | None = None
    for it in range(1, int(max_iter) + 1):
        if cancelled is not None and cancelled():
            raise Cancelled()
        flat = [t.reshape(-1) for t in theta]
        for _ in range(sweeps):
            model.sweep(parts, flat, rng)
        codes = model.codes(parts)
        hists = _counts(codes, marginals, kappa)
        check = check_fit(hists, plus, scale2, theta, bound, n, particles)
        bias = check.bias_rms
        trace.append(bias)
        checks.append(check)
        if progress is not None:
            progress(it / max_iter)
        if decay_from is None and (it > burn or bias > plateau * best):
            decay_from = it  # the full step no longer gains: decaying steps and averaging from here
        best = min(best, bias)
        last = None
        if decay_from is not None:
            iterates.append([t.copy() for t in theta])
            done = len(iterates)
            if done >= 2 * confirm_every and done % confirm_every == 0:
                avg = _tail_average(iterates)
                fresh_check, fresh, counts = test(avg)
                tests.append((it, fresh_check.bias_rms, fresh_check.bias_upper))
                last = (fresh_check, fresh, avg, counts)
                if fresh_check.passes(gtol):
                    converged = True
                    break
        eta = 1.0 if decay_from is None else (it - decay_from + 2.0) ** -decay
        # one sequential pass of linearised scaling, one marginal at a time on the importance-weighted
        # particles (each update reweights them by exp(Δθ), so overlapping marginals do not double-count
        # the components they share); the step is unbiased in counts, so its fixed point is the solution
        logw = np.zeros(parts.shape[0])
        for k, mg in enumerate(marginals):
            w = np.exp(logw - logw.max())
            w /= w.sum()
            h = np.bincount(codes[k], weights=w, minlength=mg.table.size).reshape(mg.table.shape) * n
            # a trust region: a cell the particles barely visit must not move far on their say-so
            step = np.clip(eta * (plus[k] - h) / (plus[k] + kappa), -trust, trust)
            new = np.clip(theta[k] + step, -bound[k], bound[k])
            delta = new - theta[k]
            theta[k] = new
            logw += delta.reshape(-1)[codes[k]]
        # the next round's particles: resampled by weight, then moved by Gibbs sweeps under the new θ
        w = np.exp(logw - logw.max())
        parts = parts[_systematic(w / w.sum(), parts.shape[0], rng)]
    if last is None:  # the returned θ (the average, or the iterate if no decaying phase ran) is tested once
        final = _tail_average(iterates) if iterates else theta
        fresh_check, fresh, counts = test(final)
        tests.append((it, fresh_check.bias_rms, fresh_check.bias_upper))
        last = (fresh_check, fresh, final, counts)
    final_check, parts, theta, counts = last
    expected = np.concatenate([h.reshape(-1) for h in counts])
    return MarginalFit(
        shape=shape,
        tau=float(tau),
        table_size=n,
        theta=tuple(_ro(t) for t in theta),
        targets=_ro(np.concatenate([t.reshape(-1) for t in tables])),
        expected=_ro(expected),
        particles=_ro(parts),
        iterations=it,
        converged=converged,
        bias_rms=final_check.bias_rms,
        trace=_ro(np.array(trace)),
        model=model,
        check=final_check,
        z_trace=_ro(np.array([c.z_rms for c in checks])),
        tests=_ro(np.array(tests)),
        averaged=len(iterates) - len(iterates) // 2,
    )


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
