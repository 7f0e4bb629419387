"""Linear queries over the cube: coefficient vectors in product form or sparse form.

A :class:`Query` is a row vector ``Q`` over the cube's ``n`` cells (C order); its true answer is
``Q·x`` and its sensitivity is ``max_j |Q_j|`` (DESIGN §1). Queries built from predicates or from the
text form keep *product form*: a sum of a few :class:`Term` s, each ``weight · f_1 ⊗ … ⊗ f_N`` with one
short factor per attribute, so inner products factor over attributes and never touch ``n``-vectors.
Queries given as vectors (JSON, history files) keep *sparse form*: sorted cell indices and their
nonzero coefficients. The text form lives in :mod:`dpdesk.engine.queries.text`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property, reduce
from typing import Any

import numpy as np

from dpdesk.engine.errors import QueryError
from dpdesk.engine.queries.coefficients import check_coefficients, resolve_shape, sparse_json
from dpdesk.engine.queries.layout import Layout
from dpdesk.engine.queries.term import (
    CANCEL_TOL,
    box_cells,
    fmt_number,
    integral_term,
    readonly,
    same_box,
)
from dpdesk.engine.queries.term import (
    Term as Term,
)


@dataclass(frozen=True, eq=False)
class Query:
    """A linear query ``Q`` over a cube of ``shape`` (C order, last attribute fastest).

    Exactly one form is set: ``terms`` (product form) or ``indices``/``values`` (sparse form: sorted
    unique flat indices and their nonzero coefficients). Construction normalises (sorts, drops zero
    coefficients and zero terms, merges terms with identical factors) and rejects an all-zero query.
    Equality compares coefficients and layout (not form, shape or text).

    ``layout`` is set for a query over a cube's measures (:mod:`dpdesk.engine.queries.layout`): ``shape``
    is then ``layout.shape`` — the blocks (counts, sums, value counts) first — and the sensitivity is a
    record's, ``max_j Σ_b B_b |Q_bj|``, since one record moves its cell in every block at once.

    Examples
    --------
    >>> q = Query((2, 2), terms=(Term(2.0, (np.array([1.0, 0.0]), np.ones(2))),))
    >>> q.dense().tolist(), q.sensitivity, q.is_integer
    ([2.0, 2.0, 0.0, 0.0], 2.0, True)
    >>> q.to_json()
    {'indices': [0, 1], 'values': [2, 2]}
    """

    shape: tuple[int, ...]
    terms: tuple[Term, ...] | None = None
    indices: np.ndarray | None = None
    values: np.ndarray | None = None
    text: str | None = None
    layout: Layout | None = None

    def __post_init__(self) -> None:
        try:
            shape = tuple(int(s) for s in self.shape)
        except (TypeError, ValueError):
            raise QueryError(f"query: shape must be a tuple of integers, got {self.shape!r}") from None
        if not shape or any(s < 1 for s in shape):
            raise QueryError(f"query: shape {shape} must have at least one dimension, all positive")
        object.__setattr__(self, "shape", shape)
        if self.layout is not None and shape != self.layout.shape:
            raise QueryError(f"query: shape {shape} is not its layout's {self.layout.shape}")
        if self.terms is not None:
            if self.indices is not None or self.values is not None:
                raise QueryError(
                    "query: give either terms (product form) or indices and values (sparse form), not both"
                )
            self._init_terms()
        else:
            if self.indices is None or self.values is None:
                raise QueryError("query: needs terms (product form) or both indices and values (sparse form)")
            self._init_sparse()

    def _init_terms(self) -> None:
        merged: list[Term] = []
        for t in self.terms or ():
            if not isinstance(t, Term):
                raise QueryError(f"query: terms must be Term objects, got {type(t).__name__}")
            if t.shape != self.shape:
                raise QueryError(f"query: a term has shape {t.shape}, the cube has shape {self.shape}")
            for k, m in enumerate(merged):
                if m.same_factors(t):
                    merged[k] = Term(m.weight + t.weight, m.factors)
                    break
                if self.layout is not None and same_box(m, t):  # one box, several blocks: one term
                    merged[k] = Term(
                        1.0, (m.weight * m.factors[0] + t.weight * t.factors[0],) + m.factors[1:]
                    )
                    break
            else:
                merged.append(t)
        kept = tuple(t for t in merged if not t.is_zero)
        if not kept:
            raise QueryError("query: all coefficients are zero")
        object.__setattr__(self, "terms", kept)
        if len(kept) > 1 and not np.any(self.dense()):
            raise QueryError("query: all coefficients are zero (the terms cancel)")

    def _init_sparse(self) -> None:
        idx = np.asarray(self.indices)
        val = np.asarray(self.values, dtype=np.float64)
        if idx.size == 0:
            idx = idx.astype(np.int64)
        if idx.ndim != 1 or val.ndim != 1 or idx.shape != val.shape:
            raise QueryError(
                f"query: indices ({idx.shape}) and values ({val.shape}) must be 1-d of equal length"
            )
        if not np.issubdtype(idx.dtype, np.integer):
            raise QueryError(f"query: indices must be integers, got dtype {idx.dtype}")
        idx = idx.astype(np.int64)
        n = self.n_cells
        bad = (idx < 0) | (idx >= n)
        if np.any(bad):
            raise QueryError(f"query: cell index {int(idx[bad][0])} outside 0..{n - 1}")
        if not np.all(np.isfinite(val)):
            raise QueryError("query: coefficients must be finite (got NaN or infinity)")
        order = np.argsort(idx, kind="stable")
        idx, val = idx[order], val[order]
        dup = np.flatnonzero(idx[1:] == idx[:-1])
        if dup.size:
            raise QueryError(f"query: cell index {int(idx[dup[0]])} appears more than once")
        keep = val != 0
        idx, val = idx[keep], val[keep]
        if idx.size == 0:
            raise QueryError("query: all coefficients are zero")
        object.__setattr__(self, "indices", readonly(idx))
        object.__setattr__(self, "values", readonly(val))

    # ---------------------------------------------------------------- derived values

    @property
    def is_product(self) -> bool:
        return self.terms is not None

    @cached_property
    def n_cells(self) -> int:
        return int(math.prod(self.shape))

    @cached_property
    def sensitivity(self) -> float:
        """``max_j |Q_j|`` (DESIGN §1): a record sits in exactly one cell; over measures, the most one
        record moves the answer, ``max_j Σ_b B_b |Q_bj|`` (docs/sums.md, Theorem 1)."""
        if self.layout is not None:
            return float(self.record_loads().max())
        if self.terms is not None and len(self.terms) == 1:
            t = self.terms[0]
            return abs(t.weight) * math.prod(float(np.max(np.abs(f))) for f in t.factors)
        return float(np.max(np.abs(self.sparse()[1])))

    def record_loads(self) -> np.ndarray:
        """Over measures: ``Σ_b B_b |Q_bj|`` for every cell ``j`` of the cube (the most a record in cell
        ``j`` moves the answer); a single term's, from its factors. A new array, not cached."""
        lay = self.layout
        if lay is None:
            raise QueryError("query: only a query over measures has per-record loads; use |Q|")
        if self.terms is not None and len(self.terms) == 1:
            t = self.terms[0]
            w = abs(t.weight) * float(lay.weights @ np.abs(t.factors[0]))
            return np.asarray((w * reduce(np.multiply.outer, [np.abs(f) for f in t.factors[1:]])).reshape(-1))
        idx, val = self.sparse()
        blocks, cells = np.divmod(idx, lay.n_base)
        return lay.record_loads(blocks, cells, val)

    @cached_property
    def is_integer(self) -> bool:
        """True when every coefficient is an integer (the query's answer lives on the integer lattice);
        never for a query that reads a sum of values."""
        if self.layout is not None and self._reads_sums():
            return False
        if self.terms is not None and len(self.terms) == 1:
            vs = self.terms[0].value_set()
            if vs is not None:
                return bool(np.all(vs == np.round(vs)))
        if self.terms is not None and all(integral_term(t) for t in self.terms):
            return True  # products and sums of integer floats are integer floats
        v = self.sparse()[1]
        return bool(np.all(v == np.round(v)))

    def _reads_sums(self) -> bool:
        assert self.layout is not None
        summed = self.layout.summed
        if self.terms is not None:
            return any(bool(np.any(t.factors[0][summed] != 0)) for t in self.terms)
        return bool(np.any(summed[np.asarray(self.indices) // self.layout.n_base]))

    @cached_property
    def _dense(self) -> np.ndarray:
        if self.terms is None:
            out = np.zeros(self.n_cells)
            out[self.indices] = self.values
        else:
            out = self.terms[0].dense()
            for t in self.terms[1:]:
                out += t.dense()
            if len(self.terms) > 1:
                scale = max(
                    abs(t.weight) * math.prod(float(np.max(np.abs(f))) for f in t.factors) for t in self.terms
                )
                out[np.abs(out) <= CANCEL_TOL * scale] = 0.0
        return readonly(out)

    @cached_property
    def _sparse(self) -> tuple[np.ndarray, np.ndarray]:
        if self.terms is None:
            return self.indices, self.values  # type: ignore[return-value]
        if len(self.terms) == 1:
            t = self.terms[0]
            nz = [np.flatnonzero(f) for f in t.factors]
            grids = np.meshgrid(*nz, indexing="ij")
            idx = np.ravel_multi_index(tuple(g.reshape(-1) for g in grids), self.shape).astype(np.int64)
            val = t.weight * reduce(np.multiply.outer, [f[i] for f, i in zip(t.factors, nz)]).reshape(-1)
            return readonly(idx), readonly(val)
        # the union of the terms' boxes, then the (cleaned) dense coefficients there: the same as the
        # nonzero cells of the dense vector, without a pass over every cell of a large cube
        d = self._dense
        if self._support_size < self.n_cells // 8:
            idx = np.concatenate([box_cells(t, self.shape) for t in self.terms])
            idx.sort()
            idx = idx[np.concatenate(([True], idx[1:] != idx[:-1]))]
        else:
            idx = np.arange(self.n_cells, dtype=np.int64)
        idx = idx[d[idx] != 0]
        return readonly(idx), readonly(d[idx])

    def dense(self) -> np.ndarray:
        """All ``n_cells`` coefficients in C order (read-only, cached)."""
        return self._dense

    def sparse(self) -> tuple[np.ndarray, np.ndarray]:
        """``(indices, values)``: sorted flat indices of the nonzero coefficients (read-only, cached)."""
        return self._sparse

    def support_size(self) -> int:
        """Number of nonzero coefficients (an upper bound for multi-term product form)."""
        return self._support_size

    @cached_property
    def _support_size(self) -> int:
        if self.terms is None:
            return int(self.indices.size)  # type: ignore[union-attr]
        return min(self.n_cells, sum(t.support_size() for t in self.terms))

    def values_at(self, flat_indices: Any) -> np.ndarray:
        """Coefficients at the given flat cell indices (product form never densifies)."""
        flat = np.asarray(flat_indices, dtype=np.int64).reshape(-1)
        if flat.size and (flat.min() < 0 or flat.max() >= self.n_cells):
            raise QueryError(f"query: cell index outside 0..{self.n_cells - 1}")
        if self.terms is not None:
            if len(self.terms) > 1:  # densified (and cleaned of rounding residue) at construction
                return self._dense[flat]
            return self.terms[0].values_at(np.unravel_index(flat, self.shape))
        pos = np.searchsorted(self.indices, flat)  # type: ignore[arg-type]
        pos_c = np.minimum(pos, self.indices.size - 1)  # type: ignore[union-attr]
        hit = self.indices[pos_c] == flat  # type: ignore[index]
        return np.where(hit, self.values[pos_c], 0.0)  # type: ignore[index]

    def answer(self, counts: np.ndarray) -> float:
        """The true answer ``Q·x`` on a cube's counts (private: for the curator and the mechanism only)."""
        x = np.asarray(counts).reshape(-1)
        if x.size != self.n_cells:
            raise QueryError(f"query has {self.n_cells} coefficients, the cube has {x.size} cells")
        idx, val = self.sparse()
        return float(np.dot(val, x[idx]))

    def to_json(self) -> dict[str, Any]:
        """DESIGN §6 sparse form ``{"indices": [...], "values": [...]}`` (integral values as ints); over
        measures, one sparse form per block: ``{"count": …, "sum": {measure: …}, "count_of": {measure: …}}``
        (blocks without coefficients left out) and the ``layout`` it was read over — the blocks and their
        clamp bounds, so a recorded release states the bounds it was priced at (the ledger view checks
        them against the schema's)."""
        idx, val = self.sparse()
        if self.layout is None:
            return sparse_json(idx, val)
        n = self.layout.n_base
        out: dict[str, Any] = {"layout": self.layout.to_json()}
        for b, block in enumerate(self.layout.blocks):
            lo, hi = np.searchsorted(idx, [b * n, (b + 1) * n])
            if lo == hi:
                continue
            part = sparse_json(idx[lo:hi] - b * n, val[lo:hi])
            if block.kind == "count":
                out["count"] = part
            else:
                out.setdefault("sum" if block.kind == "sum" else "count_of", {})[block.measure] = part
        return out

    def describe(self) -> str:
        """The text the query came from, else a one-line summary (``queries.text.format_terms`` gives
        the text form of product-form terms)."""
        if self.text is not None:
            return self.text
        if self.layout is not None:
            return (
                f"linear query over counts and sums with {self.support_size()} nonzero coefficient(s), "
                f"sensitivity {fmt_number(self.sensitivity)}"
            )
        return (
            f"linear query with {self.support_size()} nonzero coefficient(s) over {self.n_cells} cells, "
            f"sensitivity {fmt_number(self.sensitivity)}"
        )

    def __reduce__(self) -> tuple[type[Query], tuple[Any, ...]]:
        return (Query, (self.shape, self.terms, self.indices, self.values, self.text, self.layout))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Query):
            return NotImplemented
        if self is other:
            return True
        if self.n_cells != other.n_cells or self.layout != other.layout:
            return False
        a, b = self.sparse(), other.sparse()
        return bool(np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]))

    def __hash__(self) -> int:
        idx, val = self.sparse()
        return hash((self.n_cells, idx.tobytes(), val.tobytes(), self.layout))

    def __repr__(self) -> str:
        form = f"{len(self.terms)} term(s)" if self.terms is not None else f"{self.indices.size} nonzero"  # type: ignore[union-attr]
        text = f", text={self.text!r}" if self.text is not None else ""
        over = ", over measures" if self.layout is not None else ""
        return f"Query(shape={self.shape}, {form}{text}{over})"


_MEASURE_MEMBERS = frozenset(("count", "sum", "count_of"))


def query_from_json(
    obj: Any, n_cells: int, shape: Sequence[int] | None = None, layout: Layout | None = None
) -> Query:
    """A query from its DESIGN §6 JSON form: a dense list of ``n_cells`` numbers or ``{"indices", "values"}``;
    with the cube's ``layout``, also the form of a query over measures (:meth:`Query.to_json`)."""
    if isinstance(obj, dict) and set(obj) & _MEASURE_MEMBERS and set(obj) <= _MEASURE_MEMBERS | {"layout"}:
        return _measure_query_from_json(obj, n_cells, shape, layout)
    shape_t = resolve_shape(n_cells, shape)
    if isinstance(obj, list):
        if len(obj) != n_cells:
            raise QueryError(f"query has {len(obj)} coefficients, the cube has {n_cells} cells")
        return query_from_vector(check_coefficients(obj, "query"), shape_t)
    if isinstance(obj, dict):
        extra = set(obj) - {"indices", "values"}
        if extra or "indices" not in obj or "values" not in obj:
            raise QueryError('query: a sparse query is an object with exactly "indices" and "values"')
        idx_raw, val_raw = obj["indices"], obj["values"]
        if not isinstance(idx_raw, list) or not isinstance(val_raw, list):
            raise QueryError('query: "indices" and "values" must be lists')
        if len(idx_raw) != len(val_raw):
            raise QueryError(f"query: {len(idx_raw)} indices but {len(val_raw)} values")
        idx = None
        if set(map(type, idx_raw)) <= {int}:  # plain ints (no bools): check the range as one vector
            with np.errstate(all="ignore"):
                try:
                    idx = np.asarray(idx_raw, dtype=np.int64)
                except OverflowError:
                    idx = None
            if idx is not None and idx.size and not (idx.min() >= 0 and idx.max() < n_cells):
                idx = None
        if idx is None:  # name the first bad index
            for i, v in enumerate(idx_raw):
                if isinstance(v, bool) or not isinstance(v, int):
                    raise QueryError(f"query: indices[{i}] must be an integer, got {v!r}")
                if not 0 <= v < n_cells:
                    raise QueryError(f"query: indices[{i}] = {v} is outside 0..{n_cells - 1}")
            idx = np.asarray(idx_raw, dtype=np.int64)
        vals = check_coefficients(val_raw, "values")
        return Query(shape_t, indices=idx, values=vals)
    raise QueryError(
        f"query: must be a list of coefficients or an object with indices and values, got {type(obj).__name__}"
    )


def _measure_query_from_json(
    obj: dict[str, Any], n_cells: int, shape: Sequence[int] | None, layout: Layout | None
) -> Query:
    if "layout" in obj:  # as written by Query.to_json: the blocks and bounds it was read over
        recorded = Layout.from_json(obj["layout"])
        if layout is not None and recorded != layout:
            raise QueryError("query: its recorded measures and clamp bounds are not the schema's")
        layout = recorded
    if layout is None:
        raise QueryError(
            'query: "count", "sum" and "count_of" read a cube\'s measures; this cube declares none'
        )
    if n_cells != layout.n_base:
        raise QueryError(f"query: the cube has {n_cells} cells, its measures' layout {layout.n_base}")
    parts: list[tuple[int, Any, str]] = []
    if "count" in obj:
        parts.append((0, obj["count"], "count"))
    for member in ("sum", "count_of"):
        if member not in obj:
            continue
        by_measure = obj[member]
        if not isinstance(by_measure, dict) or not by_measure:
            raise QueryError(f'query: "{member}" must be an object of queries by measure name')
        for name, q in by_measure.items():
            block = layout.index("sum" if member == "sum" else "values", name)
            parts.append((block, q, f"{member}.{name}"))
    idx, val = [], []
    n = layout.n_base
    for block, raw, where in parts:
        try:
            part = query_from_json(raw, n, layout.cells)
        except QueryError as exc:
            raise QueryError(f"query.{where}: {str(exc).removeprefix('query: ')}") from None
        i, v = part.sparse()
        idx.append(i + block * n)
        val.append(v)
    flat, coef = np.concatenate(idx), np.concatenate(val)
    order = np.argsort(flat, kind="stable")
    flat, coef = flat[order], coef[order]
    if flat.size > 1 and np.any(flat[1:] == flat[:-1]):  # the count and a replace measure's values
        keep = np.concatenate(([True], flat[1:] != flat[:-1]))
        coef = np.add.reduceat(coef, np.flatnonzero(keep))
        flat = flat[keep]
    return Query(layout.shape, indices=flat, values=coef, layout=layout)


def query_from_vector(vector: Any, shape: Sequence[int]) -> Query:
    """A sparse-form query from a dense coefficient vector (flat in C order, or already of ``shape``)."""
    shape_t = tuple(int(s) for s in shape)
    vec = np.asarray(vector, dtype=np.float64).reshape(-1)
    if vec.size != math.prod(shape_t):
        raise QueryError(f"query has {vec.size} coefficients, the cube has {math.prod(shape_t)} cells")
    if not np.all(np.isfinite(vec)):
        raise QueryError("query: coefficients must be finite (got NaN or infinity)")
    nz = np.flatnonzero(vec)
    if nz.size == 0:
        raise QueryError("query: all coefficients are zero")
    return Query(shape_t, indices=nz, values=vec[nz])


def product_form(q: Query) -> Query:
    """``q`` in product form when its coefficients are one weight on a Cartesian set of cells, else ``q``.

    A recorded query is stored sparse (DESIGN §6); most are counts over a box or a predicate, i.e. one
    weight times ``1_{S_1} ⊗ … ⊗ 1_{S_N}``. Recovered, their inner products and per-cell costs factor over
    the attributes (``Σ|dom_d|`` work, never ``n``) instead of touching every nonzero. Exact: the
    product form holds the same coefficients, and a query that is not of this form comes back unchanged.
    """
    if q.terms is not None or len(q.shape) < 2:
        return q
    idx, val = q.sparse()
    if idx.size == 0 or not np.all(val == val[0]):
        return q
    coords = np.unravel_index(idx, q.shape)
    sets = [np.unique(c) for c in coords]
    if math.prod(len(s) for s in sets) != idx.size:  # unique indices: a Cartesian set has exactly this many
        return q
    factors = []
    for s, k in zip(sets, q.shape):
        f = np.zeros(k)
        f[s] = 1.0
        factors.append(f)
    return Query(q.shape, terms=(Term(float(val[0]), tuple(factors)),), text=q.text, layout=q.layout)
