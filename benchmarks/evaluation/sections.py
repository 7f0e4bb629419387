"""docs/evaluation.md and docs/performance.md are shared by the benchmark scripts: each owns marked sections.

A script calls :func:`write_section` with its section's name and Markdown; the text between
``<!-- section: NAME -->`` and ``<!-- end: NAME -->`` is replaced (or appended, the first time), and
every other section is left exactly as it was. Sections appear in the order they were first written.

A script writes the docs only when asked (``--write-docs``, :func:`add_write_docs`): run anywhere else —
another checkout, a quick look, a loaded machine — it prints its results and leaves the docs alone.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

__all__ = ["DOCS", "add_write_docs", "read_section", "write_section"]

DOCS = Path(__file__).resolve().parents[2] / "docs"


def add_write_docs(parser: argparse.ArgumentParser, what: str) -> None:
    """``--write-docs``: also replace ``what`` (a section of docs/…); otherwise results are printed only.
    ``--no-write``, the old way to say "print only", is still accepted and changes nothing."""
    parser.add_argument(
        "--write-docs",
        action="store_true",
        help=f"also replace {what} (otherwise the results are only printed)",
    )
    parser.add_argument("--no-write", action="store_true", help=argparse.SUPPRESS)


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
