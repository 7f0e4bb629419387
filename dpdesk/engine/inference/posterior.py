"""The posterior of a query's true answer given released history, and what can be said from it.

This module owns the step from "history says θ̂ = center and θ = θ̂ − Σ_k A_k N_k" to numbers a curator
reads: the probability mass function of θ on an adaptive grid (paper §4, three methods: ``fft``,
``direct`` = paper Algorithm 2, ``mc`` = paper Algorithm 1), the narrowest ``1−δ`` credible interval
(paper Algorithm 3), and the probability of any interval or one-sided claim. The noise ``N_k`` is
continuous or discrete (integer) Laplace, or continuous or discrete Gaussian, per history row, so the
posterior always matches the noise actually drawn. The numerical kernels live in :mod:`dpdesk.engine.inference.grid`; the value it
returns, :class:`Posterior`, and its readings in :mod:`dpdesk.engine.inference.posterior_mass`.

**The methods.** ``fft``: characteristic function (paper Thm 4.1) with bin integration, summed over its
aliases until a rigorous bound on the error is below γ/2. ``direct``: paper Algorithm 2, the per-row bin
masses truncated so the lost mass is γ, convolved shortest first; its rounding of each term is an
approximation (estimated in ``error_bound``). ``mc``: paper Algorithm 1 with
``m_s = max(10⁴, |u|/γ² · max(u)(1 − max(u)) + 1)`` from a 10⁴-sample pilot (Corollary 4.1, §6.3),
capped at 2·10⁶ samples and 5·10⁷ draws; ``error_bound`` is the expected ℓ1 error.

**The grid and what runs.** The grid holds about 2000 bins of a readable width (1, 2 or 5 × 10^k) across
the central mass ``1 − γ/4`` (Chernoff bound). When every term is discrete and all ``|A_k|`` are integer
multiples of a step ``g`` (integers: ``g`` = their gcd) θ lives on ``center + gZ``: the masses are then
exact point masses (``lattice=True``) whenever that takes at most 2²⁰+1 points (64 000 for a step below
1). Discrete terms whose atoms do not all fall on bin centres (weights not on one lattice) make the law
atomic off the grid; ``fft`` (without a continuous term, or when its bound is too wide) and ``direct``
then compute it exactly instead: ``method="atoms"`` lists the atoms of all terms but the widest group,
which is added through its cumulative masses (:mod:`~dpdesk.engine.inference.atoms`; error = the mass cut
off, ~1e-12); where that is too many atoms, ``method="bandlimited"`` reads every probability as a proven
lower bound from Selberg's band-limited minorant of the interval (:mod:`~dpdesk.engine.inference.selberg`),
and ``error_bound`` is the bracket's width at ``±align``. ``method`` says what ran.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.inference import grid as _g
from dpdesk.engine.inference.atoms import Atoms, enumerate_atoms
from dpdesk.engine.inference.posterior_mass import CredibleInterval, Posterior, _finite
from dpdesk.engine.inference.selberg import TARGET as BRACKET_TARGET
from dpdesk.engine.inference.selberg import Bandlimited
from dpdesk.engine.mechanisms.registry import check_method, noise_family

__all__ = ["CredibleInterval", "Posterior", "posterior"]

_MC_FLOOR = 10_000  # paper §6.3: never fewer samples than this
_MC_MAX_SAMPLES = 2_000_000
_MC_MAX_DRAWS = 50_000_000  # samples × components
_MC_RISK = 1e-3  # probability that Monte Carlo's stated error bound fails


def _vector(name: str, value: object) -> np.ndarray:
    try:
        arr = np.atleast_1d(np.asarray(value, dtype=float))
    except (TypeError, ValueError):
        raise DpdeskError(f"{name} must be a sequence of numbers") from None
    if arr.ndim != 1:
        raise DpdeskError(f"{name} must be one-dimensional, got shape {arr.shape}")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise DpdeskError(f"{name}[{bad[0]}] ({arr[bad[0]]}) must be finite")
    return arr


def _prune_negligible(
    A: np.ndarray, b: np.ndarray, discrete: np.ndarray, gaussian: np.ndarray | None = None
) -> tuple[np.ndarray, float]:
    """Zero the terms whose combined size is rounding noise next to the largest one.

    A BLUE over thousands of rows often carries coefficients of 1e-13 that are the solver's rounding,
    not signal; each would still cost a pass over the frequency grid. Terms are dropped smallest first
    while their summed mean absolute size stays below 1e-10 of the largest term's; shifting a density
    of bounded variation ``2 f(0) ≤ 1/c_max`` by ``Y`` moves at most ``E|Y|/c_max`` of mass, which is
    returned and added to the error bound. A Gaussian largest term has ``2 f(0) = √(2/π)/σ``, below
    ``1/E|N| = √(π/2)/σ``, so ``E|Y|/E|N_max|`` bounds the moved mass for it too.
    """
    p, q = np.exp(-1.0 / b), -np.expm1(-1.0 / b)
    size = np.abs(A) * np.where(discrete, 2.0 * p / (q * (1.0 + p)), b)  # E|A_k N_k|
    if gaussian is not None and np.any(gaussian):
        # Gaussian rows: E|N| = σ√(2/π) (the discrete Gaussian's is within rounding of it for σ ≥ 1)
        size = np.where(gaussian, np.abs(A) * b * math.sqrt(2.0 / math.pi), size)
    nz = size > 0
    if nz.sum() < 2:
        return A, 0.0
    top = float(size.max())
    order = np.argsort(size)
    cum = np.cumsum(size[order])
    k = int(np.searchsorted(cum, 1e-10 * top, side="right"))
    if k == 0:
        return A, 0.0
    out = A.copy()
    out[order[:k]] = 0.0
    return out, float(cum[k - 1]) / top


def posterior(
    center: float,
    coefficients: Sequence[float] | np.ndarray,
    noise_scales: Sequence[float] | np.ndarray,
    families: str | Sequence[str] = "laplace",
    *,
    method: str = "fft",
    gamma: float = 1e-9,
    samples: int | None = None,
    rng: np.random.Generator | int | None = None,
    progress: Callable[[float], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
    align: float | None = None,
    draw: bool = True,
) -> Posterior:
    """Posterior of ``θ = center − Σ_k A_k N_k`` under an uninformative prior (paper §4, Lemma 4.1).

    Parameters
    ----------
    center : float
        The estimate θ̂ (``A·y``).
    coefficients : array_like
        ``A_k``; zeros are dropped, signs do not matter (the noise is symmetric).
    noise_scales : array_like
        ``b_k = S_k/α_k`` > 0, the scale of row k's noise.
    families : str or sequence of str
        ``"laplace"`` (density ``exp(−|z|/b)/(2b)``), ``"discrete_laplace"`` (integers, mass
        ``∝ exp(−|k|/b)``), ``"gaussian"`` (standard deviation ``b``) or ``"discrete_gaussian"`` (integers,
        mass ``∝ exp(−k²/(2b²))``), for all rows or per row.
    method : {"fft", "direct", "mc"}
        The method asked for (module docstring); ``Posterior.method`` says what ran.
    gamma : float
        Accuracy target in (0, 1): tail mass dropped and, for ``fft``, the error bound aimed at.
    samples : int, optional
        Fixed Monte Carlo sample size (``mc`` only), overriding the rule above.
    rng : numpy.random.Generator or int, optional
        Randomness for ``mc`` (over public quantities only; not privacy-relevant).
    progress, cancelled : callable, optional
        ``progress(fraction)`` is called now and then; when ``cancelled()`` returns True,
        :class:`~dpdesk.engine.errors.Cancelled` is raised.
    align : float, optional
        A half-width (the request's ε) at which bin edges should fall, so that
        :meth:`Posterior.central_mass` of it is exact rather than interpolated (non-lattice grids).
    draw : bool
        False skips the bins of a posterior read from proven brackets (``bandlimited``), which serve
        only to draw it and to start :meth:`Posterior.interval`'s search: its probabilities (all read
        from the brackets) are unchanged, but it cannot be drawn nor give an interval. For decisions.

    Returns
    -------
    Posterior
        Its grid and method as the module docstring says.

    Examples
    --------
    >>> post = posterior(42.0, [0.5, -0.5], [10.0, 20.0])
    >>> round(post.std, 4) == round(math.sqrt(2 * 5.0**2 + 2 * 10.0**2), 4)
    True
    >>> round(post.prob_greater(42.0), 6)
    0.5
    """
    center = _finite("center", center)
    A, b, discrete, gaussian = _terms(coefficients, noise_scales, families)
    gamma = _options(method, gamma, samples)
    A, pruned = _prune_negligible(A, b, discrete, gaussian)
    comp = _g.make_components(A, b, discrete, gaussian)
    std = math.sqrt(comp.variance)
    if comp.empty:  # no noise at all: θ is known exactly
        return Posterior(center, 0.0, method, np.array([center]), np.array([1.0]), 1.0, 0.0, True)
    tail = gamma / 4
    h, half, lattice = _grid(comp, tail, align)
    offsets = h * np.arange(-half, half + 1)
    method, mass, err, lattice, atomic, law = _masses(
        comp, method, h, half, lattice, gamma, align, draw, samples, rng, progress, cancelled
    )
    if progress is not None:
        progress(1.0)
    return Posterior(
        center, std, method, center + offsets, mass, float(h), float(err + pruned), lattice, atomic, law
    )


def _terms(
    coefficients: Sequence[float] | np.ndarray,
    noise_scales: Sequence[float] | np.ndarray,
    families: str | Sequence[str],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The checked terms: ``(A, b, discrete, gaussian)`` (each row's noise on the integers; Gaussian)."""
    A = _vector("coefficients", coefficients)
    b = _vector("noise_scales", noise_scales)
    if A.size != b.size:
        raise DpdeskError(f"noise_scales has {b.size} entries but coefficients has {A.size}")
    bad = np.flatnonzero(b <= 0)
    if bad.size:
        raise DpdeskError(f"noise_scales[{bad[0]}] ({b[bad[0]]}) must be > 0")
    if isinstance(families, str):
        families = [families] * A.size
    fam = list(families)
    if len(fam) != A.size:
        raise DpdeskError(f"families has {len(fam)} entries but coefficients has {A.size}")
    # each distinct family looked up once, in order of first appearance (a history names a few families
    # over thousands of rows; an error names the first row whose family is unknown)
    try:
        distinct: list[Any] = list(dict.fromkeys(fam))
    except TypeError:  # family objects that cannot be hashed: looked up row by row
        distinct = fam
    kinds: list[tuple[bool, bool]] = []
    for f in distinct:
        try:
            nf = noise_family(f)
        except DpdeskError as exc:
            raise DpdeskError(f"families[{fam.index(f)}]: {exc}") from None
        kinds.append((nf.lattice, nf.gaussian))
    if len(kinds) == 1:
        return A, b, np.full(A.size, kinds[0][0], bool), np.full(A.size, kinds[0][1], bool)
    if distinct is fam:
        pairs = kinds
    else:
        table = dict(zip(distinct, kinds))
        pairs = [table[f] for f in fam]
    return A, b, np.array([p[0] for p in pairs], bool), np.array([p[1] for p in pairs], bool)


def _options(method: str, gamma: float, samples: int | None) -> float:
    """The checked method and sample size; the accuracy target γ as a float in (0, 1)."""
    check_method(method)
    gamma = _finite("gamma", gamma)
    if not 0 < gamma < 1:
        raise DpdeskError(f"gamma ({gamma}) must be in (0, 1)")
    if samples is not None and (int(samples) != samples or samples < 1):
        raise DpdeskError(f"samples ({samples}) must be a positive integer")
    return gamma


def _grid(comp: _g.Components, tail: float, align: float | None) -> tuple[float, int, bool]:
    """``(h, half, lattice)``: the bin width, the bins on each side of the centre, and whether the bins
    are the law's own lattice (module docstring)."""
    T = _g.tail_halfwidth(comp, tail)
    g = _g.lattice_step(comp)
    # integer steps always when affordable; a finer step only while the grid stays modest
    cap = _g.LATTICE_MAX_POINTS if g is not None and g >= 1 else 32 * _g.OUTPUT_POINTS
    if g is not None and 2 * math.ceil(T / g) + 1 <= cap:
        return g, math.ceil(T / g), True
    h = _g.nice_spacing(2 * T / _g.OUTPUT_POINTS)
    if align is not None and align > 0:
        # put bin edges at center ± align, so the mass of [center − align, center + align]
        # (the ±ε a request asks about) is a sum of whole bins rather than an interpolation
        # (unless ±ε is so narrow against the spread that aligned bins would make the grid huge: its
        # mass is then read by interpolation, and it is far below any confidence a request asks for)
        aligned = align / (max(1, round(align / h - 0.5)) + 0.5)
        if 2 * math.ceil(T / aligned) + 1 <= cap:
            h = aligned
    return h, _g.odd_fast_len(2 * math.ceil(T / h) + 1) // 2, False


def _masses(
    comp: _g.Components,
    method: str,
    h: float,
    half: int,
    lattice: bool,
    gamma: float,
    align: float | None,
    draw: bool,
    samples: int | None,
    rng: np.random.Generator | int | None,
    progress: Callable[[float], None] | None,
    cancelled: Callable[[], bool] | None,
) -> tuple[str, np.ndarray, float, bool, bool, Atoms | Bandlimited | None]:
    """The bins' masses by the method that applies: ``(method run, mass, error, lattice, atomic, law)``
    (``law``: the exact law a reading asks instead of the bins, or None)."""
    tail = gamma / 4
    # discrete terms whose atoms do not all fall on bin centres: rounding them (paper Algorithm 2) is not
    # exact and, without a continuous term, the transform's aliasing bound is not rigorous; such sums
    # are computed exactly (their atoms listed) or bracketed with proven bounds (:mod:`.selberg`)
    steps = comp.steps
    off_grid = not lattice and bool(np.any(np.abs(steps / h - np.round(steps / h)) > 1e-9 * steps / h))
    exact = method in ("fft", "direct") and off_grid and (method == "direct" or not comp.continuous)
    atomic = not lattice and steps.size > 0  # atoms, or a density with a bump at each of them
    mass, err = np.zeros(0), 0.0
    if method == "fft" and not exact:
        # discrete terms next to a tiny continuous one: the transform cannot resolve them in its budget
        loose = max(1e-6, 1e3 * gamma)
        if lattice:
            mass, err = _g.fft_lattice(comp, h, half)
        else:  # (masses that loose are not summed: the exact computation below replaces them)
            summed, err = _g.fft_general(
                comp, h, 2 * half + 1, gamma / 2, cancelled, give_up=lambda e: e + 2 * tail > loose
            )
            mass = np.zeros(0) if summed is None else summed  # None: too loose, replaced below
        err += 2 * tail  # mass beyond ±T: missing here and folded in by the periodic transform
        exact = err > loose
    if exact:
        method, mass, err, law = _exactly(comp, tail, h, half, gamma, align, draw, cancelled)
        return method, mass, err, False, True, law
    if method == "direct":
        mass, err = _direct(comp, h, half, gamma, tail, progress, cancelled)
    elif method == "mc":
        mass, err = _monte_carlo(comp, h, half, gamma, samples, rng, progress, cancelled)
        err += tail
    return method, mass, err, lattice, atomic, None


def _exactly(
    comp: _g.Components,
    tail: float,
    h: float,
    half: int,
    gamma: float,
    align: float | None,
    draw: bool,
    cancelled: Callable[[], bool] | None,
) -> tuple[str, np.ndarray, float, Atoms | Bandlimited]:
    """Discrete terms off one lattice: their atoms listed (``atoms``), else every reading a proven
    bracket (``bandlimited``; the binned masses then only draw the posterior). ``(method, mass, error,
    law)``."""
    atoms = enumerate_atoms(comp, tail, cancelled) if not comp.continuous else None
    if atoms is not None:
        return "atoms", atoms.binned(h, half), atoms.missing, atoms
    # readings come from proven brackets; the binned masses only draw the posterior
    brackets = Bandlimited(comp, cancelled=cancelled)
    mass = _g.fft_general(comp, h, 2 * half + 1, gamma / 2, cancelled)[0] if draw else np.zeros(2 * half + 1)
    # the bracket at ±align (the request's ε) states the error; other reads are lower bounds
    lower, upper = brackets.bounds(-align, align) if align else (0.0, 2 * BRACKET_TARGET)
    return "bandlimited", mass, upper - lower, brackets


def _direct(
    comp: _g.Components,
    h: float,
    half: int,
    gamma: float,
    tail: float,
    progress: Callable[[float], None] | None,
    cancelled: Callable[[], bool] | None,
) -> tuple[np.ndarray, float]:
    """Paper Algorithm 2 on the grid, with its stated error."""
    full, disc = _g.direct(comp, h, gamma, progress, cancelled)
    k = (full.size - 1) // 2
    mass = np.zeros(2 * half + 1)
    lo = max(0, k - half)
    mass[max(0, half - k) : max(0, half - k) + min(full.size, 2 * half + 1)] = full[lo : lo + 2 * half + 1]
    return mass, gamma + 2 * disc + float(full.sum() - mass.sum()) + tail


def _monte_carlo(
    comp: _g.Components,
    h: float,
    half: int,
    gamma: float,
    samples: int | None,
    rng: np.random.Generator | int | None,
    progress: Callable[[float], None] | None,
    cancelled: Callable[[], bool] | None,
) -> tuple[np.ndarray, float]:
    """Paper Algorithm 1, vectorised, with Corollary 4.1's sample size."""
    if not isinstance(rng, np.random.Generator):
        rng = np.random.default_rng(rng)
    m = comp.c.size + comp.a.size + comp.ga.size + (comp.g2 > 0)
    if samples is None:
        pilot = _g.histogram(_g.draw(comp, rng, _MC_FLOOR), h, half) / _MC_FLOOR
        span = np.flatnonzero(pilot)
        width = span[-1] - span[0] + 1 if span.size else 1
        umax = float(pilot.max())
        need = width / gamma**2 * umax * (1 - umax) + 1
        cap = max(_MC_FLOOR, min(_MC_MAX_SAMPLES, _MC_MAX_DRAWS // m))
        samples = int(min(max(_MC_FLOOR, need), cap))
    counts = np.zeros(2 * half + 1)
    chunk = max(1000, min(200_000, 5_000_000 // m))
    done = 0
    while done < samples:
        _g._check(cancelled)
        n = min(chunk, samples - done)
        counts += _g.histogram(_g.draw(comp, rng, n), h, half)
        done += n
        if progress is not None:
            progress(done / samples)
    u = counts / samples
    # Dvoretzky–Kiefer–Wolfowitz (Massart's constant): the empirical CDF is within
    # sqrt(ln(2/η)/(2 m_s)) of the true one everywhere with probability ≥ 1 − η, so any interval's
    # mass is within twice that. A bound that holds with probability 0.999, not a certainty.
    err = 2.0 * math.sqrt(math.log(2.0 / _MC_RISK) / (2.0 * samples))
    return u, err
