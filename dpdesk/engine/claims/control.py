"""May a fresh release go ahead without making a watched claim too certain? (paper §5, inference control)

The check reads public inputs only — the released history's *structure* (queries, α, noise families),
the pending request (query, α) and the claim — never the table and not even the released values, so a
decision to decline is itself post-processing. For a fresh answer on ``q`` at ``α``:

1. **Touch.** The release touches the claim when it changes θ's posterior: θ becomes estimable, or the
   BLUE of θ from history plus the new row puts a non-zero weight on the new row (the BLUE is unique, so
   a zero weight means the same estimate and posterior). Sharing cells is not enough: history ``[1, 1]``
   and a new ``[1, 0]`` reveal cell 2, while ``[1, 1]`` alone reveals nothing about it.
2. **Crossing.** After the release θ̂' = θ + Z with ``Z = −Σ A'_k N_k`` over every row's noise (the
   posterior shape, public). ``Pr(C)`` after is ``g(θ̂')`` with ``g(c) = Pr(c + Z ∈ [L₀, U₀])``, and it
   crosses when θ̂' falls in ``S = {c : g(c) ≥ τ}``. The risk is ``sup_{t ∈ T} Pr(t + Z ∈ S)`` over the
   truths ``T = [L₀, U₀]`` cut to the query's public range (counts are ≥ 0; ≤ N when N is declared).
3. **Why the supremum is exact.** Laplace and discrete Laplace laws are log-concave, and so are their
   sums; ``g`` is then log-concave (a log-concave law convolved with an interval) and symmetric about
   the claim's midpoint, so ``S`` is an interval, and ``t ↦ Pr(t + Z ∈ S)`` is log-concave and
   symmetric about ``S``'s midpoint: on an interval ``T`` it is largest at that midpoint clipped into
   ``T``. That point is evaluated, and a 65-point grid over ``T`` as a guard. A count query with
   integer coefficients has integer truths only: then every integer of ``T`` is evaluated (up to 4096
   of them; beyond, the two integers around the midpoint and a grid) — an exact supremum that needs no
   shape argument, which matters because the midpoint itself is then often not a possible truth.
4. **Budget.** Allowed iff the risk ≤ the claim's remaining risk. The risks of the releases allowed add
   up (union bound over the stream): at any fixed θ in the claim, the probability that ``Pr(C)`` ever
   crosses τ because of an allowed release is at most the claim's risk budget — for a stream of
   requests fixed in advance; docs/claims.md discusses adaptive streams.

An inferred answer is computed from released values only; it changes no posterior and adds no risk.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from dpdesk.engine.claims.claim import Claim, claim_mass
from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.inference.history import Estimate, History, HistoryRow
from dpdesk.engine.inference.posterior import Posterior, posterior
from dpdesk.engine.inference.prior import query_bounds
from dpdesk.engine.mechanisms.registry import family_for, noise_family
from dpdesk.engine.queries.query import Query

__all__ = [
    "ClaimCheck",
    "check_release",
    "check_rows",
    "crossing_risk",
    "crossing_set",
    "largest_alpha",
    "touches",
]

GUARD_POINTS = 65
INTEGER_TRUTHS = 4096
LATTICE_WORK = 20_000_000  # truths × lattice points summed exactly (about a second)
_WEIGHT_TOL = 1e-9


def touches(before: Estimate, after: Estimate, new_rows: int = 1) -> bool:
    """Whether the estimate of θ ``after`` ``new_rows`` new last rows differs from ``before`` (module
    docstring, 1): the BLUE puts weight on one of them."""
    if not after.estimable:
        return False
    if not before.estimable:
        return True
    assert after.coefficients is not None and after.noise_scales is not None and after.std is not None
    tail = slice(len(after.coefficients) - new_rows, None)
    weight = float(
        np.max(
            np.abs(np.asarray(after.coefficients[tail], dtype=float))
            * np.asarray(after.noise_scales[tail], dtype=float)
        )
    )
    return weight > _WEIGHT_TOL * max(after.std, 1e-300)


def _bisect(f: Callable[[float], bool], inside: float, outside: float, steps: int = 80) -> float:
    """The boundary between ``f(inside)`` True and ``f(outside)`` False."""
    for _ in range(steps):
        mid = 0.5 * (inside + outside)
        if f(mid):
            inside = mid
        else:
            outside = mid
    return inside


def crossing_set(shape: Posterior, claim: Claim) -> tuple[float, float] | None:
    """``S = {c : Pr(c + Z ∈ [L₀, U₀]) ≥ τ}`` as ``(s1, s2)`` (infinite for an open side), or None if empty."""
    tau = claim.threshold
    reach = float(np.max(np.abs(shape.grid))) + shape.spacing  # beyond it Z has (almost) no mass

    def crossed(c: float) -> bool:
        return claim_mass(shape, c, claim.lower, claim.upper) >= tau

    if claim.low is not None and claim.high is not None:
        mid = 0.5 * (claim.low + claim.high)
        if not crossed(mid):
            return None
        half = 0.5 * (claim.high - claim.low) + reach
        w = _bisect(lambda d: crossed(mid + d), 0.0, half)
        return mid - w, mid + w
    if claim.high is not None:  # θ ≤ U₀: g decreases in c
        far = claim.high - reach
        if not crossed(far):
            return None
        return -math.inf, _bisect(crossed, far, claim.high + reach)
    assert claim.low is not None  # θ ≥ L₀: g increases in c
    far = claim.low + reach
    if not crossed(far):
        return None
    return _bisect(crossed, far, claim.low - reach), math.inf


def _truths(claim: Claim, query: Query, table_size: float | None) -> tuple[float, float]:
    lo, hi = claim.lower, claim.upper
    _, values = query.sparse()
    if table_size is not None:
        qlo, qhi = query_bounds(query, float(table_size))
        lo, hi = max(lo, qlo), min(hi, qhi)
    elif values.size and float(values.min()) >= 0.0:
        lo = max(lo, 0.0)  # counts are non-negative: public without any declaration
    elif values.size and float(values.max()) <= 0.0:
        hi = min(hi, 0.0)
    return lo, hi


def _lattice_count(grid: np.ndarray, step: float, x: np.ndarray, side: str) -> np.ndarray:
    """``np.searchsorted(grid, x, side)`` for an evenly spaced ``grid``, by arithmetic.

    The lattice posterior's points are ``grid[0] + step·j``, so each index is a floor or ceiling off by
    at most one from rounding; one comparison each way makes it exact. The binary search this replaces
    dominated a claim check (one search per lattice point, per truth, per bisection step).
    """
    n = grid.size
    u = (x - grid[0]) / step
    k: np.ndarray
    if side == "right":  # points ≤ x
        k = np.clip(np.floor(u) + 1, 0, n).astype(np.intp)
        k += (k < n) & (grid[np.minimum(k, n - 1)] <= x)
        k -= (k > 0) & (grid[np.maximum(k - 1, 0)] > x)
    else:  # points < x
        k = np.clip(np.ceil(u), 0, n).astype(np.intp)
        k += (k < n) & (grid[np.minimum(k, n - 1)] < x)
        k -= (k > 0) & (grid[np.maximum(k - 1, 0)] >= x)
    return k


def _lattice_claim_mass(
    shape: Posterior, centres: np.ndarray, low: float, high: float, cum: np.ndarray | None = None
) -> np.ndarray:
    """``Pr(c + Z ∈ [low, high])`` for many lattice centres ``c`` at once (exact point masses)."""
    if cum is None:
        cum = np.concatenate(([0.0], np.cumsum(shape.mass)))
    tol = 1e-9 * shape.spacing + 4 * np.finfo(float).eps * np.abs(centres)
    grid, h = shape.grid, shape.spacing
    hi = cum[-1] if math.isinf(high) else cum[_lattice_count(grid, h, high - centres + tol, "right")]
    lo = 0.0 if math.isinf(low) else cum[_lattice_count(grid, h, low - centres - tol, "left")]
    return np.asarray(hi - lo)


def _lattice_risk(shape: Posterior, claim: Claim, truths: list[float]) -> float:
    """``max_t Σ_z Pr(Z = z)·[Pr(C | θ̂' = t + z) ≥ τ]``, summed exactly over the lattice of θ̂'."""
    cum = np.concatenate(([0.0], np.cumsum(shape.mass)))
    h, n = shape.spacing, shape.grid.size
    steps = (np.asarray(truths, dtype=float) - truths[0]) / h
    if len(truths) > 1 and np.all(np.abs(steps - np.round(steps)) <= 1e-9):
        # every truth lies on the posterior's own lattice (integer truths, unit step): the centres t + z of
        # all truths are one lattice, so Pr(C) ≥ τ is evaluated once over it, and each truth's risk is the
        # mass of the runs of crossed centres it sees — cumulative-sum differences, not a pass per truth
        s = np.round(steps).astype(np.intp)
        base = truths[0] + h * int(s.min())
        s -= s.min()
        centres = base + shape.grid[0] + h * np.arange(int(s.max()) + n)
        crossed = _lattice_claim_mass(shape, centres, claim.lower, claim.upper, cum) >= claim.threshold
        edges = np.diff(np.concatenate(([0], crossed.astype(np.int8), [0])))
        starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
        k0 = np.clip(starts[None, :] - s[:, None], 0, n)
        k1 = np.clip(ends[None, :] - s[:, None], 0, n)
        return float((cum[k1] - cum[k0]).sum(axis=1).max(initial=0.0))
    best = 0.0
    for t in truths:
        crossed = _lattice_claim_mass(shape, t + shape.grid, claim.lower, claim.upper, cum) >= claim.threshold
        best = max(best, float(shape.mass[crossed].sum()))
    return best


def crossing_risk(
    shape: Posterior, claim: Claim, truths: tuple[float, float], *, integer: bool = False
) -> float:
    """``sup_{t ∈ truths} Pr(t + Z ∈ S)``: the chance, at the worst true θ, that ``Pr(C) ≥ τ`` afterwards.

    ``integer``: θ takes only integer values (a count query with integer coefficients), so the truths
    are the integers in ``truths``; up to ``INTEGER_TRUTHS`` of them are all evaluated (the supremum is
    then exact without any shape argument). A lattice ``shape`` (discrete noise) is summed point by
    point: there θ̂' lives on ``t + spacing·ℤ`` and ``Pr(C)`` as a function of the centre is a step
    function, so the continuous crossing set does not apply.
    """
    s = crossing_set(shape, claim)
    t_lo, t_hi = truths
    if integer:
        # an open side stays infinite (no public bound: handled below as the sure crossing)
        t_lo = t_lo if math.isinf(t_lo) else math.ceil(t_lo - 1e-9)
        t_hi = t_hi if math.isinf(t_hi) else math.floor(t_hi + 1e-9)
    if t_lo > t_hi:
        return 0.0
    if s is not None and ((math.isinf(s[0]) and math.isinf(t_lo)) or (math.isinf(s[1]) and math.isinf(t_hi))):
        return float(shape.total)  # the truth can lie arbitrarily deep inside S: crossing is (almost) sure
    if s is None:
        centre = 0.5 * (claim.lower + claim.upper)
    else:
        centre = -math.inf if math.isinf(s[0]) else math.inf if math.isinf(s[1]) else 0.5 * (s[0] + s[1])
    centre = min(max(centre, t_lo), t_hi)
    if integer:
        candidates = {math.floor(centre), math.ceil(centre)}
        if t_hi - t_lo < INTEGER_TRUTHS:
            candidates.update(range(int(t_lo), int(t_hi) + 1))
        else:
            candidates.update(np.round(np.linspace(t_lo, t_hi, GUARD_POINTS)).tolist())
        truth_list = sorted(float(t) for t in candidates if t_lo <= t <= t_hi)
    else:
        truth_list = [centre, *(np.linspace(t_lo, t_hi, GUARD_POINTS).tolist() if t_hi > t_lo else [])]
    if shape.lattice:
        if len(truth_list) * shape.grid.size > LATTICE_WORK:
            # too many exact sums: the integers around the midpoint (g is symmetric about it) and a grid
            near = {math.floor(centre), math.ceil(centre)} if integer else {centre}
            grid = np.linspace(t_lo, t_hi, GUARD_POINTS)
            truth_list = sorted({*near, *(np.round(grid) if integer else grid).tolist()})
        return min(1.0, _lattice_risk(shape, claim, truth_list))
    if s is None:
        return 0.0
    return min(1.0, max(claim_mass(shape, t, s[0], s[1]) for t in truth_list))


@dataclass(frozen=True)
class ClaimCheck:
    """The verdict on one pending fresh release for one claim.

    Attributes
    ----------
    touches : bool
        Whether the release changes θ's posterior; when False, ``risk`` is 0 and it is allowed.
    risk : float
        The risk of crossing this release would spend.
    remaining : float
        The claim's risk left before this release.
    allowed : bool
        ``risk ≤ remaining``.
    reason : str
        One line for the curator.
    """

    claim: Claim
    touches: bool
    risk: float
    remaining: float
    allowed: bool
    reason: str


def check_release(
    history: History,
    claim: Claim,
    query: Query,
    alpha: float,
    *,
    spent: float = 0.0,
    family: str | None = None,
    table_size: float | None = None,
    method: str = "fft",
) -> ClaimCheck:
    """Whether a fresh answer to ``query`` at ``alpha`` may go ahead under ``claim``.

    Parameters
    ----------
    history : History
        The released rows (their queries, α and families are read; their values are not).
    claim : Claim
    query : Query
        The pending request's query.
    alpha : float
        The α it would be released with.
    spent : float
        Risk the claim has already spent on earlier releases.
    family : str, optional
        The noise family's name (default: the one the engine picks for ``query``).
    table_size : float, optional
        A declared (public) bound N on the number of records; narrows the truths considered.
    method : str
        Posterior method for the shape after the release.
    """
    if not (isinstance(alpha, (int, float)) and math.isfinite(alpha) and alpha > 0):
        raise DpdeskError(f"{claim.name}: ε ({alpha!r}) must be a positive finite number")
    fam = family_for(query).name if family is None else noise_family(family).name
    return check_rows(
        history, claim, [(query, float(alpha), fam)], spent=spent, table_size=table_size, method=method
    )


def check_rows(
    history: History,
    claim: Claim,
    rows: Sequence[tuple[Query, float, str]],
    *,
    spent: float = 0.0,
    table_size: float | None = None,
    method: str = "fft",
) -> ClaimCheck:
    """:func:`check_release` for a release adding several noisy rows at once (``(query, α, family)``
    each, e.g. a partition release or a posterior's noisy counts): it touches the claim when the BLUE of
    θ puts weight on any of them, and the crossing risk is that of the posterior after all of them."""
    if not (isinstance(spent, (int, float)) and spent >= 0.0):
        raise DpdeskError(f"{claim.name}: risk spent ({spent!r}) must be a non-negative number")
    remaining = max(0.0, claim.risk - float(spent))
    if not rows:
        return ClaimCheck(
            claim, False, 0.0, remaining, True, f"{claim.name}: this release adds no noisy answer"
        )
    before = history.estimate(claim.query)
    # the answer values enter neither the BLUE's weights nor the posterior's shape: 0 stands in for them
    new = [HistoryRow(q, float(a), 0.0, noise_family(f).name) for q, a, f in rows]
    after = History(history.shape, [*history.rows, *new], layout=history.layout).estimate(claim.query)
    if not touches(before, after, len(new)):
        return ClaimCheck(
            claim, False, 0.0, remaining, True, f"{claim.name}: this release does not change θ's posterior"
        )
    assert after.coefficients is not None and after.noise_scales is not None
    shape = posterior(0.0, after.coefficients, after.noise_scales, list(after.families), method=method)
    risk = crossing_risk(
        shape, claim, _truths(claim, claim.query, table_size), integer=claim.query.is_integer
    )
    allowed = risk <= remaining
    verdict = "allowed" if allowed else "declined"
    reason = (
        f"{claim.name}: {verdict} — at the worst true θ in the claim Pr(C) would reach τ = "
        f"{claim.threshold:g} with probability {risk:.4g} (risk left {remaining:.4g})"
    )
    return ClaimCheck(claim, True, risk, remaining, allowed, reason)


def largest_alpha(
    history: History,
    claim: Claim,
    query: Query,
    alpha: float,
    *,
    spent: float = 0.0,
    family: str | None = None,
    table_size: float | None = None,
    steps: int = 24,
) -> float | None:
    """The largest α ≤ ``alpha`` (to a relative 10⁻³) at which a fresh answer to ``query`` passes
    ``claim``; ``alpha`` itself when it passes, None when not even ``alpha``·10⁻³ does.

    Less α means more noise and a flatter posterior after the release, so the crossing risk falls with
    α; bisection on log α finds the boundary (public inputs only, like the check itself).
    """

    def ok(a: float) -> bool:
        return check_release(
            history, claim, query, a, spent=spent, family=family, table_size=table_size
        ).allowed

    if ok(alpha):
        return float(alpha)
    # no lower than alpha·10⁻³: far below it the noise dwarfs any count (and the exact lattice posterior
    # of one discrete-Laplace term enumerates ~scale atoms: α·10⁻⁶ asked it for 9·10⁸)
    lo, hi = math.log(alpha) - math.log(1e3), math.log(alpha)
    if not ok(math.exp(lo)):
        return None
    for _ in range(steps):
        if hi - lo < 1e-3:
            break
        mid = 0.5 * (lo + hi)
        if ok(math.exp(mid)):
            lo = mid
        else:
            hi = mid
    return math.exp(lo)
