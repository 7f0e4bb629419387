"""docs/evaluation.md is shared by several benchmark scripts: each owns one marked section.

A script calls :func:`write_section` with its section's name and Markdown; the text between
``<!-- section: NAME -->`` and ``<!-- end: NAME -->`` is replaced (or appended, the first time), and
every other section is left exactly as it was. Sections appear in the order they were first written.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["read_section", "write_section"]


def _markers(name: str) -> tuple[str, str]:
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", name):
        raise ValueError(f"section name ({name!r}) must be lower-case letters, digits and '-'")
    return f"<!-- section: {name} -->", f"<!-- end: {name} -->"


def write_section(path: Path, name: str, markdown: str) -> None:
    """Replace section ``name`` of the Markdown file ``path`` with ``markdown`` (append if new)."""
    start, end = _markers(name)
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    block = f"{start}\n{markdown.strip()}\n{end}"
    i, j = text.find(start), text.find(end)
    if i >= 0 and j > i:
        text = text[:i] + block + text[j + len(end) :]
    else:
        text = (text.rstrip() + "\n\n" if text.strip() else "") + block + "\n"
    path.write_text(text, encoding="utf-8")


def read_section(path: Path, name: str) -> str | None:
    """The Markdown of section ``name`` (None when the file or the section is missing)."""
    start, end = _markers(name)
    if not path.exists():
        return None
    text = path.read_text(encoding="utf-8")
    i, j = text.find(start), text.find(end)
    return text[i + len(start) : j].strip() if i >= 0 and j > i else None
