"""Fingerprints of a source: the keyed fingerprint of its cube, and the plain hash of its files.

A project notices a changed source by :func:`cube_fingerprint`: an HMAC-SHA256, under a secret key kept
on the curator's machine (:mod:`dpdesk.store.source_key`), of the cube's counts and its out-of-domain
count. The cube is what every release reads and every command that reads the source builds anyway, so
the fingerprint reads nothing more (no second pass over the files, no ``COUNT(*)``), and it changes
exactly when something a release could see changed. Without the key it cannot be recomputed, so a
project file holding it can be shared: nobody can test a candidate table against it.

:func:`hash_files` — the SHA-256 of a file's bytes (a glob: of the sorted
``relative-name<TAB>sha256-of-content`` lines), streamed in constant memory — is the fingerprint project
files of format 7 and older kept *unkeyed*, with the exact row count: it is computed only to check such
an old binding, and for ``dpdesk cube`` (the curator's private look at a table).
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Sequence

import numpy as np

from dpdesk.engine.cube import Cube
from dpdesk.sources.base import CancelCheck, Progress, check_cancelled, report

CHUNK_BYTES = 1 << 20
CUBE_METHOD = "hmac-sha256-cube"


def cube_fingerprint(cube: Cube, secret: bytes, salt: bytes) -> str:
    """HMAC-SHA256 under ``secret`` of ``salt``, the cube's shape, its counts (C order, int64 little-endian)
    and its out-of-domain count, as hex — then, for each measure the schema declares, its name, per-cell
    sums (float64 little-endian) and numbers of values summed, so a changed measure value is noticed too
    (a cube without measures has the digest it always had). ``salt`` (random per binding, stored beside
    the digest) keeps two bindings of the same table from showing the same digest.

    Examples
    --------
    >>> from dpdesk.engine.schema import Schema
    >>> s = Schema.from_dict({"attributes": [{"name": "a", "column": "a", "kind": "categorical",
    ...                                       "values": ["x", "y"]}]})
    >>> c = Cube(s, np.array([3, 4]), out_of_domain=1)
    >>> d = cube_fingerprint(c, b"k" * 32, b"salt")
    >>> d == cube_fingerprint(Cube(s, np.array([3, 4]), out_of_domain=1), b"k" * 32, b"salt")
    True
    >>> d == cube_fingerprint(Cube(s, np.array([3, 4]), out_of_domain=2), b"k" * 32, b"salt")
    False
    >>> d == cube_fingerprint(c, b"j" * 32, b"salt")
    False
    """
    h = hmac.new(secret, b"dpdesk cube fingerprint v1\0", hashlib.sha256)
    h.update(len(salt).to_bytes(4, "little") + salt)
    shape = cube.counts.shape
    h.update(len(shape).to_bytes(4, "little") + b"".join(int(n).to_bytes(8, "little") for n in shape))
    h.update(np.ascontiguousarray(cube.counts, dtype="<i8").tobytes())
    h.update(int(cube.out_of_domain).to_bytes(8, "little", signed=True))
    for m in cube.measures:
        name = m.name.encode("utf-8", "surrogatepass")
        h.update(b"\0measure" + len(name).to_bytes(4, "little") + name)
        h.update(np.ascontiguousarray(m.sums, dtype="<f8").tobytes())
        h.update(np.ascontiguousarray(m.counts, dtype="<i8").tobytes())
    return h.hexdigest()


def _hash_file(
    path: str, done: int, total: int, progress: Progress, cancelled: CancelCheck
) -> tuple[str, int]:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            check_cancelled(cancelled, "fingerprint")
            block = f.read(CHUNK_BYTES)
            if not block:
                break
            h.update(block)
            done += len(block)
            report(progress, done / total if total else 1.0)
    return h.hexdigest(), done


def hash_files(
    paths: Sequence[str], root: str | None = None, *, progress: Progress = None, cancelled: CancelCheck = None
) -> tuple[str, str]:
    """``(method, hex digest)`` for ``paths``: ``"sha256"`` for one file, ``"sha256-files"`` for several.

    Names in the multi-file digest are relative to ``root`` (the glob's fixed directory).
    """
    total = sum(os.path.getsize(p) for p in paths)
    done = 0
    if len(paths) == 1:
        digest, _ = _hash_file(paths[0], 0, total, progress, cancelled)
        return "sha256", digest
    listing = hashlib.sha256()
    named = sorted((os.path.relpath(p, root) if root else os.path.basename(p), p) for p in paths)
    for name, path in named:
        digest, done = _hash_file(path, done, total, progress, cancelled)
        listing.update(f"{name}\t{digest}\n".encode("utf-8", "surrogateescape"))
    report(progress, 1.0)
    return "sha256-files", listing.hexdigest()
