"""Contribution bounds enforced on the rows: which of a person's rows the cube keeps (the reference rule).

When the privacy unit is a column (:mod:`dpdesk.engine.unit`), a person with more rows than the schema
allows keeps a *pseudo-random but reproducible* choice of them. Every engine (DuckDB, SQLite, PostgreSQL,
Spark in :mod:`dpdesk.sources`, and pandas here) makes the same choice, because it follows one rule on
integers that all of them compute exactly:

1. Only rows inside the cube's domain whose unit value is present take part (the others are out of
   domain). A person is the set of rows with one unit value.
2. Each row gets an **order value** ``o`` from a keyed integer hash of the person's identifier, the
   row's cell and its measures' summed integers (:mod:`dpdesk.engine.measures`); arithmetic modulo the
   prime ``p = 2^31 − 1`` with constants derived from the curator's secret (:class:`OrderKey`), so no
   intermediate leaves 63 bits on any engine. Ties are broken by the cell, then the measures' integers:
   rows still tied are identical as far as the cube can tell.
3. With ``one_row_per`` (a cell, or values of some attributes), a person keeps in each group only its
   first row in that order; then, in all, the first ``max_rows`` of what is left.

The order is keyed so that it is neither predictable from the data (a data subject cannot arrange which
of their rows count) nor fresh on each build (the same source gives the same cube, and the project's
keyed fingerprint of that cube stays valid). The guarantee does not rest on the key: any rule that picks
a person's rows from that person's rows alone bounds what one person can change by ``max_rows`` rows.

An identifier's number (step 2) is the identifier itself when it is an integer — an integer column, or
text spelling one in canonical form (``"42"``, ``"-7"``; at most 18 digits, no sign ``+``, no leading
zero) — else the first 60 bits of the MD5 of its UTF-8 text; then reduced modulo ``p``. So ``42`` read
from Parquet and ``"42"`` read from a CSV as text are the same person with the same order.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from dpdesk.engine.errors import SchemaError
from dpdesk.engine.unit import PrivacyUnit

if TYPE_CHECKING:
    import pandas as pd

PRIME = 2_147_483_647  # 2^31 − 1: products of two residues stay below 2^62
CANONICAL_INTEGER = r"0|-?[1-9][0-9]{0,17}"  # what a text identifier must look like to count as an integer
INTEGER_LIMIT = 10**18  # integers with |v| < 10^18 are used as they are; larger ones by their text
MISSING_Q = -(2**62)  # a skipped (missing) measure value in the tie-break, below every summed integer
QUANTUM_OFFSET = 2**52  # added to a summed integer (|q| ≤ 2^52) before hashing: the value is then ≥ 0
_CANONICAL = re.compile(CANONICAL_INTEGER)
_DERIVATION = b"dpdesk truncation order v1"


@dataclass(frozen=True)
class OrderKey:
    """The four constants of the keyed order, each in ``[1, p − 1]`` (derived from a secret).

    Keep the secret on the curator's machine (the per-user source key); the constants appear in the
    SQL sent to the engine as bound parameters and are never written to a project file.
    """

    multiplier: int = field(repr=False)
    offset: int = field(repr=False)
    round1: int = field(repr=False)
    round2: int = field(repr=False)

    @classmethod
    def from_secret(cls, secret: bytes) -> OrderKey:
        """The order key of a secret (an HMAC-SHA256 derivation: the secret itself is never used as such).

        Examples
        --------
        >>> OrderKey.from_secret(b"k" * 32) == OrderKey.from_secret(b"k" * 32)
        True
        >>> OrderKey.from_secret(b"k" * 32) == OrderKey.from_secret(b"j" * 32)
        False
        """
        if not isinstance(secret, (bytes, bytearray)) or len(secret) < 16:
            raise ValueError("an order key needs a secret of at least 16 bytes")
        digest = hmac.new(bytes(secret), _DERIVATION, hashlib.sha256).digest()
        parts = [int.from_bytes(digest[i : i + 8], "little") % (PRIME - 1) + 1 for i in range(0, 32, 8)]
        return cls(*parts)

    def constants(self) -> tuple[int, int, int, int]:
        return (self.multiplier, self.offset, self.round1, self.round2)


@dataclass(frozen=True)
class TruncationReport:
    """What enforcing the contribution bounds dropped. Private: for the curator's eyes only, never written
    to a project file (it is a count over the raw data)."""

    max_rows: int
    people: int  # people with at least one row inside the domain
    rows_kept: int
    rows_dropped: int  # in all (over max_rows, and repeats in a cell or group)
    people_over_limit: int  # people with more than max_rows rows (or groups, with one_row_per)
    repeats_dropped: int = 0  # rows dropped as a person's second or later row in one cell or group

    @property
    def dropped_share(self) -> float:
        """The share of the domain's rows (of people with a unit value) that truncation dropped."""
        total = self.rows_kept + self.rows_dropped
        return self.rows_dropped / total if total else 0.0

    def warning(self) -> str | None:
        """A one-line bias warning for the curator when any row was dropped, else None."""
        if self.rows_dropped == 0:
            return None
        parts = []
        if self.people_over_limit:
            plural = "person" if self.people_over_limit == 1 else "people"
            parts.append(f"{self.people_over_limit} {plural} over the limit of {self.max_rows}")
        if self.repeats_dropped:
            parts.append(f"{self.repeats_dropped} repeated rows in one cell")
        return (
            f"truncation dropped {self.rows_dropped} of {self.rows_kept + self.rows_dropped} rows "
            f"({100 * self.dropped_share:.2f} %: {'; '.join(parts)}); counts and sums are biased down where "
            "those people's rows were"
        )

    def to_dict(self) -> dict[str, int]:
        return {
            "max_rows": self.max_rows,
            "people": self.people,
            "rows_kept": self.rows_kept,
            "rows_dropped": self.rows_dropped,
            "people_over_limit": self.people_over_limit,
            "repeats_dropped": self.repeats_dropped,
        }


# --- identifiers --------------------------------------------------------------------------------------


def text_number(text: str) -> int:
    """The number of a text identifier (before reduction modulo ``p``): the integer it spells in canonical
    form, else the first 60 bits of the MD5 of its UTF-8 bytes.

    Examples
    --------
    >>> text_number("42"), text_number("-7"), text_number("042") == text_number("042")
    (42, -7, True)
    >>> text_number("042") != 42
    True
    """
    if _CANONICAL.fullmatch(text):
        return int(text)
    return int(hashlib.md5(text.encode("utf-8", "surrogatepass")).hexdigest()[:15], 16)


def value_number(value: Any, where: str) -> int | None:
    """The number of one identifier value (None when missing); floats and booleans are refused."""
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)):
        raise SchemaError(
            f"{where}: holds true/false values; a person's identifier must be an integer or text"
        )
    if isinstance(value, (int, np.integer)):
        v = int(value)
        return v if -INTEGER_LIMIT < v < INTEGER_LIMIT else text_number(str(v))
    if isinstance(value, str):
        return text_number(value)
    if isinstance(value, (float, np.floating)):
        if np.isnan(value):
            return None
        raise SchemaError(
            f"{where}: holds floating-point numbers; a person's identifier must be an integer or text"
        )
    return text_number(str(value))


def unit_numbers(series: pd.Series, where: str) -> tuple[np.ndarray, np.ndarray]:
    """``(x, present)`` for an identifier column: int64 ``number mod p`` per row, and which rows have one.

    ``where`` names the column in errors. Float and boolean columns are refused (one-line SchemaError).
    """
    import pandas as pd
    from pandas.api import types as ptypes

    dtype = series.dtype
    if ptypes.is_bool_dtype(dtype):
        value_number(True, where)
    if ptypes.is_float_dtype(dtype):
        if series.notna().any():
            value_number(1.5, where)
        return np.zeros(len(series), dtype=np.int64), np.zeros(len(series), dtype=bool)
    codes, uniques = pd.factorize(series, use_na_sentinel=True)
    numbers = np.zeros(len(uniques) + 1, dtype=np.int64)
    have = np.zeros(len(uniques) + 1, dtype=bool)
    for j, u in enumerate(uniques):
        n = value_number(u, where)
        if n is not None:
            numbers[j], have[j] = n % PRIME, True
    c = np.asarray(codes, dtype=np.int64)  # -1 (missing) picks the last slot
    return numbers[c], have[c]


# --- the order and the choice --------------------------------------------------------------------------


def _mix(y: np.ndarray, value: np.ndarray, key: OrderKey) -> np.ndarray:
    """One step of the order's hash: ``((y + w) mod p) · (((w + K3) mod (p − 1)) + 1) mod p``, with
    ``w = v mod p`` for a value ``v ≥ 0``. The multiplier depends on the value, so two values meet a person's number along
    different slopes and their relative order is as likely one way as the other; it is never 0 mod p.
    Each step uses ``y`` once, so the SQL expression grows linearly with the number of steps."""
    w = value % PRIME
    out: np.ndarray = ((y + w) % PRIME) * ((w + key.round1) % (PRIME - 1) + 1) % PRIME
    return out


def order_values(
    key: OrderKey, unit: np.ndarray, cells: np.ndarray, summed: Sequence[np.ndarray]
) -> np.ndarray:
    """The order value ``o`` of each row (int64 in ``[0, p)``): the keyed hash of step 2.

    ``unit`` is the identifier's number mod p, ``cells`` the flat cell index, ``summed`` each measure's
    integer after its null rule (0 where a skipped value is missing). The steps: ``y = (u·K1 + K2) mod
    p``; then :func:`_mix` with the cell and with each measure's integer plus 2^52 in turn; last,
    ``o = (y + K4) mod p``.
    """
    y = (np.asarray(unit, dtype=np.int64) * key.multiplier + key.offset) % PRIME
    y = _mix(y, np.asarray(cells, dtype=np.int64), key)
    for v in summed:
        y = _mix(y, np.asarray(v, dtype=np.int64) + QUANTUM_OFFSET, key)
    return (y + key.round2) % PRIME


def _ranks(*sorted_keys: np.ndarray) -> np.ndarray:
    """0-based position of each element within its run of equal keys (the key arrays sorted together)."""
    n = len(sorted_keys[0])
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.zeros(n, dtype=bool)
    starts[0] = True
    for keys in sorted_keys:
        starts[1:] |= keys[1:] != keys[:-1]
    first = np.where(starts, np.arange(n), 0)
    return np.arange(n) - np.maximum.accumulate(first)


def keep_rows(
    unit: PrivacyUnit,
    people: np.ndarray,
    cells: np.ndarray,
    order: np.ndarray,
    tie_break: Sequence[np.ndarray],
    groups: np.ndarray | None = None,
) -> tuple[np.ndarray, TruncationReport]:
    """Which rows the cube keeps (step 3), and what was dropped.

    ``people`` holds a person code per row (equal codes, same person; rows outside the domain or without
    an identifier are not passed in), ``order`` the order values, ``tie_break`` the measures' integers
    with :data:`MISSING_Q` for a skipped missing value, ``groups`` the group of each row when the unit
    keeps one row per cell or group.
    """
    n = len(people)
    k = unit.max_rows
    keep = np.zeros(n, dtype=bool)
    if n == 0:
        return keep, TruncationReport(k, 0, 0, 0, 0, 0)
    extra = tuple(np.asarray(t) for t in reversed(tuple(tie_break)))
    repeats = 0
    candidates = np.arange(n)
    if groups is not None:
        by_group = np.lexsort((*extra, cells, order, groups, people))
        first = _ranks(people[by_group], groups[by_group]) == 0
        candidates = by_group[first]
        repeats = int(n - candidates.size)
    sub = np.lexsort(
        (*(t[candidates] for t in extra), cells[candidates], order[candidates], people[candidates])
    )
    ranked = candidates[sub]
    rank = _ranks(people[ranked])
    keep[ranked[rank < k]] = True
    kept = int(np.count_nonzero(keep))
    report = TruncationReport(
        max_rows=k,
        people=int(np.count_nonzero(rank == 0)),
        rows_kept=kept,
        rows_dropped=n - kept,
        people_over_limit=int(np.count_nonzero(rank == k)),
        repeats_dropped=repeats,
    )
    return keep, report
