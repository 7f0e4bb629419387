"""A History as plain arrays and back, factorisations included, so a long history need not be refactored.

:func:`history_arrays` turns a :class:`~dpdesk.engine.inference.history.History` into a small JSON-able
``meta`` dict and named float/int arrays (no Python objects: whoever stores them needs no pickle);
:func:`history_from_arrays` builds an equivalent History from them, its built row spaces (primal and
dual, DESIGN §1) and Cholesky factors included. The rows' queries are not rebuilt: they come back on
first use (:class:`_StoredRows`), because constructing thousands of validated queries costs more than
the whole estimate a cold command needs. The arrays are trusted as given; the store decides when they
may be (``dpdesk/store/view_cache.py``: keyed by the ledger head, checked against the rows).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from dpdesk.engine.errors import HistoryError
from dpdesk.engine.inference.history import History, HistoryRow
from dpdesk.engine.inference.linalg import GrowingCholesky, factor_consistent
from dpdesk.engine.inference.rowspace import _DualSpace, _GrowArray, _PrimalSpace, _RowSpace
from dpdesk.engine.queries.layout import Layout
from dpdesk.engine.queries.query import Query, Term, query_from_json

__all__ = ["factor_consistent", "history_arrays", "history_from_arrays"]

Arrays = dict[str, np.ndarray]


def _grown(values: np.ndarray, width: int | None = None) -> _GrowArray:
    g = _GrowArray(width)
    g._a = values if values.shape[0] else g._a
    g.n = int(values.shape[0])
    return g


# -- Cholesky factors ---------------------------------------------------------------------------------


def _factor_out(c: GrowingCholesky, name: str, meta: dict[str, Any], arrays: Arrays) -> None:
    c._flush()
    if c._M is not None:
        c._apply_terms()
    meta[name] = {"size": c.size, "identity": c.identity, "queued": c._M is not None}
    if not c.identity and c.size:
        arrays[f"{name}.L"] = c._L[: c.size, : c.size]
        if c._M is not None:
            arrays[f"{name}.M"] = c._M[: c.size, : c.size]


def _factor_in(name: str, meta: dict[str, Any], arrays: Arrays) -> GrowingCholesky:
    m = meta[name]
    size, queued = int(m["size"]), bool(m["queued"])
    if m["identity"]:  # nothing stored: L = M = I, built only if it ever changes
        return GrowingCholesky.identity_of(size, queued=queued)
    c = GrowingCholesky(capacity=1, queued=queued)  # its store is replaced below
    c._lazy = False
    if size:
        c._L = arrays[f"{name}.L"]
        if queued:
            c._M = arrays[f"{name}.M"]
    c.size = c._current = size
    c.identity = False
    return c


# -- row spaces ---------------------------------------------------------------------------------------


def _space_out(space: _RowSpace, name: str, meta: dict[str, Any], arrays: Arrays) -> None:
    m: dict[str, Any] = {"form": space.form, "size": space.size}
    _factor_out(space.coords_chol, f"{name}.coords", meta, arrays)
    arrays[f"{name}.basis_rows"] = np.asarray(space.basis_rows, dtype=np.int64)
    dep_rows = np.fromiter(space.dependent.keys(), dtype=np.int64, count=len(space.dependent))
    arrays[f"{name}.dep_rows"] = dep_rows
    arrays[f"{name}.dep_lengths"] = np.array([len(c) for c in space.dependent.values()], dtype=np.int64)
    arrays[f"{name}.dep_values"] = (
        np.concatenate(list(space.dependent.values())) if space.dependent else np.zeros(0)
    )
    if isinstance(space, _DualSpace):
        _factor_out(space.gram, f"{name}.gram", meta, arrays)
        arrays[f"{name}.ids"] = space._ids
    else:
        assert isinstance(space, _PrimalSpace)
        arrays[f"{name}.U"] = space.U.view
        r = len(space._own)
        R = np.zeros((r, r))
        for j, c in enumerate(space._own):
            R[j, : j + 1] = c
        arrays[f"{name}.R"] = R
    meta[name] = m


def _space_in(name: str, h: History, meta: dict[str, Any], arrays: Arrays) -> _RowSpace:
    m = meta[name]
    space: _RowSpace
    if m["form"] == "dual":
        space = _DualSpace(h._stack, h._w)
        space.gram = _factor_in(f"{name}.gram", meta, arrays)
        space._ids = np.asarray(arrays[f"{name}.ids"], dtype=np.int64)
    else:
        space = _PrimalSpace(h.n_cells)
        space.U = _grown(arrays[f"{name}.U"], h.n_cells)
        R = arrays[f"{name}.R"]
        space._own = [np.array(R[j, : j + 1]) for j in range(R.shape[0])]
    space.coords_chol = _factor_in(f"{name}.coords", meta, arrays)
    space.basis_rows = [int(i) for i in arrays[f"{name}.basis_rows"]]
    lengths = arrays[f"{name}.dep_lengths"]
    values = arrays[f"{name}.dep_values"]
    ends = np.cumsum(lengths)
    space.dependent = {
        int(r): np.array(values[e - k : e]) for r, k, e in zip(arrays[f"{name}.dep_rows"], lengths, ends)
    }
    space.size = int(m["size"])
    return space


# -- the history ---------------------------------------------------------------------------------------


def history_arrays(h: History) -> tuple[dict[str, Any], Arrays]:
    """``(meta, arrays)`` holding everything :func:`history_from_arrays` needs to rebuild ``h``."""
    st = h._stack
    m = len(h)
    families = sorted({r.family for r in h.rows})
    meta: dict[str, Any] = {"shape": list(h.shape), "rows": m, "families": families, "spaces": list(h.spaces)}
    if h.layout is not None:
        meta["layout"] = h.layout.to_json()
    arrays: Arrays = {
        "alpha": np.array([r.alpha for r in h.rows], dtype=float),
        "answer": h._answers.view,
        "family": np.array([families.index(r.family) for r in h.rows], dtype=np.int64),
        "w": h._w.view,
        "scales": h._scales.view,
        "variances": h._variances.view,
        "costs": h._costs.values,
        "weights": st._weights.view,
        "single": st._single.view,
        "sparse_rows": st._sparse_rows,
    }
    for d in range(len(h.shape)):
        arrays[f"factor{d}"] = st._factors[d].view
    if st._sp_row:
        arrays["sp_row"] = np.concatenate(st._sp_row)
        arrays["sp_idx"] = np.concatenate(st._sp_idx)
        arrays["sp_val"] = np.concatenate(st._sp_val)
    # rows that are not one full product term are kept as their JSON (sparse) form
    others = [i for i in range(m) if not st._single.view[i]]
    meta["other_queries"] = {str(i): h.rows[i].query.to_json() for i in others}
    for form, space in h._spaces.items():
        _space_out(space, f"space.{form}", meta, arrays)
    return meta, arrays


class _StoredRows(Sequence[HistoryRow]):
    """A History's rows rebuilt on first use from the stored arrays; appending works as on a list."""

    def __init__(self, h: History, meta: dict[str, Any], arrays: Arrays) -> None:
        self._h, self._meta, self._arrays = h, meta, arrays
        self._n = int(meta["rows"])
        self._built: dict[int, HistoryRow] = {}
        self._queries: dict[int, Query] = {}
        self._appended: list[HistoryRow] = []

    def __len__(self) -> int:
        return self._n + len(self._appended)

    def query(self, i: int) -> Query:
        if i >= self._n:
            return self._appended[i - self._n].query
        q = self._queries.get(i)
        if q is None:
            other = self._meta["other_queries"].get(str(i))
            shape, lay = self._h.shape, self._h.layout
            if other is not None:
                q = (
                    query_from_json(other, self._h.n_cells, shape)
                    if lay is None
                    else query_from_json(other, lay.n_base, lay.cells, lay)
                )
            else:
                a = self._arrays
                q = Query(
                    shape,
                    terms=(
                        Term(
                            float(a["weights"][i]),
                            tuple(np.array(a[f"factor{d}"][i]) for d in range(len(shape))),
                        ),
                    ),
                    layout=lay,
                )
            self._queries[i] = q
        return q

    def _row(self, i: int) -> HistoryRow:
        if i >= self._n:
            return self._appended[i - self._n]
        row = self._built.get(i)
        if row is None:
            a = self._arrays
            row = self._built[i] = HistoryRow(
                self.query(i),
                float(a["alpha"][i]),
                float(a["answer"][i]),
                self._meta["families"][int(a["family"][i])],
            )
        return row

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self._row(k) for k in range(*i.indices(len(self)))]
        k = int(i)
        if k < 0:
            k += len(self)
        if not 0 <= k < len(self):
            raise IndexError(i)
        return self._row(k)

    def __iter__(self) -> Iterator[HistoryRow]:
        return (self._row(k) for k in range(len(self)))

    def append(self, row: HistoryRow) -> None:
        self._appended.append(row)


class _StoredQueries(Sequence[Query]):
    """The product stack's view of the same rows' queries (only rows that are not one term are read)."""

    def __init__(self, rows: _StoredRows) -> None:
        self._rows = rows
        self._appended: list[Query] = []

    def __len__(self) -> int:
        return self._rows._n + len(self._appended)

    def __getitem__(self, i: Any) -> Any:
        k = int(i)
        return self._rows.query(k) if k < self._rows._n else self._appended[k - self._rows._n]

    def append(self, q: Query) -> None:
        self._appended.append(q)


def history_from_arrays(meta: dict[str, Any], arrays: Arrays) -> History:
    """The History :func:`history_arrays` described (its queries rebuilt lazily). Raises HistoryError
    when the arrays do not fit together."""
    shape = tuple(int(k) for k in meta["shape"])
    m = int(meta["rows"])
    try:
        h = History(shape, layout=Layout.from_json(meta["layout"]) if "layout" in meta else None)
        for name in (
            "alpha",
            "answer",
            "family",
            "w",
            "scales",
            "variances",
            "weights",
            "single",
            "sparse_rows",
        ):
            if arrays[name].shape[0] != m:
                raise HistoryError(f"stored history: {name} has {arrays[name].shape[0]} rows, expected {m}")
        if arrays["costs"].shape != (h.n_cells if h.layout is None else h.layout.n_base,):
            raise HistoryError("stored history: per-cell costs do not match the cube")
        for d, k in enumerate(shape):
            if arrays[f"factor{d}"].shape != (m, k):
                raise HistoryError(f"stored history: factor {d} does not match the cube")
        rows = _StoredRows(h, meta, arrays)
        h.rows = rows  # type: ignore[assignment]
        h._w, h._answers = _grown(arrays["w"]), _grown(arrays["answer"])
        h._scales, h._variances = _grown(arrays["scales"]), _grown(arrays["variances"])
        h._costs.load(arrays["costs"])
        h._families = [meta["families"][int(k)] for k in arrays["family"]]
        st = h._stack
        st.rows = _StoredQueries(rows)  # type: ignore[assignment]
        st._factors = [_grown(arrays[f"factor{d}"], k) for d, k in enumerate(shape)]
        st._weights, st._single = _grown(arrays["weights"]), _grown(arrays["single"])
        st._sparse_rows = np.asarray(arrays["sparse_rows"], dtype=bool)
        if "sp_row" in arrays:
            st._sp_row, st._sp_idx, st._sp_val = [arrays["sp_row"]], [arrays["sp_idx"]], [arrays["sp_val"]]
        for form in meta["spaces"]:
            h._spaces[form] = _space_in(f"space.{form}", h, meta, arrays)
    except (KeyError, TypeError, ValueError, IndexError) as exc:  # QueryError is a ValueError
        raise HistoryError(f"stored history: unreadable ({exc!r})") from None
    return h


def meta_json(meta: dict[str, Any]) -> str:
    return json.dumps(meta, sort_keys=True, separators=(",", ":"))
