"""The Linux desktop integration files, checked from the source tree in seconds (the installed .deb is
checked again by ``packaging/smoke_test.sh``): the project file type is recognised by name and by
content with shared-mime-info's own compiler and Qt's MIME database, and the desktop entry and the
AppStream metainfo pass their validators where those are installed.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DEB = REPO / "packaging" / "deb"
PROBE = textwrap.dedent("""
    import sys
    from PySide6.QtCore import QCoreApplication, QMimeDatabase
    app = QCoreApplication([])
    db = QMimeDatabase()
    for f in sys.argv[1:]:
        t = db.mimeTypeForFile(f)
        print(t.name(), t.iconName(), ",".join(t.parentMimeTypes()))
""")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    from dpdesk.store.project import Project

    schema = {"attributes": [{"name": "sex", "column": "sex", "kind": "categorical", "values": ["F", "M"]}]}
    table = tmp_path / "t.csv"
    table.write_text("sex\nF\nM\nF\n")
    path = tmp_path / "P.dpdesk"
    Project.create(path, name="P", schema=schema, source_location=str(table), total_budget=1.0).close()
    return path


def test_project_type_by_name_and_by_content(tmp_path: Path, project: Path) -> None:
    if not shutil.which("update-mime-database"):
        pytest.skip("shared-mime-info is not installed")
    pytest.importorskip("PySide6")
    data = tmp_path / "share"
    (data / "mime" / "packages").mkdir(parents=True)
    shutil.copyfile(DEB / "dpdesk-mime.xml", data / "mime" / "packages" / "dpdesk.xml")
    subprocess.run(["update-mime-database", str(data / "mime")], check=True, capture_output=True)
    renamed = tmp_path / "renamed-project"  # no suffix: only the content can tell
    shutil.copyfile(project, renamed)
    other = tmp_path / "other-db"  # an SQLite database of another program
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE t (x)")
    conn.close()
    env = {k: v for k, v in os.environ.items() if k != "XDG_DATA_DIRS"}
    env.update(XDG_DATA_HOME=str(data), QT_QPA_PLATFORM="offscreen")
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(project), str(renamed), str(other)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout.splitlines()
    assert out[0] == "application/x-dpdesk-project application-x-dpdesk-project application/vnd.sqlite3"
    assert out[1] == out[0]
    assert out[2].split()[0] == "application/vnd.sqlite3"


def test_the_document_icon_is_shipped_under_the_name_the_type_gives() -> None:
    assert 'icon name="application-x-dpdesk-project"' in (DEB / "dpdesk-mime.xml").read_text()
    icons = REPO / "resources" / "icons"
    for name in ("dpdesk-project.svg", "dpdesk-project.png", "dpdesk-project.ico"):
        assert (icons / name).is_file(), name


def test_desktop_entry_declares_the_type_and_validates() -> None:
    entry = (DEB / "dpdesk.desktop").read_text()
    assert "MimeType=application/x-dpdesk-project;" in entry.splitlines()
    assert "Exec=dpdesk %f" in entry.splitlines()
    if not shutil.which("desktop-file-validate"):
        pytest.skip("desktop-file-validate is not installed")
    proc = subprocess.run(
        ["desktop-file-validate", str(DEB / "dpdesk.desktop")], capture_output=True, text=True
    )
    assert proc.returncode == 0 and not proc.stdout.strip(), proc.stdout + proc.stderr


def test_appstream_metainfo_validates(tmp_path: Path) -> None:
    if not shutil.which("appstreamcli"):
        pytest.skip("appstreamcli is not installed (Debian: appstream)")
    text = (DEB / "org.dpdesk.dpdesk.metainfo.xml").read_text()
    assert "application/x-dpdesk-project" in text and '<launchable type="desktop-id">dpdesk.desktop<' in text
    from dpdesk import __version__

    out = tmp_path / "org.dpdesk.dpdesk.metainfo.xml"
    out.write_text(text.replace("@VERSION@", __version__).replace("@DATE@", "2026-01-01"))
    proc = subprocess.run(["appstreamcli", "validate", "--no-net", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
