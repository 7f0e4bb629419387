"""The curator's source key: a secret on this machine, never in a project file.

A project notices that its source changed by comparing a keyed fingerprint of the cube
(:func:`dpdesk.sources.fingerprint.cube_fingerprint`, HMAC-SHA256). The key is 32 random bytes kept in
the per-user data folder (``<data folder>/source-keys/<key id>.key``, readable by the user only), so
the fingerprint in a shared project file tells nobody else anything about the data: without the key
it cannot be recomputed, and so no candidate table can be tested against it. One key serves every
project this user binds on this machine (``own`` names it); a project records the key's public id.

Another machine (or an auditor) without that key still opens, verifies and exports the project; only
the changed-source check is unavailable there, and releasing needs either that key copied into its
key folder or a ``dpdesk project rebind`` with the key of the machine now holding the data.

The data folder is platformdirs' per-user data directory for dpdesk, or ``$DPDESK_DATA_DIR`` when set.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from dpdesk.store.errors import StoreError

KEY_BYTES = 32
DATA_DIR_VARIABLE = "DPDESK_DATA_DIR"
_ID = re.compile(r"[0-9a-f]{16}")


def data_folder() -> Path:
    """The per-user folder where dpdesk keeps its own files (source keys, demo projects)."""
    given = os.environ.get(DATA_DIR_VARIABLE)
    if given:
        return Path(given)
    import platformdirs

    return Path(platformdirs.user_data_dir("dpdesk", "dpdesk"))


def key_folder() -> Path:
    """Where this user's source keys live."""
    return data_folder() / "source-keys"


@dataclass(frozen=True)
class SourceKey:
    """A source key: its public id (named in project files) and its secret (only in the key folder)."""

    key_id: str
    secret: bytes = field(repr=False)


def key_id_of(secret: bytes) -> str:
    """The public id of a key: 16 hex digits of an HMAC under it (says nothing about any data)."""
    return hmac.new(secret, b"dpdesk source key id", hashlib.sha256).hexdigest()[:16]


def find_key(key_id: str) -> SourceKey | None:
    """The key with this id from this user's key folder, or None when this machine does not have it."""
    if not _ID.fullmatch(key_id or ""):
        return None
    try:
        text = (key_folder() / f"{key_id}.key").read_text(encoding="ascii").strip()
        secret = bytes.fromhex(text)
    except (OSError, ValueError):
        return None
    return SourceKey(key_id, secret) if len(secret) == KEY_BYTES and key_id_of(secret) == key_id else None


def own_key() -> SourceKey:
    """This user's key for new bindings, made (and kept in the key folder) the first time it is needed."""
    folder = key_folder()
    own = folder / "own"
    with contextlib.suppress(OSError):
        key = find_key(own.read_text(encoding="ascii").strip())
        if key is not None:
            return key
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        secret = secrets.token_bytes(KEY_BYTES)
        key = SourceKey(key_id_of(secret), secret)
        _write_new(folder / f"{key.key_id}.key", secret.hex() + "\n")
        tmp = folder / f".own.{os.getpid()}.{secrets.token_hex(4)}"
        _write_new(tmp, key.key_id + "\n")
        try:
            os.link(tmp, own)  # never replaces an ``own`` another process made meanwhile
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    except OSError as exc:
        raise StoreError(
            f"cannot keep the source key in {folder} ({exc.strerror or exc}); "
            f"set {DATA_DIR_VARIABLE} to a folder you can write"
        ) from None
    chosen = find_key(own.read_text(encoding="ascii").strip())
    if chosen is None:
        raise StoreError(f"{own}: does not name a source key in {folder}")
    return chosen


def _write_new(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
