"""Where Spark runs for dpdesk: the location's form, its settings and secrets, one session per process.

A Spark location is ``spark://MASTER`` — Spark inside this process's JVM (``local[*]``, ``local[N]``),
a standalone master (``spark://HOST:PORT``), ``yarn`` or ``k8s://...`` — or ``sc://HOST:PORT``, a Spark
Connect server (pyspark's thin client: no JVM here; what Databricks and recent Spark clusters expose).
Either may end in Spark Connect's parameter list, ``/;KEY=VALUE;KEY=VALUE``: Spark Connect's own
parameters (``user_id``, ``use_ssl``, ``session_id``, ...) and **session settings**, whose keys have a
dot (``spark.sql.shuffle.partitions``, ``spark.sql.catalog.lake.uri``; ``--spark-conf KEY=VALUE`` on
the command line). Values are percent-encoded where they hold ``;``, ``=`` or ``%``.

The location is stored in the project file (it says where the data is), so **secrets are never part
of it**: the ``token`` parameter and every setting whose key names a password, secret, token, credential
or key (:data:`SECRET_KEY`) are kept with an empty value, which says "given at run time". Their values
live in this process only (:func:`public_location` keeps what the command line gave), and later
processes read them from the environment: ``SPARK_CONNECT_AUTHENTICATE_TOKEN`` for the token (pyspark's
own variable) and ``DPDESK_SPARK_SECRET_<KEY>`` (the key upper-cased, other characters ``_``) for a
setting; a missing one is a one-line error naming its variable.

One process keeps one session per server (Spark Connect) or one local driver (:func:`spark_session`),
for its lifetime: the window reconnects to nothing between assessments. Sessions are released when the
process exits.
"""

from __future__ import annotations

import atexit
import importlib.resources
import os
import re
import threading
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from dpdesk.sources.base import SourceError, one_line, require_extra

__all__ = [
    "SCHEMES",
    "SparkLocation",
    "connect_session",
    "parse_location",
    "public_location",
    "release_sessions",
    "secret_variable",
    "spark_session",
]

SCHEMES = ("spark://", "sc://")
SECRET_KEY = re.compile(
    r"pass(word|wd)?|secret|token|credential|private[._-]?key|access[._-]?key|api[._-]?key|sas", re.IGNORECASE
)
TOKEN_VARIABLE = "SPARK_CONNECT_AUTHENTICATE_TOKEN"
_CONNECT_MODE = "SPARK_CONNECT_MODE_ENABLED"
_LOCAL_MASTER = re.compile(r"local(\[(\*|\d+)(,\s*\d+)?\])?")
_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*")
_SESSION_LOCK = threading.Lock()
_SECRETS: dict[tuple[str, str], str] = {}  # (public location, key) -> value given to this process
_REMOTE: dict[str, Any] = {}  # Spark Connect URL (without settings) -> its session
_APPLIED: dict[int, dict[str, str]] = {}  # id(session) -> the settings last set on it
# Errors only in the driver's log: dpdesk reports failures itself, in one line.
_LOG_CONFIG = Path(str(importlib.resources.files("dpdesk.resources").joinpath("spark", "log4j2.properties")))

# Settings dpdesk gives the session it starts. ANSI mode makes a bad value in a column read as numbers
# an error (as DuckDB's typed CSV read does) instead of a silent NULL that would count as out of domain.
SESSION_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.ansi.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
}
RUNTIME_CONF = ("spark.sql.ansi.enabled", "spark.sql.session.timeZone")  # also set on a running session


@dataclass(frozen=True)
class SparkLocation:
    """A parsed Spark location: ``base`` (``spark://MASTER`` or ``sc://HOST:PORT``), Spark Connect's
    parameters, the session settings in order, and which of either are secrets (empty here)."""

    base: str
    params: dict[str, str] = field(default_factory=dict)
    settings: dict[str, str] = field(default_factory=dict)
    secrets: tuple[str, ...] = ()

    @property
    def remote(self) -> bool:
        """True for Spark Connect (``sc://``)."""
        return self.base.startswith("sc://")

    @property
    def master(self) -> str:
        """The master URL of a ``spark://`` location (``local[2]``, ``spark://HOST:7077``, ``yarn``)."""
        rest = self.base[len("spark://") :]
        if _LOCAL_MASTER.fullmatch(rest) or rest == "yarn" or re.match(r"(k8s|mesos)://", rest):
            return rest
        return self.base  # a standalone cluster: Spark's own URL is spark://HOST:PORT

    def text(self) -> str:
        """The location as stored: secrets as empty values."""
        parts = [f"{k}={_enc(v)}" for k, v in self.params.items()]
        parts += [f"{k}={_enc(v)}" for k, v in self.settings.items()]
        return self.base + ("/;" + ";".join(parts) if parts else "")


def _enc(value: str) -> str:
    return quote(value, safe="/:@!$&'()*+,._-~[]{}<>|^`\"# ")


def parse_location(location: str) -> SparkLocation:
    """Split a Spark location into its parts (one-line :class:`SourceError` on a malformed one)."""
    text = location.strip()
    if not text.startswith(SCHEMES):
        raise SourceError(f"{location}: a Spark location starts with spark:// or sc://")
    base, _, rest = text.partition("/;")
    if base.endswith("/") and not base.endswith("://"):
        base = base[:-1]
    if base.startswith("sc://"):
        if not re.fullmatch(r"sc://[^/;:]+(:\d+)?", base):
            raise SourceError(
                f"{location}: a Spark Connect location is sc://HOST:PORT (Spark Connect's port is 15002)"
            )
    elif base == "spark://":
        raise SourceError(
            f"{location}: no Spark master (try spark://local[*], spark://HOST:7077 or sc://HOST:15002)"
        )
    params: dict[str, str] = {}
    settings: dict[str, str] = {}
    secrets: list[str] = []
    for item in filter(None, rest.split(";")):
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or not _KEY.fullmatch(key):
            raise SourceError(f"{location}: {item!r} is not KEY=VALUE")
        (settings if "." in key else params)[key] = unquote(value)
        if is_secret(key):
            secrets.append(key)
    return SparkLocation(base, params, settings, tuple(secrets))


def is_secret(key: str) -> bool:
    """Whether a parameter or setting holds a secret that is never stored (``token``, ``*.password``,
    ``*secret*``, ``*.access.key``, ...)."""
    return bool(SECRET_KEY.search(key))


def secret_variable(key: str) -> str:
    """The environment variable a later process reads a secret ``key`` from."""
    if key == "token":
        return TOKEN_VARIABLE
    return "DPDESK_SPARK_SECRET_" + re.sub(r"[^A-Za-z0-9]", "_", key).upper()


def public_location(location: str, settings: Sequence[str] = ()) -> str:
    """``location`` with ``settings`` (``KEY=VALUE`` texts, as ``--spark-conf`` gives them) added, secrets
    taken out: the form stored in a project. The secrets' values stay with this process, so the command
    that was given them can use them."""
    loc = parse_location(location)
    merged = dict(loc.settings)
    for text in settings:
        key, eq, value = text.partition("=")
        key = key.strip()
        if not eq or not _KEY.fullmatch(key) or "." not in key:
            raise SourceError(
                f"--spark-conf {text!r}: expected KEY=VALUE with a Spark key (spark.sql....=...)"
            )
        merged[key] = value
    params = dict(loc.params)
    public = SparkLocation(loc.base, params, merged)
    keep: dict[str, str] = {}
    for store in (public.params, public.settings):
        for key, value in store.items():
            if is_secret(key):
                if value:
                    keep[key] = value
                store[key] = ""
    text = public.text()
    for key, value in keep.items():
        _SECRETS[(text, key)] = value
    return text


def _secret(location: str, key: str) -> str | None:
    """A secret's value: given to this process, else from its environment variable, else None."""
    value = _SECRETS.get((location, key)) or os.environ.get(secret_variable(key))
    return value or None


def _resolved(location: str) -> SparkLocation:
    """The location with its secrets' values filled in (a one-line error names a missing variable);
    Spark Connect's token is left out when pyspark will read it from its own variable."""
    loc = parse_location(location)
    params, settings = dict(loc.params), dict(loc.settings)
    for store in (params, settings):
        for key, value in list(store.items()):
            if value or not is_secret(key):
                continue
            secret = _secret(location, key)
            if secret is None:
                raise SourceError(
                    f"{location}: {key} is a secret dpdesk does not store; set {secret_variable(key)} "
                    f"in the environment"
                )
            if key == "token" and secret == os.environ.get(TOKEN_VARIABLE):
                del store[key]  # pyspark reads it from there itself
            else:
                store[key] = secret
    return SparkLocation(loc.base, params, settings, loc.secrets)


def _quiet_pandas_warning() -> None:
    # PySpark warns about pandas 3 on every first use; dpdesk hands it no pandas objects.
    warnings.filterwarnings(
        "ignore", message="PySpark does not yet fully support pandas", category=FutureWarning
    )


def connect_session(location: str) -> Any:
    """This process's Spark Connect session for the ``sc://`` ``location`` (created on first use and
    kept), with the location's settings set on it."""
    require_extra("pyspark.sql.connect.session", "spark", "a Spark Connect source")
    _quiet_pandas_warning()
    loc = _resolved(location)
    url = SparkLocation(loc.base, loc.params).text()
    from pyspark.sql import SparkSession

    with _SESSION_LOCK:
        spark = _REMOTE.get(url)
        if spark is None or spark.is_stopped:
            # pyspark marks the whole process as "Spark Connect" when it makes a remote session, after
            # which a local session (spark://local[*]) can no longer start; the mark is put back as it was
            mode = os.environ.get(_CONNECT_MODE)
            try:
                spark = SparkSession.builder.remote(url).create()
                spark.catalog.currentDatabase()  # reach the server now: a wrong address fails here
            except Exception as exc:  # unreachable, refused, TLS, authentication, ...
                raise SourceError(f"cannot reach Spark Connect at {loc.base}: {one_line(exc)}") from None
            finally:
                if mode is None:
                    os.environ.pop(_CONNECT_MODE, None)
            _REMOTE[url] = spark
            _APPLIED[id(spark)] = {}
        wanted = {**{k: SESSION_CONF[k] for k in RUNTIME_CONF}, **loc.settings}
        applied = _APPLIED.setdefault(id(spark), {})
        for key, value in wanted.items():
            if applied.get(key) != value:
                try:
                    spark.conf.set(key, value)
                except Exception as exc:
                    raise SourceError(
                        f"Spark Connect at {loc.base}: cannot set {key}: {one_line(exc)}"
                    ) from None
                applied[key] = value
        return spark


def spark_session(master: str, conf: Mapping[str, str] | None = None) -> Any:
    """The process's Spark session for ``master`` (started with :data:`SESSION_CONF` and ``conf`` if none
    runs; ``conf`` may hold start-up settings such as ``spark.driver.extraJavaOptions``).

    One process has one Spark driver: a session for another master is stopped first.
    """
    require_extra("pyspark", "spark", "a Spark source")
    _quiet_pandas_warning()
    from pyspark.sql import SparkSession

    settings = {**SESSION_CONF, **(conf or {})}
    settings["spark.driver.extraJavaOptions"] = " ".join(
        filter(
            None,
            [
                f"-Dlog4j2.configurationFile={_LOG_CONFIG.as_uri()}",
                settings.get("spark.driver.extraJavaOptions"),
            ],
        )
    )
    if _LOCAL_MASTER.fullmatch(master):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # in-process Spark listens on loopback only
    with _SESSION_LOCK:
        builder = SparkSession.builder.master(master).appName("dpdesk")
        for key, value in settings.items():
            builder = builder.config(key, value)
        try:
            spark = builder.getOrCreate()
            if spark.sparkContext.master != master:
                spark.stop()
                spark = builder.getOrCreate()
        except Exception as exc:  # the JVM could not start, the master is unreachable, ...
            hint = (
                " (is Java 17 or later installed? JAVA_HOME names it)" if "JAVA_GATEWAY" in str(exc) else ""
            )
            raise SourceError(f"cannot start Spark at {master}: {one_line(exc)}{hint}") from None
        spark.sparkContext.setLogLevel("ERROR")
        for key in RUNTIME_CONF:
            spark.conf.set(key, SESSION_CONF[key])  # also in a session that was already running
        for key, value in (conf or {}).items():
            if key.startswith("spark.sql."):
                spark.conf.set(key, value)  # a running session takes the SQL settings it is given
        return spark


def location_session(location: str, conf: Mapping[str, str] | None = None) -> Any:
    """The session a ``spark://`` or ``sc://`` location names, with its settings."""
    loc = _resolved(location)
    if loc.remote:
        return connect_session(location)
    return spark_session(loc.master, {**loc.settings, **(conf or {})})


@atexit.register
def release_sessions() -> None:
    """Release this process's sessions on the Spark Connect servers (their temporary views go too)."""
    for spark in list(_REMOTE.values()):
        try:
            spark.stop()
        except Exception:  # the server may be gone already
            pass
    _REMOTE.clear()
