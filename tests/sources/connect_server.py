"""A real Spark Connect server for the tests, started from the pyspark package itself.

``SPARK_HOME`` is the installed ``pyspark`` folder (its wheel ships ``sbin/start-connect-server.sh`` and
the Connect jar); the server runs ``local[2]`` on a free loopback port, with its logs, pid file,
warehouse and Derby files in a fresh temporary folder. :func:`start` waits until the port answers and
the server has said it started; :meth:`ConnectServer.stop` runs ``stop-connect-server.sh`` and waits
until the port is closed. Also a CPS-style table (the columns of the CPS1988 wage data: wage,
education, experience, ethnicity, smsa, region, parttime; 28 155 rows from a fixed seed).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

CPS_ROWS = 28_155
# the example schema docs/scaling.md binds a cluster table with
CPS_SCHEMA = json.loads(
    (Path(__file__).resolve().parents[2] / "resources" / "examples" / "cps.schema.json").read_text()
)


def cps_like(rows: int = CPS_ROWS, seed: int = 1988) -> pd.DataFrame:
    """A table with CPS1988's columns and plausible dependencies (wage on education and experience)."""
    rng = np.random.default_rng(seed)
    education = np.clip(np.rint(rng.normal(13, 2.9, rows)), 0, 18).astype(np.int64)
    experience = np.clip(np.rint(rng.gamma(2.2, 8.0, rows)) - 4, -4, 63).astype(np.int64)
    wage = np.exp(
        4.3 + 0.086 * education + 0.08 * experience - 0.0013 * experience**2 + rng.normal(0, 0.6, rows)
    )
    frame = pd.DataFrame(
        {
            "wage": np.round(wage, 2),
            "education": education,
            "experience": experience,
            "ethnicity": rng.choice(["cauc", "afam"], rows, p=[0.92, 0.08]),
            "smsa": rng.choice(["yes", "no"], rows, p=[0.74, 0.26]),
            "region": rng.choice(["northeast", "midwest", "south", "west"], rows, p=[0.23, 0.24, 0.31, 0.22]),
            "parttime": rng.choice(["no", "yes"], rows, p=[0.91, 0.09]),
        }
    )
    frame.loc[::997, "wage"] = 25000.0  # a few wages beyond the last edge: out of domain
    return frame


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _answers(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(1.0)
        return s.connect_ex(("127.0.0.1", port)) == 0


@dataclass
class ConnectServer:
    port: int
    folder: Path
    env: dict[str, str]
    started_in: float  # seconds from the start script to the first answer

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    def log(self) -> str:
        return "\n".join(p.read_text(errors="replace")[-4000:] for p in (self.folder / "logs").glob("*.out"))

    def stop(self) -> None:
        script = spark_home() / "sbin" / "stop-connect-server.sh"
        subprocess.run(["bash", str(script)], env=self.env, capture_output=True, timeout=120)
        deadline = time.monotonic() + 60
        while _answers(self.port) and time.monotonic() < deadline:
            time.sleep(0.5)
        shutil.rmtree(self.folder, ignore_errors=True)


def start(timeout: float = 300.0) -> ConnectServer:
    """Start a ``local[2]`` Spark Connect server on a free loopback port; raise if it does not answer."""
    home = spark_home()
    folder = Path(tempfile.mkdtemp(prefix="dpdesk-spark-connect-"))
    port = _free_port()
    env = {
        **os.environ,
        "SPARK_HOME": str(home),
        "SPARK_LOG_DIR": str(folder / "logs"),
        "SPARK_PID_DIR": str(folder),
        "SPARK_IDENT_STRING": f"dpdesk-test-{port}",
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_CONF_DIR": str(folder / "conf"),  # no spark-defaults from elsewhere
    }
    (folder / "conf").mkdir()
    cmd = [
        "bash", str(home / "sbin" / "start-connect-server.sh"),
        "--master", "local[2]",
        "--conf", f"spark.connect.grpc.binding.port={port}",
        "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
        "--conf", "spark.ui.enabled=false",
        "--conf", f"spark.sql.warehouse.dir={folder / 'warehouse'}",
        "--conf", "spark.sql.shuffle.partitions=2",
        # C1-only JIT: on 2 shared cores the optimising compiler competes with the tests themselves
        "--driver-java-options", f"-XX:TieredStopAtLevel=1 -Dderby.system.home={folder}",
    ]  # fmt: skip
    t0 = time.monotonic()
    subprocess.run(cmd, env=env, capture_output=True, timeout=120, check=True, cwd=folder)
    server = ConnectServer(port, folder, env, 0.0)
    while not _answers(port):
        if time.monotonic() - t0 > timeout:
            log = server.log()
            server.stop()
            raise RuntimeError(f"Spark Connect did not answer on port {port} in {timeout:.0f} s\n{log}")
        time.sleep(0.5)
    server.started_in = time.monotonic() - t0
    return server
