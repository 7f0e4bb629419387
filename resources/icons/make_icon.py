"""Write dpdesk's app icon: ``dpdesk.svg`` (hand-built below), ``dpdesk.png`` (256 px, rendered by Qt),
and from it ``dpdesk.ico`` (Windows, 16–256 px) and ``dpdesk.icns`` (macOS) with Pillow; and the
project file's document icon the same way: ``dpdesk-project.svg``, ``.png`` and ``.ico``.

The icon is a small per-cell budget heatmap (viridis shades) under a posterior curve with its
shaded credible interval — the two pictures the curator looks at all day. The document icon is a
page with a folded corner carrying that picture, so a project file is told apart from the app.
Run: ``QT_QPA_PLATFORM=offscreen python resources/icons/make_icon.py``.
"""

from __future__ import annotations

import math
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHADES = ["#440154", "#3b528b", "#21918c", "#5ec962", "#fde725"]
LEVELS = [[0, 1, 2, 1], [1, 3, 4, 2], [0, 2, 3, 1], [0, 1, 1, 0]]


def svg() -> str:
    cells = []
    x0, y0, size, gap = 54, 62, 34, 4
    for r, row in enumerate(LEVELS):
        for c, level in enumerate(row):
            cells.append(
                f'<rect x="{x0 + c * (size + gap)}" y="{y0 + r * (size + gap)}" width="{size}" height="{size}" '
                f'rx="5" fill="{SHADES[level]}"/>'
            )
    pts = []
    for i in range(61):
        x = 24 + i * (208 / 60)
        z = (x - 128) / 26
        y = 200 - 150 * math.exp(-abs(z) * 1.6)
        pts.append(f"{x:.1f},{y:.1f}")
    curve = " ".join(pts)
    band = [p for p in pts if 92 <= float(p.split(",")[0]) <= 164]
    band_path = f"M{band[0].split(',')[0]},200 L" + " L".join(band) + f" L{band[-1].split(',')[0]},200 Z"
    return f"""<svg xmlns="http://www.w3.org/2000/svg" width="256" height="256" viewBox="0 0 256 256">
  <rect x="8" y="8" width="240" height="240" rx="44" fill="#16213e"/>
  {"".join(cells)}
  <path d="{band_path}" fill="#ffffff" fill-opacity="0.28"/>
  <polyline points="{curve}" fill="none" stroke="#ffffff" stroke-width="9" stroke-linecap="round" stroke-linejoin="round"/>
  <line x1="128" y1="44" x2="128" y2="212" stroke="#ff5a4e" stroke-width="6" stroke-linecap="round"/>
</svg>
"""


def document_svg() -> str:
    """The project file's icon: a white page, top-right corner folded, the app's picture on it."""
    app = svg().split("\n", 1)[1].rsplit("</svg>", 1)[0]  # the app icon's shapes, without its <svg> tag
    return f"""<svg xmlns="http://www.w3.org/2000/svg" width="256" height="256" viewBox="0 0 256 256">
  <path d="M44,8 H170 L220,58 V236 Q220,248 208,248 H44 Q32,248 32,236 V20 Q32,8 44,8 Z" fill="#ffffff" stroke="#8a8f98" stroke-width="6" stroke-linejoin="round"/>
  <path d="M170,8 V46 Q170,58 182,58 H220" fill="#dfe3ea" stroke="#8a8f98" stroke-width="6" stroke-linejoin="round"/>
  <g transform="translate(56,92) scale(0.5625)">{app}</g>
</svg>
"""


def render(text: str, out: Path) -> None:
    """Render SVG ``text`` to a 256x256 PNG at ``out`` with Qt."""
    from PySide6.QtCore import QByteArray, Qt
    from PySide6.QtGui import QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    app = QGuiApplication.instance() or QGuiApplication([])  # noqa: F841 - needed for painting
    image = QImage(256, 256, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    QSvgRenderer(QByteArray(text.encode())).render(painter)
    painter.end()
    image.save(str(out))


def main() -> None:
    from PIL import Image

    sizes = [(16, 16), (24, 24), (32, 32), (48, 48), (64, 64), (128, 128), (256, 256)]
    for name, text in (("dpdesk", svg()), ("dpdesk-project", document_svg())):
        (HERE / f"{name}.svg").write_text(text, encoding="utf-8")
        render(text, HERE / f"{name}.png")
        Image.open(HERE / f"{name}.png").save(HERE / f"{name}.ico", sizes=sizes)
    Image.open(HERE / "dpdesk.png").save(HERE / "dpdesk.icns")


if __name__ == "__main__":
    main()
