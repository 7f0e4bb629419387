"""The posterior-of-proportions kind as the registry lists it (docs/dirichlet.md): ``posterior(A | box;
prior=…)``, queued with a budget α (or ``budget=`` in its text), or for the global mechanism an accuracy
``(ε, δ)`` = ``within``/``failure``; or asked on the spot (``dpdesk answer --query 'posterior(…)'``).
Its three registered mechanisms (``privacy_map.py``) charge α, and δ for the smooth one, on the box.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from dpdesk.engine.dirichlet.privacy_map import POSTERIOR_MECHANISMS
from dpdesk.engine.errors import DpdeskError
from dpdesk.engine.kinds.base import Asked, Read, Recorded, ReleaseKind
from dpdesk.engine.schema import Schema

if TYPE_CHECKING:  # the mathematics is imported when a posterior is first read or planned
    from dpdesk.engine.dirichlet.plan import PosteriorAssessment
    from dpdesk.engine.kinds.snapshot import LedgerSnapshot

__all__ = ["DEFAULT_REFERENCE_SIZE", "POSTERIOR", "PosteriorKind"]

# A queued posterior request's expected accuracies are compared at a public reference table of this many
# records split as its prior (never the data), unless its size is public or the caller gives another.
DEFAULT_REFERENCE_SIZE = 100


def _outside(eps: float | None, delta: float | None, alpha: float | None) -> dict[str, Any]:
    """What a posterior request states outside its text, as ``assess_request`` options."""
    out: dict[str, Any] = {}
    if alpha is not None:
        out["budget"] = alpha
    if (eps is None) != (delta is None):
        raise DpdeskError(
            "a posterior request's accuracy target needs both eps (the Hellinger distance) "
            "and delta (the failure probability)"
        )
    if eps is not None:
        out.update(within=eps, failure=delta)
    return out


class PosteriorKind(ReleaseKind["PosteriorAssessment"]):
    name = "posterior"
    label = "posterior of proportions"
    example = 'posterior(education | age="65-90"; prior=1)'
    on_the_spot = True
    head = re.compile(r"\s*posterior\s*\(")
    queueable = True
    mechanisms = POSTERIOR_MECHANISMS
    takes = frozenset({"reference_size"})

    def read(
        self, schema: Schema, text: object, eps: float | None, delta: float | None, alpha: float | None
    ) -> Read:
        from dpdesk.engine.dirichlet.plan import assess_request
        from dpdesk.engine.dirichlet.request import parse_posterior

        q = parse_posterior(str(text), schema)  # its head claimed it: text
        assess_request(q, **_outside(eps, delta, alpha))  # every check its plan makes, at zero cost
        return Read("posterior", q.text, q.box_query(), eps, delta, alpha)

    def plan(self, asked: Asked, snapshot: LedgerSnapshot, **options: Any) -> PosteriorAssessment:
        """Priced from the snapshot's per-cell α and δ. Option ``reference_size``: the public reference
        table the mechanisms' expected accuracies are compared at (a queued request's default:
        :data:`DEFAULT_REFERENCE_SIZE`, unless its text gives a public ``size=``)."""
        from dpdesk.engine.dirichlet.plan import assess_request
        from dpdesk.engine.dirichlet.request import parse_posterior

        q = parse_posterior(asked.query_text or "", snapshot.schema)
        ref = options.get("reference_size")
        if ref is not None and ref < 0:
            raise DpdeskError(f"--reference-size ({ref}) must be a non-negative whole number")
        if ref is None and asked.id is not None and "size" not in q.options:
            ref = DEFAULT_REFERENCE_SIZE
        extra: dict[str, Any] = {} if ref is None else {"reference_size": ref}
        if asked.id is not None:
            extra["request_id"] = asked.id
        return assess_request(
            q, **_outside(asked.eps, asked.delta, asked.alpha), **snapshot.public(), **extra
        )

    def preview(self, plan: PosteriorAssessment) -> list[str]:
        from dpdesk.engine.dirichlet.summary import preview_lines

        return preview_lines(plan)

    def outcome(self, release: Recorded, plan: PosteriorAssessment, path: str = "PROJECT") -> list[str]:
        from dpdesk.engine.dirichlet.plan import PosteriorRelease
        from dpdesk.engine.dirichlet.summary import release_lines

        lines = release_lines(PosteriorRelease.from_payload(release.entry.payload), plan.query)
        return [*lines, f"ledger entry {release.entry.seq}"]

    def release_json(self, release: Recorded) -> dict[str, Any]:
        """The recorded release with the released Dirichlet parameters and the noisy values."""
        from dpdesk.engine.dirichlet.plan import PosteriorRelease

        r = PosteriorRelease.from_payload(release.entry.payload)
        return {
            **release.to_json(),
            "parameters": r.parameters.tolist(),
            "noisy_size": r.noisy_size,
            "noisy_counts": None if r.noisy_counts is None else list(r.noisy_counts),
        }


POSTERIOR = PosteriorKind()
