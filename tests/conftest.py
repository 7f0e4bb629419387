"""Test-wide setup: Qt runs offscreen and never touches the user's runtime directory."""

import json
import os
import tempfile

# One BLAS thread: on a machine whose cores are already busy (the whole suite, other jobs), a
# multithreaded BLAS spins against itself — a 300×300 eigh measured 35 ms on one thread and 840 ms
# on two under load. Set before numpy is first imported, so it takes effect.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

# dpdesk's per-user data folder (source keys, demo copies, receipts): one throwaway folder per run, never the
# user's; the receipt log is each test's own (_own_receipts below)
if not os.environ.get("DPDESK_DATA_DIR"):
    os.environ["DPDESK_DATA_DIR"] = tempfile.mkdtemp(prefix="dpdesk-data-")
if not os.environ.get("XDG_RUNTIME_DIR"):
    os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="dpdesk-xdg-")
    os.chmod(os.environ["XDG_RUNTIME_DIR"], 0o700)
# The GUI tests run on a laptop's screen: the offscreen platform's one screen leaves 1024×700 to windows
# (issue 34: every window and dialog must fit there), unless the caller chose a platform of their own.
SCREEN = (1024, 700)
if not os.environ.get("QT_QPA_PLATFORM"):
    _screen = os.path.join(tempfile.mkdtemp(prefix="dpdesk-screen-"), "screen.json")
    with open(_screen, "w", encoding="utf-8") as _f:
        json.dump(
            {"screens": [{"name": "laptop", "x": 0, "y": 0, "width": SCREEN[0], "height": SCREEN[1]}]}, _f
        )
    os.environ["QT_QPA_PLATFORM"] = f"offscreen:configfile={_screen}"

# Property tests are reproducible: the same examples on every machine and every run (CI starts from a
# clean clone with no example database), so a green run here is a green run there. Nothing in them
# depends on the clock: no deadline per example, and no "too slow" health check (generating the examples
# takes longer on a loaded machine; that is not a failure of the code).
from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile(
    "dpdesk",
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("dpdesk")

# shared test helpers (tests/stats_helpers.py) import by name under --import-mode=importlib
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))


# --- a real local Spark, one session per test module (the JVM starts once per run, ~8 s; a later
# module's session reuses it and starts in about a second) ---------------------------------------------
import shutil  # noqa: E402

import pytest  # noqa: E402


@pytest.fixture(scope="module")
def spark():
    """A real ``local[2]`` Spark session started by dpdesk's own :func:`spark_session`; stopped after the
    module, so no Spark threads run beside the tests that follow."""
    pytest.importorskip("pyspark", reason="the Spark tests need dpdesk[spark] (make test installs it)")
    if not shutil.which("java") and not os.environ.get("JAVA_HOME"):
        pytest.skip("the Spark tests need Java 17 or later (make sysdeps installs it)")
    from dpdesk.sources.spark import spark_session

    # C1-only JIT: on 2 shared cores the JVM's optimising compiler competes with the tests themselves;
    # without it start-up plus the first queries take about half as long (measured: 35 s → 18 s).
    session = spark_session("local[2]", {"spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1"})
    yield session
    session.stop()
    assert session.sparkContext._jsc is None  # stopped: no JVM job keeps running after the tests


# --- the receipt log (store/receipts.py) is each test's own -----------------------------------------------
@pytest.fixture(autouse=True)
def _own_receipts(tmp_path_factory, monkeypatch):
    """dpdesk keeps every ledger head it records or shows in a receipt log in the user's data folder, and
    verify checks a project file against it: a test gets a fresh log, so no other test's copies of a project
    (the same project to the log) meet its own."""
    monkeypatch.setenv("DPDESK_RECEIPTS_DIR", str(tmp_path_factory.mktemp("receipts")))
