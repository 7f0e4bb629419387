"""Write dpdesk's app icon as a 256x256 PNG for /usr/share/icons/hicolor/256x256/apps/.

Usage: icon256.py ICONS_DIR OUT.png [NAME] — ICONS_DIR is the bundle's dpdesk/resources/icons folder.
Takes NAME.png (default dpdesk.png; for the app icon, else the largest PNG there) and scales it with
Qt, keeping the aspect ratio on a transparent square. Fails if there is no such PNG icon: a menu entry
or a file type without its icon is a broken install. ``NAME=dpdesk-project`` gives the document icon.
"""

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QImage, QPainter

SIZE = 256


def main(icons: Path, out: Path, name: str = "dpdesk") -> int:
    pngs = sorted(icons.glob("*.png")) if icons.is_dir() else []
    preferred = icons / f"{name}.png"
    if not pngs or (name != "dpdesk" and not preferred.is_file()):
        print(f"icon256: no PNG icon {name}.png in {icons}", file=sys.stderr)
        return 1
    src = preferred if preferred.is_file() else max(pngs, key=lambda p: QImage(str(p)).width())
    app = QGuiApplication([sys.argv[0]])  # noqa: F841 (QImage scaling needs no app, QPainter on text might)
    img = QImage(str(src))
    if img.isNull():
        print(f"icon256: {src} is not a readable image", file=sys.stderr)
        return 1
    scaled = img.scaled(
        SIZE, SIZE, Qt.AspectRatioMode.KeepAspectRatio, Qt.TransformationMode.SmoothTransformation
    )
    canvas = QImage(SIZE, SIZE, QImage.Format.Format_ARGB32)
    canvas.fill(Qt.GlobalColor.transparent)
    p = QPainter(canvas)
    p.drawImage((SIZE - scaled.width()) // 2, (SIZE - scaled.height()) // 2, scaled)
    p.end()
    out.parent.mkdir(parents=True, exist_ok=True)
    if not canvas.save(str(out), "PNG"):
        print(f"icon256: could not write {out}", file=sys.stderr)
        return 1
    print(f"icon256: {src.name} {img.width()}x{img.height()} -> {out.name} {SIZE}x{SIZE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1]), Path(sys.argv[2]), *sys.argv[3:4]))
