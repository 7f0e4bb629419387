"""Canonical JSON and the ledger's hash chain.

A ledger entry is hashed over one canonical byte string, so the same entry always gives the same
hash on every machine and Python version: keys sorted, no whitespace, UTF-8, floats in their shortest
round-tripping form (``repr``), NaN and infinities refused. ``hash = SHA-256(prev_hash ‖ entry)`` where
``prev_hash`` is the previous entry's 32-byte digest (the first entry chains from the genesis hash of
the project's fixed settings, so editing the total budget or the schema also breaks the chain).
"""

from __future__ import annotations

import hashlib
import json
import math
from datetime import UTC, datetime
from typing import Any

import numpy as np


def utc_now() -> str:
    """The store's timestamps: UTC, ISO 8601 with microseconds (ledger entries, requests, settings)."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


def _plain(obj: Any) -> Any:
    """Convert numpy scalars/arrays and tuples into plain JSON values; refuse non-finite floats."""
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if not isinstance(k, str):
                raise TypeError(f"canonical JSON keys must be strings, got {k!r}")
            out[k] = _plain(v)
        return out
    if isinstance(obj, np.ndarray):
        obj = obj.tolist()
    if isinstance(obj, (list, tuple)):
        numbers = _numbers(obj)  # a release's values may be millions of numbers: no call per element
        return numbers if numbers is not None else [_plain(v) for v in obj]
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        v = float(obj)
        if not math.isfinite(v):
            raise ValueError(f"canonical JSON cannot hold a non-finite number ({v})")
        return v
    if obj is None or isinstance(obj, str):
        return obj
    raise TypeError(f"canonical JSON cannot hold {type(obj).__name__}")


def _numbers(seq: list[Any] | tuple[Any, ...]) -> list[Any] | None:
    """``seq`` as a list if it holds only plain ints and finite floats (bools excluded), else None."""
    types = set(map(type, seq))
    if not types <= {int, float}:
        return None
    if float in types:
        try:
            if not all(map(math.isfinite, seq)):
                return None  # the element-wise path names the non-finite number
        except OverflowError:  # an int too large for a float: let the element-wise path handle it
            return None
    return list(seq)


def canonical_json(obj: Any) -> str:
    """The canonical text of ``obj`` (sorted keys, compact, ASCII-safe, finite numbers only)."""
    return json.dumps(_plain(obj), sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def canonical_bytes(obj: Any) -> bytes:
    return canonical_json(obj).encode("ascii")


def chain_hash(prev_hash: str, entry: Any) -> str:
    """``SHA-256(bytes.fromhex(prev_hash) ‖ canonical_bytes(entry))`` as lowercase hex."""
    h = hashlib.sha256()
    h.update(bytes.fromhex(prev_hash))
    h.update(canonical_bytes(entry))
    return h.hexdigest()


def genesis_hash(settings: dict[str, Any]) -> str:
    """The chain's anchor: a hash of the project's fixed settings (name, budget, schema, ...)."""
    return hashlib.sha256(b"dpdesk-ledger-v1\0" + canonical_bytes(settings)).hexdigest()
