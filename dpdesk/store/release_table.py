"""A recorded partition release as the count table a data user downloads (CSV or Parquet).

The table is built from the ledger entry alone — its recorded plan and noisy counts
(:meth:`~dpdesk.engine.partition.release.PartitionRelease.table`) — never from the data. Two forms, each
labelled by its count column: ``unclipped`` (every count as released, ``noisy_count``: what inference
must use) and ``seed`` (the seed's §5.2 step 3, counts above 0 only, ``noisy_count_positive``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from dpdesk.engine.partition.release import TABLE_FORMS, PartitionRelease, structured_release
from dpdesk.store.atomic import write_atomically
from dpdesk.store.errors import StoreError
from dpdesk.store.ledger import thaw
from dpdesk.store.view import LedgerView

__all__ = ["TABLE_SUFFIXES", "partition_release", "write_table"]

TABLE_SUFFIXES = (".csv", ".parquet")


def partition_release(view: LedgerView, seq: int) -> PartitionRelease:
    """The partition release recorded as ledger entry ``seq`` (one-line error for any other entry)."""
    viewed = next((r for r in view.releases if r.entry.seq == seq), None)
    if viewed is None:
        entry = next((e for e in view.entries if e.seq == seq), None)
        if entry is None:
            raise StoreError(f"release {seq}: the ledger has no entry #{seq} (it ends at #{view.head[0]})")
        raise StoreError(f"release {seq}: entry #{seq} is a {entry.kind} entry, not a partition release")
    release = view.answering_release(seq) or structured_release(
        viewed.mechanism, thaw(viewed.entry.payload), view.schema
    )
    if release is None:
        raise StoreError(
            f"release {seq}: entry #{seq} is a {viewed.entry.kind} entry ({viewed.mechanism.label}), "
            "not a partition release; only those export as count tables"
        )
    return release


def write_table(release: PartitionRelease, out: str | os.PathLike[str], form: str = "unclipped") -> Any:
    """Write ``release.table(form)`` to ``out`` (``.csv`` or ``.parquet``), atomically; return the table."""
    path = Path(out)
    suffix = path.suffix.lower()
    if suffix not in TABLE_SUFFIXES:
        raise StoreError(f"{path.name}: the table file must end in {' or '.join(TABLE_SUFFIXES)}")
    if form not in TABLE_FORMS:
        raise StoreError(f"table form ({form!r}) must be one of {', '.join(TABLE_FORMS)}")
    if not path.parent.is_dir():
        raise StoreError(f"{path}: folder {path.parent} does not exist")
    table = release.table(form)  # type: ignore[arg-type]

    def write(tmp: Path) -> None:
        if suffix == ".csv":
            table.to_csv(tmp, index=False, lineterminator="\n")
            return
        try:
            table.to_parquet(tmp, index=False)
        except ImportError:
            raise StoreError(
                "writing Parquet needs pyarrow (install dpdesk's 'sources' extra), or write .csv"
            ) from None

    write_atomically(path, write)
    return table
