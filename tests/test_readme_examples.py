"""Every ``dpdesk`` line in the README's shell examples runs as written, in order, from the top of a
checkout (``resources/`` beside it), and exits 0."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from cli_helpers import run_dpdesk

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[list[str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            if words and words[0] == "dpdesk":
                commands.append(words[1:])
    return commands


def test_the_readme_has_the_walkthrough():
    commands = [" ".join(c[:2]) for c in readme_commands()]
    for needed in ("assess --history", "project new", "requests add", "answer P.dpdesk", "verify P.dpdesk"):
        assert any(c.startswith(needed) for c in commands), needed


def test_every_readme_command_runs_as_written(tmp_path):
    (tmp_path / "resources").symlink_to(ROOT / "resources", target_is_directory=True)
    for args in readme_commands():
        ran = run_dpdesk(*args, cwd=tmp_path)
        assert ran.returncode == 0, f"dpdesk {shlex.join(args)}\n{ran.stdout}{ran.stderr}"
    assert (tmp_path / "H.json").is_file()  # the walkthrough's export
