"""What each part of the bundle costs on disk: a Markdown table for docs/install.md.

Usage: python packaging/bundle_sizes.py [BUNDLE_DIR] [--min-mb 2]

BUNDLE_DIR defaults to packaging/out/dist/dpdesk. Files are grouped by the part they belong to: a
Python package's folder under ``_internal/`` (PySide6 split into Qt's libraries, plugins, translations
and the bindings), and the shared libraries at ``_internal/``'s top level by the library family they
come from (``libQt6*``, ``libarrow*``, ``libicu*``, ...). Symlinks are not counted (they take no room).
Parts under ``--min-mb`` are summed into one line.
"""

from __future__ import annotations

import argparse
import re
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT = REPO / "packaging" / "out" / "dist" / "dpdesk"


def part_of(rel: Path) -> str:
    """The part a file of the bundle belongs to (``rel`` is relative to the bundle folder)."""
    parts = rel.parts
    if parts[0] != "_internal" or len(parts) == 1:
        return "executable"
    if len(parts) == 2:  # a file at _internal's top level: a shared library or the stdlib archive
        name = parts[1]
        if name.startswith("libpython"):
            return "libpython"
        if name.startswith("lib"):
            stem = re.split(r"[-_.\d]", name[3:], maxsplit=1)[0]
            return f"lib{stem}* (top level)"
        return name  # the stdlib archive, top-level extension modules (DuckDB's engine)
    top = parts[1]
    if top == "PySide6" and len(parts) > 3 and parts[2] == "Qt":
        return f"PySide6/Qt/{parts[3]}"
    if top == "PySide6":
        return "PySide6 (bindings)"
    if top.endswith(".dist-info"):
        return "*.dist-info"
    return top


def measure(bundle: Path) -> dict[str, tuple[int, int]]:
    sizes: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for path in bundle.rglob("*"):
        if path.is_file() and not path.is_symlink():
            entry = sizes[part_of(path.relative_to(bundle))]
            entry[0] += path.stat().st_size
            entry[1] += 1
    return {k: (v[0], v[1]) for k, v in sizes.items()}


def table(sizes: dict[str, tuple[int, int]], min_mb: float) -> str:
    total = sum(s for s, _ in sizes.values())
    files = sum(n for _, n in sizes.values())
    rows = ["| part | MB | files |", "|---|---:|---:|"]
    rest = [0, 0]
    for name, (size, count) in sorted(sizes.items(), key=lambda kv: -kv[1][0]):
        if size < min_mb * 1e6:
            rest[0] += size
            rest[1] += count
            continue
        rows.append(f"| {name} | {size / 1e6:.1f} | {count} |")
    if rest[1]:
        rows.append(f"| everything under {min_mb:g} MB | {rest[0] / 1e6:.1f} | {rest[1]} |")
    rows.append(f"| **total** | **{total / 1e6:.1f}** | **{files}** |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundle", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--min-mb", type=float, default=2.0)
    args = parser.parse_args(argv)
    if not (args.bundle / "_internal").is_dir():
        parser.error(f"{args.bundle}: not a PyInstaller one-folder bundle (no _internal/)")
    print(table(measure(args.bundle), args.min_mb))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
