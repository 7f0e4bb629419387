"""A partition release: the noisy counts of a plan, what they say about any query, and the count table.

:func:`draw_release` adds discrete-Laplace noise of scale ``coverage/α`` to every count of the plan
(sensitivity 1 per count; a record is in one count per group, so each cell pays ``α`` — paper Thm 5.4),
drawing from the vetted sampler in vector draws. The result is *not recorded anywhere*: the caller
records it durably before anything is shown. :class:`PartitionRelease` answers queries from the
released rows alone (the BLUE of :mod:`.solver`, its exact error law from :mod:`.grouped`), turns them
into ordinary history rows for the engine, and lays them out as the count table a data user downloads.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from dpdesk.engine.errors import BudgetError, Cancelled, PlanError, QueryError
from dpdesk.engine.partition.grouped import GroupedPosterior, discrete_variance
from dpdesk.engine.partition.guarantee import query_terms
from dpdesk.engine.partition.plan import PartitionPlan, plan_from_json
from dpdesk.engine.partition.privacy_map import PARTITION, group_structure
from dpdesk.engine.partition.solver import PlanSolver, contract
from dpdesk.engine.queries.query import Query, Term
from dpdesk.engine.schema import Schema

if TYPE_CHECKING:
    from dpdesk.engine.inference.history import Estimate, HistoryRow
    from dpdesk.engine.inference.posterior import Posterior

__all__ = ["TABLE_FORMS", "PartitionRelease", "ReleaseEstimate", "draw_release", "structured_release"]

CHUNK = 1 << 18  # counts per vector draw: progress and cancellation between draws
TABLE_FORMS = ("unclipped", "seed")


@dataclass(frozen=True, eq=False)
class ReleaseEstimate:
    """What a release alone says about ``Q·x``: the BLUE and its exact error law (or not estimable)."""

    estimable: bool
    estimate: float | None = None
    std: float | None = None
    posterior: GroupedPosterior | None = None

    def to_posterior(self) -> Posterior:
        """The engine's Posterior of the query's true answer (conservative; see ``GroupedPosterior.to_posterior``)."""
        if self.posterior is None or self.estimate is None:
            raise QueryError("the query is not estimable from this release")
        return self.posterior.to_posterior(self.estimate)

    def interval(self, delta: float) -> tuple[float, float, float]:
        """``(low, high, proven confidence)``: the ``1−δ`` window around the estimate."""
        if self.posterior is None or self.estimate is None:
            raise QueryError("the query is not estimable from this release")
        e, conf = self.posterior.halfwidth(delta)
        return self.estimate - e, self.estimate + e, conf


@dataclass(frozen=True, eq=False)
class PartitionRelease:
    """The released counts of ``plan`` at per-cell budget ``alpha``; ``values[g]`` has group g's shape."""

    plan: PartitionPlan
    alpha: float
    values: tuple[np.ndarray, ...]
    sampler: str
    family: str = "discrete_laplace"

    def __post_init__(self) -> None:
        if not (isinstance(self.alpha, (int, float)) and math.isfinite(self.alpha) and self.alpha > 0):
            raise BudgetError(f"alpha ({self.alpha!r}) must be a positive finite number")
        if self.family != "discrete_laplace":
            raise PlanError(f"partition releases use discrete Laplace noise, not {self.family!r}")
        if len(self.values) != len(self.plan.groups):
            raise PlanError(
                f"release has {len(self.values)} value arrays, the plan has {len(self.plan.groups)} groups"
            )
        vals = []
        for g, v in zip(self.plan.groups, self.values):
            a = np.asarray(v)
            if a.size != g.n_rows:
                raise PlanError(f"group {g.name!r}: {a.size} values for {g.n_rows} counts")
            a = a.astype(np.int64).reshape(g.shape)
            a.setflags(write=False)
            vals.append(a)
        object.__setattr__(self, "values", tuple(vals))

    @property
    def row_alpha(self) -> float:
        return self.plan.row_alpha(self.alpha)

    @property
    def scale(self) -> float:
        """Discrete-Laplace scale of every released count (sensitivity 1 / its budget)."""
        return 1.0 / self.row_alpha

    @property
    def n_rows(self) -> int:
        return self.plan.n_rows

    @cached_property
    def solver(self) -> PlanSolver:
        return PlanSolver(self.plan)

    def estimate(self, query: Query) -> ReleaseEstimate:
        """The BLUE of ``query`` from this release's rows and its exact error law."""
        s = self.solver
        if not s.estimable(query):
            return ReleaseEstimate(False)
        total = 0.0
        for coef, y in zip(s.group_coefficients(query), self.values):
            total += float(np.sum(coef * y)) if isinstance(coef, np.ndarray) else contract(coef, y)
        u, m = query_terms(s, query)
        if not u.size:  # the query is 0 on every cell
            return ReleaseEstimate(True, total, 0.0, None)
        post = GroupedPosterior(u, m, self.scale)
        return ReleaseEstimate(
            True, total, math.sqrt(discrete_variance(self.scale) * s.variance_factor(query)), post
        )

    def served(self, query: Query) -> tuple[Estimate, Posterior] | None:
        """This release's estimate of ``query`` as the engine's Estimate and Posterior (see
        :mod:`dpdesk.engine.inference.structured`); None when the release cannot estimate it."""
        from dpdesk.engine.inference.history import Estimate
        from dpdesk.engine.inference.structured import FORM

        r = self.estimate(query)
        if not r.estimable or r.posterior is None or r.estimate is None or r.std is None:
            return None  # a query that is 0 on every cell has no law to serve (history answers it exactly)
        est = Estimate(
            estimable=True,
            history_size=self.n_rows,
            form=FORM,
            residual=0.0,
            estimate=r.estimate,
            families=(self.family,),
            variance=r.std**2,
        )
        return est, r.to_posterior()

    def cell_estimates(self) -> np.ndarray:
        """``x̂ = G⁺ Σ_g W_gᵀ y_g`` over the cube: ``Q·x̂`` is the BLUE of every estimable ``Q``.

        For a plan that resolves every cell (cells, trees) these are the consistent cell counts (Hay et
        al.); for marginals ``x̂`` is the least-norm fit, meaningful only through estimable queries.
        """
        back = np.zeros(self.plan.shape)
        for g, y in zip(self.plan.groups, self.values):
            v = y.astype(float)
            for axis, b in enumerate(g.blocks):
                v = b.expand(v, axis)
            back += v
        return self.solver.apply_pinv(back)

    # -- rows ---------------------------------------------------------------------------------------
    def row_queries(self, group: int) -> list[Query]:
        """The query of every count of one group, in C order of the group's shape (small groups only)."""
        g = self.plan.groups[group]
        mats = [b.matrix() for b in g.blocks]
        out = []
        for idx in np.ndindex(*g.shape):
            out.append(Query(self.plan.shape, terms=(Term(1.0, tuple(m[i] for m, i in zip(mats, idx))),)))
        return out

    def history_rows(self) -> list[HistoryRow]:
        """Every released count as an engine history row (``α/coverage``, discrete Laplace)."""
        from dpdesk.engine.inference.history import HistoryRow

        rows = []
        for gi, y in enumerate(self.values):
            for q, v in zip(self.row_queries(gi), y.reshape(-1)):
                rows.append(HistoryRow(q, self.row_alpha, float(v), "discrete_laplace"))
        return rows

    def table(self, form: Literal["unclipped", "seed"] = "unclipped") -> Any:
        """The released counts as a table: group, one label column per attribute, the count.

        ``form="unclipped"``: every count as released (negative values included), column
        ``noisy_count`` — what inference from the release must use. ``form="seed"``: the seed's §5.2
        step 3, only counts above 0 (a missing row means 0), column ``noisy_count_positive``; clipping
        biases every sum upwards, so this form is for display, not for inference.
        """
        import pandas as pd

        if form not in TABLE_FORMS:
            raise PlanError(f"table form ({form!r}) must be one of {', '.join(TABLE_FORMS)}")
        schema = self.plan.schema
        parts = []
        for g, y in zip(self.plan.groups, self.values):
            idx = np.indices(g.shape).reshape(len(g.shape), -1) if g.shape else np.zeros((0, 1), int)
            cols: dict[str, Any] = {"group": pd.Categorical.from_codes(np.zeros(g.n_rows, int), [g.name])}
            for d, (attr, b) in enumerate(zip(schema.attributes, g.blocks)):
                cols[attr.name] = pd.Categorical.from_codes(idx[d], list(b.labels(attr)))
            cols["value"] = y.reshape(-1)
            parts.append(pd.DataFrame(cols))
        df = pd.concat(parts, ignore_index=True)
        for attr in schema.attributes:  # one column of plain strings per attribute across groups
            df[attr.name] = df[attr.name].astype(str)
        df["group"] = df["group"].astype(str)
        if form == "seed":
            df = df[df["value"] > 0].reset_index(drop=True)
            return df.rename(columns={"value": "noisy_count_positive"})
        return df.rename(columns={"value": "noisy_count"})

    # -- serialisation (the ledger entry's released values) ------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {
            "plan": self.plan.to_json(),
            "alpha": self.alpha,
            "row_alpha": self.row_alpha,
            "family": self.family,
            "scale": self.scale,
            "sampler": self.sampler,
            "groups": [
                {"name": g.name, "shape": list(g.shape), "values": y.reshape(-1).tolist()}
                for g, y in zip(self.plan.groups, self.values)
            ],
        }

    @classmethod
    def from_payload(cls, schema: Schema, payload: Mapping[str, Any]) -> PartitionRelease:
        """The release a ledger entry recorded (``PartitionReleasePlan.record()`` and ``draw()``).

        The plan is rebuilt from how it was asked for and must have exactly the block structure the
        privacy map charged (the recorded ``groups``), so answers come from the counts that were paid for.
        """
        try:
            plan = plan_from_json(schema, payload["plan"])
            structure = group_structure(payload, schema.shape)
            scale = float(payload["scale"])
            values = tuple(np.asarray(v, dtype=np.int64) for v in payload["values"])
        except (KeyError, TypeError, ValueError) as exc:
            raise PlanError(f"partition release: malformed payload ({exc})") from None
        if len(structure) != len(plan.groups) or any(
            len(per) != len(g.blocks) or any(not np.array_equal(s, b.starts) for s, b in zip(per, g.blocks))
            for per, g in zip(structure, plan.groups)
        ):
            raise PlanError("partition release: the recorded plan does not have the recorded groups")
        if not (math.isfinite(scale) and scale > 0):
            raise PlanError(f"partition release: scale ({scale!r}) must be a positive finite number")
        return cls(plan, plan.coverage / scale, values, str(payload.get("sampler", "")))

    @classmethod
    def from_json(cls, schema: Schema, obj: dict[str, Any]) -> PartitionRelease:
        plan = plan_from_json(schema, obj["plan"])
        return cls(
            plan,
            float(obj["alpha"]),
            tuple(np.asarray(g["values"], dtype=np.int64) for g in obj["groups"]),
            str(obj.get("sampler", "")),
            obj.get("family", "discrete_laplace"),
        )


def structured_release(mechanism: Any, payload: Mapping[str, Any], schema: Schema) -> PartitionRelease | None:
    """What answers from a recorded release's own structure, for the mechanisms that have one (partition
    releases); None for the others (their rows are their only answer)."""
    return PartitionRelease.from_payload(schema, payload) if mechanism is PARTITION else None


def draw_release(
    plan: PartitionPlan,
    alpha: float,
    counts: np.ndarray,
    sampler: Any,
    *,
    allow_insecure: bool = False,
    progress: Callable[[float], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> PartitionRelease:
    """Noise every count of ``plan`` (private ``counts`` in, released values out; nothing recorded).

    Each count has sensitivity 1 and gets discrete-Laplace noise of scale ``coverage/α`` (α-DP per
    cell after all ``coverage`` groups, paper Thm 5.4). ``sampler.release_vector`` is called on chunks of
    :data:`CHUNK` counts (two at a time on two threads when the sampler says its draws may run in
    parallel); ``cancelled()`` is checked between chunks (a cancelled release returns nothing). ``allow_insecure`` admits a non-secure (seeded) sampler, for test projects and simulations.
    """
    if not isinstance(plan, PartitionPlan):
        raise PlanError(f"plan must be a PartitionPlan, got {type(plan).__name__}")
    if (
        isinstance(alpha, bool)
        or not isinstance(alpha, (int, float))
        or not math.isfinite(alpha)
        or alpha <= 0
    ):
        raise BudgetError(f"epsilon ({alpha!r}) must be a positive finite number")
    if not getattr(sampler, "secure", False) and not allow_insecure:
        raise BudgetError(
            f"sampler {getattr(sampler, 'name', sampler)!r} is not secure; releases need the vetted sampler"
        )
    true = plan.true_rows(counts)
    scale = plan.coverage / float(alpha)  # privacy map: Laplace(1/α_row) on sensitivity-1 counts
    total = plan.n_rows
    flat = np.concatenate([t.reshape(-1) for t in true]).astype(np.int64)
    noisy = np.empty(total, dtype=np.int64)
    chunks = [(lo, min(total, lo + CHUNK)) for lo in range(0, total, CHUNK)]
    # OpenDP's samplers release the GIL: two chunks at a time use both cores of the machine
    workers = 2 if getattr(sampler, "parallel_draws", False) and len(chunks) > 1 else 1

    def draw(chunk: tuple[int, int]) -> np.ndarray:  # the counts in, the released counts out
        return np.asarray(
            sampler.release_vector("discrete_laplace", flat[chunk[0] : chunk[1]], scale), dtype=np.int64
        )

    with ThreadPoolExecutor(max_workers=workers) as pool:
        for k in range(0, len(chunks), workers):
            if cancelled is not None and cancelled():
                raise Cancelled("release cancelled before it was complete; nothing was released")
            batch = chunks[k : k + workers]
            for (lo, hi), released in zip(batch, pool.map(draw, batch)):
                noisy[lo:hi] = released
            if progress is not None:
                progress(batch[-1][1] / total)
    values, at = [], 0
    for g in plan.groups:
        values.append(noisy[at : at + g.n_rows].reshape(g.shape))
        at += g.n_rows
    return PartitionRelease(plan, float(alpha), tuple(values), getattr(sampler, "name", str(sampler)))
