"""The mean kind: ``mean(m | box) assuming at least N values`` with an accuracy ``±a at 1 − δ``, answered
free from history when its sum and count of values already meet it, else fresh (docs/sums.md §5).

Its entries are ``mean`` (a fresh sum and count of values: two rows that join the history, so a later
sum or count of the box may be answered from them) and ``mean-inferred`` (free); each answers a queued
request. A sum or a linear combination of sums and counts is the count kind's linear query.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.kinds.base import Asked, Read, Recorded, ReleaseKind
from dpdesk.engine.queries.predicates import predicate_term
from dpdesk.engine.queries.query import Query
from dpdesk.engine.schema import Schema
from dpdesk.engine.sums.mechanism import FRESH_MEAN, MEAN_INFERENCE

if TYPE_CHECKING:
    from dpdesk.engine.kinds.snapshot import LedgerSnapshot
    from dpdesk.engine.sums.accuracy import MeanAccuracy
    from dpdesk.engine.sums.plan import MeanPlan
    from dpdesk.engine.sums.query import MeanQuery

__all__ = ["MEAN", "MeanKind", "accuracy_words", "entry_words", "read_mean"]

_EXAMPLE = 'mean(hours | sex="Female") assuming at least 100 values'


def read_mean(
    schema: Schema, text: object, a: float | None, delta: float | None
) -> tuple[MeanQuery, MeanAccuracy]:
    """A mean request checked completely: its text, the values it assumes, its ``±a`` and δ."""
    from dpdesk.engine.sums.accuracy import MeanAccuracy
    from dpdesk.engine.sums.query import parse_mean, split_assumption

    if not isinstance(text, str):
        raise DpdeskError(f"a mean request is text, e.g. {_EXAMPLE}")
    body, n = split_assumption(text)
    q = parse_mean(body, schema)
    if n is None:
        raise DpdeskError(f"a mean's ±a holds only for a box with enough values: state it, e.g. {_EXAMPLE}")
    if a is None or delta is None:
        raise DpdeskError(f"a mean request needs {'eps' if a is None else 'delta'} (±a at 1 − delta)")
    return q, MeanAccuracy(a, delta, n)


def accuracy_words(acc: MeanAccuracy) -> str:
    """``±a at 95 % assuming at least N values``."""
    return f"±{acc.half_width:g} at {100 * (1 - acc.delta):g} % {acc.assumption()}"


def entry_words(payload: Mapping[str, Any]) -> str:
    """A recorded mean in words: ``mean 39.27, in [39.08, 39.46] at 95 % confidence (±0.5 at 95 % assuming
    at least 10000 values in the box)`` (letters, the report, the app's decided request)."""
    est, (lo, hi) = payload.get("estimate"), payload["interval"]
    n, level = float(payload["min_count"]), 100 * (1 - float(payload["delta"]))
    shown = "no ratio (the noisy count of values is not positive)" if est is None else f"mean {est:.6g}"
    return (
        f"{shown}, in [{lo:.6g}, {hi:.6g}] at {level:g} % confidence (±{float(payload['half_width']):g} at "
        f"{level:g} % assuming at least {int(n) if n.is_integer() else n} values in the box)"
    )


def _text(q: MeanQuery, acc: MeanAccuracy) -> str:
    n = int(acc.min_count) if float(acc.min_count).is_integer() else acc.min_count
    return f"{q.text} assuming at least {n} values"


class MeanKind(ReleaseKind["MeanPlan"]):
    name = "mean"
    label = "mean"
    example = _EXAMPLE
    head = re.compile(r"\s*mean\s*\(")
    queueable = True
    answers_requests = True
    recomputes = True
    mechanisms = (FRESH_MEAN, MEAN_INFERENCE)

    def read(
        self, schema: Schema, text: object, eps: float | None, delta: float | None, alpha: float | None
    ) -> Read:
        if alpha is not None:
            raise DpdeskError(
                "a mean request states its accuracy (eps = ±a, delta), not alpha: the engine prices it"
            )
        q, acc = read_mean(schema, text, eps, delta)
        cells = Query(schema.shape, terms=(predicate_term(schema, 1.0, dict(q.conditions)),))
        return Read(self.name, _text(q, acc), cells, eps, delta, None)

    def terms(self, eps: float | None, delta: float | None, alpha: float | None) -> str:
        if eps is None or delta is None:
            return super().terms(eps, delta, alpha)
        return f"±{eps:g} at {100 * (1 - delta):g} %"

    def plan(self, asked: Asked, snapshot: LedgerSnapshot, **options: Any) -> MeanPlan:
        from dpdesk.engine.sums.plan import plan_mean

        q, acc = read_mean(snapshot.schema, asked.query_text, asked.eps, asked.delta)
        return plan_mean(
            q, acc, snapshot.schema, snapshot.history, snapshot.cell_costs, snapshot.total_budget,
            snapshot.basis, asked.id, snapshot.settings.accounting, snapshot.rule,
        )  # fmt: skip

    # -- wording -------------------------------------------------------------------------------
    def heading(self, asked: Asked, describe: str) -> str:
        return f"request {asked.id}: {describe}  (mean; {self.terms(asked.eps, asked.delta, None)})"

    def preview(self, plan: MeanPlan) -> list[str]:
        b = plan.budget
        after = (
            b.system_cost if plan.decision == "infer" else b.system_cost_after
        )  # a refusal: what it would be
        lines = [f"decision: {plan.decision} — {plan.reason.removeprefix('reject: ')}"]
        if plan.decision == "infer" and plan.inferred is not None:
            iv = plan.inferred
            lines.append(
                f"from history: mean in [{iv.low:.6g}, {iv.high:.6g}] at {100 * iv.confidence:g} % "
                f"(holds at every table); ±a target {accuracy_words(plan.accuracy)}"
            )
        if after is None:
            lines.append(f"budget: privacy loss ε (system cost) {b.system_cost:.6g} of {b.total:g}")
        else:
            lines.append(
                f"budget: privacy loss ε (system cost) {b.system_cost:.6g} → {after:.6g} of {b.total:g}"
            )
        return lines

    def spend_words(self, plan: MeanPlan) -> tuple[str, str, list[str]]:
        p = plan.price
        notes = [] if p is None else [
            f"a sum at ε = {p.alpha_sum:.4g} (Laplace) and a count of values at ε = {p.alpha_count:.4g} "
            f"({p.count_family.replace('_', ' ')}); both join the history"
        ]  # fmt: skip
        return f"a fresh mean for {plan.request_id}", f"ε = {plan.alpha:.6g} on each cell of its box", notes

    def question(self, plan: MeanPlan) -> str:
        if plan.decision == "infer":
            return "release the mean inferred from history (free)"
        return f"spend ε = {plan.alpha:.6g} on each cell of the box (a sum and a count of values)"

    def outcome(self, release: Recorded, plan: MeanPlan, path: str = "PROJECT") -> list[str]:
        p = release.entry.payload
        lo, hi = p["interval"]
        how = "inferred, free" if plan.decision == "infer" else f"fresh, ε = {plan.alpha:.6g}"
        est = p.get("estimate")
        shown = "no ratio (the noisy count is not positive)" if est is None else f"{est:.6g}"
        return [
            f"answer {plan.request_id}: mean {shown}  [{lo:.6g}, {hi:.6g}] at {100 * (1 - plan.accuracy.delta):g} % "
            f"({accuracy_words(plan.accuracy)}; {how}; ledger entry {release.entry.seq})"
        ]

    def plan_json(self, plan: MeanPlan, **options: Any) -> dict[str, Any]:
        return plan.to_json()

    def recompute(self, payload: Mapping[str, Any], snapshot: LedgerSnapshot) -> str | None:
        """The mean and interval an entry records, recomputed: a fresh mean's from its two noisy answers
        and budgets, an inferred one's from the history before it (and history met ±a then)."""
        from dpdesk.engine.sums.accuracy import FreshMean, MeanAccuracy
        from dpdesk.engine.sums.plan import fresh_law, history_mean
        from dpdesk.engine.sums.query import parse_mean, split_assumption
        from dpdesk.engine.sums.ratio import mean_interval

        q = parse_mean(split_assumption(str(payload["query_text"]))[0], snapshot.schema)
        acc = MeanAccuracy(float(payload["half_width"]), float(payload["delta"]), float(payload["min_count"]))
        lower, upper = q.bounds(snapshot.schema)
        total, size = q.total(snapshot.schema), q.size(snapshot.schema)
        if "sum_answer" in payload:
            price = FreshMean(
                float(payload["alpha_sum"]), float(payload["alpha_count"]), 0.0, str(payload["count_family"])
            )
            law = fresh_law(total.sensitivity, price)
            iv = mean_interval(
                law, float(payload["sum_answer"]), float(payload["count_answer"]), acc.delta, lower, upper
            )
        else:
            failure, got = history_mean(snapshot.history, total, size, acc, lower, upper)
            if got is None or failure is None or failure > acc.delta:
                return "records a mean inferred from history, but history before it does not meet its ±a"
            iv = got
        rec = payload.get("estimate")
        same = (rec is None) == (iv.estimate is None) and (
            rec is None or math.isclose(float(rec), iv.estimate or 0.0, rel_tol=1e-9, abs_tol=1e-9)
        )
        lo, hi = (float(v) for v in payload["interval"])
        if not same or not (
            math.isclose(lo, iv.low, abs_tol=1e-9) and math.isclose(hi, iv.high, abs_tol=1e-9)
        ):
            return (
                f"records mean {rec} in [{lo:.6g}, {hi:.6g}], but its inputs give {iv.estimate} in "
                f"[{iv.low:.6g}, {iv.high:.6g}]"
            )
        return None


MEAN = MeanKind()
