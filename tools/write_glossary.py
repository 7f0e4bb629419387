"""Write docs/glossary.md from the app's one vocabulary (``dpdesk/gui/widgets/glossary.py``).

Run from the repository root after changing a term: ``.venv/bin/python tools/write_glossary.py``.
``tests/gui/test_glossary_words.py`` fails while the two differ.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dpdesk.gui.widgets.glossary import glossary_markdown  # noqa: E402

if __name__ == "__main__":
    (ROOT / "docs" / "glossary.md").write_text(glossary_markdown() + "\n", encoding="utf-8")
