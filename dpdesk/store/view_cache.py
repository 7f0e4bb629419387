"""A derived, disposable cache of a project's ledger view beside the project file (``P.dpdesk.cache``).

Replaying a long ledger — decoding every entry, asking each mechanism for its charge and noisy rows, and
factorising the History — takes seconds to minutes, and every command-line call did it again. The cache
holds what that replay produced for one ledger head: per-cell α and δ, the History's rows and its
factorisations (:mod:`dpdesk.engine.inference.snapshot`), the number of releases and which ones answer
from their own structure. It is a cache, never a record:

- it is **keyed by the ledger head** ``(seq, hash)`` (the hash commits to the whole chain) plus the
  genesis hash, the schema, the cube size, the history row limit and this format's version. It is used
  only when the project's ledger holds that very entry and its ``ledger_head`` row agrees; entries
  recorded since are replayed on top as usual. Anything else — another head, a different file under the
  same name, an unreadable or truncated cache — means it is ignored and the ledger replayed;
- it is written only from a chain that was checked hash by hash (``ledger.check_chain``) when written,
  from a view that read every entry without a problem, atomically (temporary file, then rename), and
  never for a ledger with watched claims (``watch``/``unwatch`` entries: their book is always replayed);
- its own integrity is checked when read: a SHA-256 over the header and every array but the large
  triangular factors, and the factors against the rows they factor (each row's squared norm);
- ``verify`` never reads it (it builds its own view from the raw entries), so an entry edited in place
  is still reported there even when the cache, built from the untouched chain, is used meanwhile.

Deleting the cache is always safe. Memory-mapped copy-on-write, so opening costs what is read.
``DPDESK_VIEW_CACHE=off`` in the environment turns it off (neither read nor written).
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from dpdesk.engine.budget.mode import ZcdpAccounting
from dpdesk.engine.errors import Cancelled, DpdeskError
from dpdesk.engine.inference.snapshot import history_arrays, history_from_arrays
from dpdesk.engine.registry import claim_kinds
from dpdesk.engine.schema import Schema
from dpdesk.store.ledger import LedgerEntry
from dpdesk.store.view import HISTORY_ROW_LIMIT, LedgerView

__all__ = ["MIN_ROWS", "cache_path", "load", "save"]

MAGIC = b"DPDESK-VIEW-CACHE\n"
VERSION = 1
ALIGN = 64
# A view with fewer history rows than this replays in well under a second: no cache is written for it.
MIN_ROWS = 256
# arrays too large to hash on every open; they are checked against the rows instead
_FACTORS = (".gram.L", ".coords.L", ".coords.M", ".U", ".R")


def enabled() -> bool:
    return os.environ.get("DPDESK_VIEW_CACHE", "on").lower() != "off"


def cache_path(project: Path) -> Path:
    return project.with_name(project.name + ".cache")


def _key(schema: Schema, genesis: str, head: tuple[int, str]) -> dict[str, Any]:
    schema_json = json.dumps(schema.to_dict(), sort_keys=True, separators=(",", ":"))
    return {
        "version": VERSION,
        "genesis": genesis,
        "seq": int(head[0]),
        "hash": str(head[1]),
        "schema": hashlib.sha256(schema_json.encode()).hexdigest(),
        "cells": int(schema.n_cells),
        "row_limit": HISTORY_ROW_LIMIT,
    }


def _digest(header: dict[str, Any], arrays: dict[str, np.ndarray]) -> str:
    d = hashlib.sha256(json.dumps(header, sort_keys=True, separators=(",", ":")).encode())
    for name in sorted(arrays):
        if not name.endswith(_FACTORS):
            d.update(name.encode())
            d.update(np.ascontiguousarray(arrays[name]).data)
    return d.hexdigest()


def save(
    path: Path,
    view: LedgerView,
    chain_ok: Callable[[int], bool],
    *,
    progress: Callable[[float], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> bool:
    """Write the cache of ``view`` beside project ``path``; ``chain_ok(seq)`` checks the stored chain up to
    entry ``seq``. Returns whether it was written (not for a short or problematic view, nor on I/O errors).
    ``progress(f)``: the fraction of the arrays written; ``cancelled()`` is asked before each array and
    :class:`~dpdesk.engine.errors.Cancelled` raised when it says so (the temporary file is removed)."""
    if not enabled():
        return False

    def check() -> None:
        if cancelled is not None and cancelled():
            raise Cancelled("saving the ledger view cache cancelled")

    with view.assessing() as state:  # the History extended to the view's head, held while it is copied
        h, head = state.history, state.head
        if len(h) < MIN_ROWS or view.malformed or not chain_ok(head[0]):
            return False
        check()
        meta, arrays = history_arrays(h)
        with view.growing():
            if view.head != head:  # another thread recorded meanwhile: next time
                return False
            arrays = dict(
                arrays,
                **{"view.costs": np.asarray(view.cell_costs), "view.deltas": np.asarray(view.cell_deltas)},
            )
            releases = view.releases
            structured = [r.entry.seq for r in releases if not r.in_history]
            if any(e.kind in claim_kinds() for e in view.entries):
                return False  # watched claims are followed entry by entry: such a ledger is always replayed
        header: dict[str, Any] = {
            "key": _key(view.schema, view.genesis, head),
            "history": meta,
            "view": {"releases": len(releases), "structured": structured},
        }
        layout: list[dict[str, Any]] = []  # per array: name, dtype, shape, offset (JSON in the header)
        places: list[tuple[str, int]] = []  # (name, offset)
        offset = 0
        for name, a in arrays.items():
            a = np.ascontiguousarray(a)
            arrays[name] = a
            layout.append({"name": name, "dtype": a.dtype.str, "shape": list(a.shape), "offset": offset})
            places.append((name, offset))
            offset += -(-a.nbytes // ALIGN) * ALIGN
        header["arrays"] = layout
        header["digest"] = _digest(header, arrays)
        blob = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
        start = -(-(len(MAGIC) + 8 + len(blob)) // ALIGN) * ALIGN
        target = cache_path(path)
        try:
            fd, tmp = tempfile.mkstemp(prefix=target.name + ".", suffix=".tmp", dir=target.parent)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(MAGIC + struct.pack("<Q", len(blob)) + blob)
                    for name, at in places:
                        check()
                        a = arrays[name]
                        f.seek(start + at)
                        f.write(a.data if a.nbytes else b"")
                        if progress is not None and offset:
                            progress((at + a.nbytes) / offset)
                    f.truncate(start + offset)
                check()
                os.replace(tmp, target)
            except BaseException:
                if os.path.exists(tmp):
                    os.remove(tmp)
                raise
        except OSError:
            return False  # a read-only folder, a full disk: the cache is optional
        view.cache_key, view.cache_spaces = head, tuple(meta["spaces"])
        return True


def _read(target: Path) -> tuple[dict[str, Any], dict[str, np.ndarray]] | None:
    try:
        size = target.stat().st_size
        with open(target, "rb") as f:
            if f.read(len(MAGIC)) != MAGIC:
                return None
            (n,) = struct.unpack("<Q", f.read(8))
            if n > size:
                return None
            header = json.loads(f.read(n))
        start = -(-(len(MAGIC) + 8 + n) // ALIGN) * ALIGN
        arrays: dict[str, np.ndarray] = {}
        for item in header["arrays"]:
            dtype, shape = np.dtype(item["dtype"]), tuple(int(k) for k in item["shape"])
            if dtype.hasobject:
                return None
            nbytes = dtype.itemsize * int(np.prod(shape))
            if start + int(item["offset"]) + nbytes > size:
                return None  # truncated
            # a plain ndarray over the mapping (a memmap object would add Python overhead to every index)
            arrays[item["name"]] = (
                np.asarray(
                    np.memmap(target, dtype=dtype, mode="c", shape=shape, offset=start + int(item["offset"]))
                )
                if nbytes
                else np.zeros(shape, dtype=dtype)
            )
    except (OSError, ValueError, KeyError, TypeError, struct.error):
        return None
    digest = header.pop("digest", None)
    if digest != _digest(header, arrays):
        return None
    return header, arrays


def load(
    path: Path,
    schema: Schema,
    genesis: str,
    entry_hash: Callable[[int], str | None],
    load_prefix: Callable[[int], list[LedgerEntry]],
    accounting: ZcdpAccounting | None = None,
) -> LedgerView | None:
    """The view stored beside project ``path`` if its key holds: ``entry_hash(seq)`` is the stored hash of
    ledger entry ``seq`` (None if there is none). ``load_prefix(seq)`` reads the entries up to ``seq``
    when the view needs them. None: no usable cache (replay instead)."""
    found = _read(cache_path(path)) if enabled() else None
    if found is None:
        return None
    header, arrays = found
    key = header.get("key", {})
    seq = key.get("seq")
    if not isinstance(seq, int) or key != _key(schema, genesis, (seq, entry_hash(seq) or "")):
        return None
    try:
        history = history_from_arrays(header["history"], arrays)
        if not history.factors_consistent():  # the large factors are not in the digest: checked here
            return None
        v = header["view"]
        view = LedgerView.restored(
            schema,
            genesis,
            head=(seq, key["hash"]),
            history=history,
            costs=arrays["view.costs"],
            deltas=arrays["view.deltas"],
            releases=int(v["releases"]),
            structured=v["structured"],
            load_prefix=lambda: load_prefix(seq),
            accounting=accounting,  # the genesis (in the key) covers it: the costs are in its unit
        )
    except (DpdeskError, KeyError, TypeError, ValueError):
        return None
    view.cache_spaces = tuple(header["history"]["spaces"])
    return view
