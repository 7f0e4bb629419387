"""Schema files as the curator hands them to dpdesk, read with one-line errors.

The command line's ``project new`` and ``cube`` read them here, so a missing file, a JSON typo or a bad
member is reported the same way by both: ``people.schema.json: attributes[1].edges: …``.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from dpdesk.engine.errors import DpdeskError, SchemaError
from dpdesk.engine.jsontext import parse_json
from dpdesk.engine.schema import Schema

# The largest text file dpdesk reads whole (a schema, a request list, a history): far above any real one.
MAX_TEXT_BYTES = 256 * 2**20


def read_text_file(path: str | os.PathLike[str], what: str, error: type[DpdeskError] = DpdeskError) -> str:
    """The UTF-8 text of the regular file ``path`` (``what`` names it in errors, e.g. "schema file").

    A FIFO or a device is refused rather than read (reading a FIFO waits for a writer that may never
    come), as is a file larger than :data:`MAX_TEXT_BYTES` or one that is not UTF-8 text: one line each.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise error(f"no such {what}: {path}") from None
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise error(f"{path}: a folder, not a {what}")
    if not stat.S_ISREG(st.st_mode):
        raise error(f"{path}: not a regular file (a pipe or a device), not a {what}")
    if st.st_size > MAX_TEXT_BYTES:
        raise error(f"{path}: {st.st_size / 2**20:.0f} MiB is too large for a {what}")
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not UTF-8 text (byte {exc.start}), not a {what}") from None


def read_schema_file(path: str | os.PathLike[str]) -> Schema:
    """The schema in a ``*.schema.json`` file (DESIGN §6); errors name the file and the member."""
    text = read_text_file(path, "schema file", SchemaError)
    obj = parse_json(text, str(path), SchemaError)
    try:
        return Schema.from_dict(obj)
    except SchemaError as exc:
        raise SchemaError(f"{path}: {exc}") from None
