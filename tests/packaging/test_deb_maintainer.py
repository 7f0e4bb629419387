"""The .deb names who built it as its Maintainer (Debian's DEBFULLNAME/DEBEMAIL, else git's identity)
and refuses a placeholder address; ``packaging/build.sh maintainer`` resolves it without building."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _maintainer(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    # an empty global git config, so only what the test sets counts
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DEB", "GIT_"))}
    base.update(HOME=str(tmp_path), GIT_CONFIG_GLOBAL=str(tmp_path / "gitconfig"), GIT_CONFIG_NOSYSTEM="1")
    base.update(env)
    return subprocess.run(
        ["bash", str(REPO / "packaging" / "build.sh"), "maintainer"],
        env=base,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_packager_named_by_debian_variables_is_the_maintainer(tmp_path):
    ran = _maintainer(tmp_path, DEBFULLNAME="Ana Curator", DEBEMAIL="ana@stats.agency.eu")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == "Ana Curator <ana@stats.agency.eu>\n"


@pytest.mark.parametrize(
    "mail", ["dpdesk-maintainers@example.org", "x@users.noreply.seed.example", "a@b.invalid"]
)
def test_a_placeholder_address_is_refused_in_one_line(tmp_path, mail):
    ran = _maintainer(tmp_path, DEBFULLNAME="dpdesk developers", DEBEMAIL=mail)
    assert ran.returncode == 2 and ran.stdout == ""
    assert ran.stderr.count("\n") == 1 and f"{mail} is a placeholder" in ran.stderr


def test_no_packager_at_all_is_refused_naming_the_variables(tmp_path):
    ran = _maintainer(tmp_path)
    if subprocess.run(
        ["git", "-C", str(REPO), "config", "--local", "user.email"], capture_output=True
    ).stdout:
        pytest.skip("this checkout has a git identity of its own")
    assert ran.returncode == 2 and ran.stderr.count("\n") == 1 and "DEBFULLNAME and DEBEMAIL" in ran.stderr


def test_the_control_template_has_no_address_of_its_own():
    control = (REPO / "packaging" / "deb" / "control.in").read_text(encoding="utf-8")
    assert "Maintainer: @MAINTAINER@\n" in control and "@example" not in control
