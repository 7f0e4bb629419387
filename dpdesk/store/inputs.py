"""Schema files as the curator hands them to dpdesk, read with one-line errors.

The command line's ``project new`` and ``cube`` read them here, so a missing file, a JSON typo or a bad
member is reported the same way by both: ``people.schema.json: attributes[1].edges: …``.
"""

from __future__ import annotations

import os
from pathlib import Path

from dpdesk.engine.errors import SchemaError
from dpdesk.engine.jsontext import parse_json
from dpdesk.engine.schema import Schema


def read_schema_file(path: str | os.PathLike[str]) -> Schema:
    """The schema in a ``*.schema.json`` file (DESIGN §6); errors name the file and the member."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise SchemaError(f"no such schema file: {path}") from None
    obj = parse_json(text, str(path), SchemaError)
    try:
        return Schema.from_dict(obj)
    except SchemaError as exc:
        raise SchemaError(f"{path}: {exc}") from None
