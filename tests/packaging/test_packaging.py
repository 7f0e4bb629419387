"""Packaging end to end: the wheel in a fresh venv, and the Linux bundle and .deb installed for real.

Both are slow (minutes: the .deb alone builds a PyInstaller bundle), so ``make test`` leaves them out
(marker ``installers``, deselected in pyproject.toml) and ``make package-test`` runs them; CI runs both
targets, so the installers cannot silently rot:

- ``test_wheel_in_fresh_venv``: build the wheel from a clean copy of the tree, check it carries the
  demo and the icons, install it with its dependencies into a brand-new venv (pip serves the heavy
  wheels from its cache), and run the installed ``dpdesk --self-test`` from an empty directory.
- ``test_deb_smoke``: ``packaging/build.sh`` (wheel, PyInstaller bundle, .deb), then
  ``packaging/smoke_test.sh`` (install with apt-get, check files and the .desktop entry, run the
  installed self-test offscreen, remove). Needs root on a Debian-family system; skipped otherwise.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "packaging" / "build.sh"
SMOKE = REPO / "packaging" / "smoke_test.sh"

pytestmark = pytest.mark.slow
# Building the bundle takes minutes even on a quiet machine: the installers' tests get an hour each
# (pyproject's default: 600 s).
INSTALLER_TIMEOUT = 3600

# `dpdesk --self-test` must reach dpdesk.selftest.main (dpdesk.cli hands it over). Should that routing
# go missing, the tests still build and install everything and run the self-test as
# `python -m dpdesk.selftest`, then xfail naming the problem (never a silent pass).
MISSING_DISPATCH = "dpdesk.cli.main does not hand --self-test/--startup-probe to dpdesk.selftest.main"


def _launch_dispatches() -> bool:
    sources = [REPO / "dpdesk" / "cli.py", REPO / "dpdesk" / "gui" / "launch.py"]
    return any(p.is_file() and "selftest" in p.read_text(encoding="utf-8") for p in sources)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", QT_QPA_PLATFORM="offscreen", **extra)
    return env


def _run(
    cmd: list[str], timeout: float, cwd: Path | None = None, check: bool = True, **env: str
) -> subprocess.CompletedProcess[str]:
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=cwd, env=_env(**env), capture_output=True, text=True, timeout=timeout)
    took = time.monotonic() - t0
    print(f"[{took:6.1f} s] {' '.join(str(c) for c in cmd)}")
    if check and proc.returncode != 0:
        pytest.fail(
            f"{cmd[0]} exited {proc.returncode} after {took:.0f} s\n--- stdout\n{proc.stdout[-6000:]}"
            f"\n--- stderr\n{proc.stderr[-6000:]}"
        )
    return proc


@pytest.mark.installers
@pytest.mark.timeout(INSTALLER_TIMEOUT)
def test_wheel_in_fresh_venv(tmp_path: Path) -> None:
    _run(["bash", str(BUILD), "wheel"], timeout=600)
    wheels = sorted((REPO / "packaging" / "out" / "wheel").glob("dpdesk-*.whl"))
    assert len(wheels) == 1, wheels
    # every folder that ships is a declared package (setuptools warns, and will stop shipping it, if not)
    log = (REPO / "packaging" / "out" / "wheel.log").read_text(encoding="utf-8", errors="replace")
    assert "BuildBackendWarning" not in log and "absent from the `packages`" not in log, log[-3000:]
    names = set(zipfile.ZipFile(wheels[0]).namelist())
    for needed in (
        "dpdesk/resources/demo/adult.parquet",
        "dpdesk/resources/demo/adult.schema.json",
        "dpdesk/resources/demo/requests.json",
        "dpdesk/resources/icons/dpdesk.png",
        "dpdesk/resources/icons/dpdesk.svg",
        "dpdesk/resources/icons/dpdesk.ico",
        "dpdesk/resources/icons/dpdesk.icns",
        "dpdesk/resources/examples/paper.history.json",
        "dpdesk/resources/spark/log4j2.properties",
        "dpdesk/selftest.py",
        "dpdesk/gui/app/launch.py",
    ):
        assert needed in names, f"the wheel lacks {needed}"
    entry_points = (
        zipfile.ZipFile(wheels[0])
        .read(next(n for n in names if n.endswith(".dist-info/entry_points.txt")))
        .decode()
    )
    assert "[gui_scripts]" in entry_points and "dpdesk = dpdesk.cli:main" in entry_points

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    bindir = env_dir / ("Scripts" if sys.platform == "win32" else "bin")
    # The plain wheel, no extras: a default install must be the whole curator's app (GUI, DuckDB, OpenDP).
    _run([str(bindir / "python"), "-m", "pip", "install", "-q", str(wheels[0])], timeout=1200)
    empty = tmp_path / "elsewhere"  # nothing here shadows the installed package
    empty.mkdir()
    where = _run(
        [str(bindir / "python"), "-c", "import dpdesk, sys; print(dpdesk.__file__)"], timeout=60, cwd=empty
    )
    assert str(env_dir) in where.stdout, where.stdout
    proc = _run([str(bindir / "dpdesk"), "--self-test", "--verbose"], timeout=600, cwd=empty, check=False)
    if proc.returncode != 0 and "unrecognized arguments: --self-test" in proc.stderr:
        module = _run([str(bindir / "python"), "-m", "dpdesk.selftest", "--verbose"], timeout=600, cwd=empty)
        assert "self-test passed" in module.stdout, module.stdout
        pytest.xfail(MISSING_DISPATCH)
    assert proc.returncode == 0, f"dpdesk --self-test exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    print(proc.stdout)
    assert "self-test passed" in proc.stdout
    assert "(python, offscreen)" in proc.stdout


def _debian_root() -> str | None:
    if sys.platform != "linux" or not shutil.which("dpkg-deb") or not shutil.which("apt-get"):
        return "needs a Debian-family system (dpkg-deb, apt-get)"
    if os.geteuid() != 0:
        return "needs root: the smoke test installs and removes the .deb system-wide"
    return None


@pytest.mark.installers
@pytest.mark.timeout(INSTALLER_TIMEOUT)
@pytest.mark.skipif(_debian_root() is not None, reason=_debian_root() or "")
def test_deb_smoke() -> None:
    if not _launch_dispatches():
        pytest.xfail(MISSING_DISPATCH)  # the installed `dpdesk --self-test` could not pass; save 5 minutes
    packager = {"DEBFULLNAME": "dpdesk smoke test", "DEBEMAIL": f"root@{socket.gethostname()}"}
    _run(["bash", str(BUILD), "all"], timeout=1800, **packager)
    debs = sorted((REPO / "packaging" / "out").glob("dpdesk_*.deb"))
    assert len(debs) == 1, debs
    contents = _run(["dpkg-deb", "--contents", str(debs[0])], timeout=120).stdout
    for needed in (
        "./opt/dpdesk/dpdesk",
        "./usr/bin/dpdesk -> /opt/dpdesk/dpdesk",
        "./usr/share/applications/dpdesk.desktop",
        "./usr/share/icons/hicolor/256x256/apps/dpdesk.png",
        "./opt/dpdesk/_internal/dpdesk/resources/demo/adult.parquet",
    ):
        assert needed in contents, f"the .deb lacks {needed}"
    maintainer = _run(["dpkg-deb", "--field", str(debs[0]), "Maintainer"], timeout=60).stdout.strip()
    assert maintainer == f"{packager['DEBFULLNAME']} <{packager['DEBEMAIL']}>"
    control = _run(["dpkg-deb", "--field", str(debs[0]), "Depends"], timeout=60).stdout
    for lib in ("libgl1", "libegl1", "libfontconfig1", "libxcb-icccm4", "libxcb-keysyms1"):
        assert lib in control, f"Depends lacks {lib}"
    proc = _run(["bash", str(SMOKE), str(debs[0])], timeout=900)
    print(proc.stdout)
    assert "all checks passed" in proc.stdout


def test_platform_icons_hold_every_size_the_installers_use() -> None:
    from PIL import Image

    icons = REPO / "resources" / "icons"
    ico = Image.open(icons / "dpdesk.ico")
    assert ico.format == "ICO" and {(16, 16), (32, 32), (48, 48), (256, 256)} <= set(ico.info["sizes"])
    icns = Image.open(icons / "dpdesk.icns")
    assert icns.format == "ICNS" and icns.size[0] >= 256
