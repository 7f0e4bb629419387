"""A fork server for the fault-injection test: runs ``dpdesk`` CLI commands in fresh child processes.

Starting Python and importing numpy, scipy, pandas, DuckDB and OpenDP takes over a second per
process; forking a process that has already imported them takes milliseconds. This server imports
dpdesk once, then for each JSON command on stdin (``{"argv": [...], "env": {...}}``) forks a child
that sets the environment, re-reads the crash-point settings and runs ``dpdesk.cli.main(argv)`` with
stdout and stderr going to a file. The child is a real, separate process: the crash points SIGKILL
it exactly as they would kill ``python -m dpdesk``. The server answers one JSON line per command:
``{"signal": 9 or null, "code": exit code or null, "output": what the child printed}``.
The server itself never opens a project or a source, so no SQLite or DuckDB state crosses a fork.
"""

import json
import os
import sys
import tempfile

import opendp.prelude  # noqa: F401

import dpdesk.cli
import dpdesk.engine.mechanisms.secure_noise
import dpdesk.sources.duck
import dpdesk.store.project
from dpdesk.store import checkpoints


def child(argv, env, out_path):
    fd = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    sys.stdout = open(1, "w", closefd=False, buffering=1)
    sys.stderr = sys.stdout
    sys.stdin = open(0, closefd=False)
    os.environ.update(env)
    checkpoints.configure()
    try:
        code = dpdesk.cli.main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException as exc:  # a traceback would be a bug: report it as exit 99
        print(f"UNCAUGHT {type(exc).__name__}: {exc}")
        code = 99
    sys.stdout.flush()
    os._exit(code)


def main():
    out_path = os.path.join(tempfile.mkdtemp(prefix="dpdesk-fork-"), "out.txt")
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        pid = os.fork()
        if pid == 0:
            child(cmd["argv"], cmd.get("env", {}), out_path)
        _, status = os.waitpid(pid, 0)
        with open(out_path, encoding="utf-8", errors="replace") as f:
            output = f.read()
        reply = {
            "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
            "code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
            "output": output,
        }
        print(json.dumps(reply), flush=True)


if __name__ == "__main__":
    main()
