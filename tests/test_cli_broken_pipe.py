"""``dpdesk … --json | head``: when the reader goes away the command stops quietly — no "Broken pipe"
error line, no traceback at exit — whether the pipe breaks mid-output or at the final flush."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HISTORY = ROOT / "resources" / "examples" / "paper.history.json"


@pytest.mark.parametrize("requests", [1, 400])  # one line (breaks at exit's flush), ~400 kB (mid-output)
def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path, requests):
    queries = tmp_path / "q.jsonl"
    queries.write_text(
        "".join(
            json.dumps({"query": 'count(age="0-30")', "eps": 20 + i, "delta": 0.05}) + "\n"
            for i in range(requests)
        ),
        encoding="utf-8",
    )
    args = ["assess", "--history", str(HISTORY), "--queries", str(queries), "--json", "--cell-costs"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "dpdesk", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path
    )
    proc.stdout.close()  # the reader is gone before the first byte (as `| head -c 0`)
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 1
    assert err == "", err  # neither "dpdesk: error: Broken pipe" nor "Exception ignored ... BrokenPipeError"

    # the same command with a reader that stays prints all of it
    whole = subprocess.run(
        [sys.executable, "-m", "dpdesk", *args], capture_output=True, text=True, cwd=tmp_path
    )
    assert whole.returncode == 0 and whole.stderr == ""
    assert len(whole.stdout.splitlines()) == requests
