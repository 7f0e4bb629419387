"""The project file's SQLite layer: format checks, schema, forward migrations, connections.

A project file is one SQLite database in WAL mode with ``synchronous=FULL`` (every commit is fsync'd
before it returns). It is recognised by SQLite's ``application_id`` (``DPDK``) and its format version
by ``user_version``. Opening first checks the raw header bytes and then the database read-only
(``quick_check``), so a file that is not a dpdesk project — garbage, truncated, another program's
database, a newer format — is refused with a one-line error and never written to.

**Shown means stored in the main file** (DESIGN §4). In WAL mode a commit lives in ``P-wal`` until a
checkpoint copies it into ``P``; a curator who copies only ``P`` would lose it, and a release that was
shown could then be drawn again. So every write transaction is *settled* — checkpointed into the main
file (``wal_checkpoint(TRUNCATE)``) — before it returns, and a ledger entry, which may hold a release, is
*announced* first (:func:`announce`): the ``in_flight`` row (format 12) names it in the main file before
the entry is committed to the log, and the entry's own transaction removes it. The main file therefore
holds every release that was ever shown, and if it still names an entry in flight while no log is
beside it, that log — which may hold a release someone saw — is missing: every reader refuses the file
(:func:`check_log`) in one line naming it, instead of reading the older state and letting the same
request be answered with a second draw.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import struct
from collections.abc import Callable, Iterator
from pathlib import Path

from dpdesk.store.errors import MissingLogError, NotAProjectError, StoreError, Unsettled
from dpdesk.store.migrations import MIGRATIONS as MIGRATIONS

APPLICATION_ID = 0x4450444B  # "DPDK"
FORMAT_VERSION = 12
KEYED_SOURCE_FORMAT = 8  # the first format whose source binding is a keyed fingerprint (store/binding.py)
WAL_MAGIC = (0x377F0682, 0x377F0683)  # the first four bytes of an SQLite write-ahead log
SQLITE_MAGIC = b"SQLite format 3\x00"

REQUIRED_TABLES = frozenset({"project", "source", "requests", "ledger", "ledger_head"})


def check_header(path: Path) -> int:
    """Check the raw bytes of ``path`` without opening it in SQLite; return its format version.

    Refuses (``NotAProjectError``) anything that is not a complete SQLite database carrying dpdesk's
    application id and a format version this dpdesk can read.
    """
    name = path.name
    if not path.exists():
        raise StoreError(f"{path}: no such project file")
    if not path.is_file():
        raise NotAProjectError(f"{path}: not a regular file")
    size = path.stat().st_size
    with open(path, "rb") as f:
        header = f.read(100)
    if len(header) < 100 or header[:16] != SQLITE_MAGIC:
        raise NotAProjectError(
            f"{name}: not a dpdesk project file (not an SQLite database{', empty' if size == 0 else ''})"
        )
    (page_size,) = struct.unpack(">H", header[16:18])
    page_size = 65536 if page_size == 1 else page_size
    if page_size < 512 or page_size & (page_size - 1):
        raise NotAProjectError(f"{name}: not a dpdesk project file (corrupt SQLite header)")
    change_counter, header_pages = struct.unpack(">II", header[24:32])
    (valid_for,) = struct.unpack(">I", header[92:96])
    if (size % page_size or (valid_for == change_counter and header_pages * page_size > size)) and not (
        log_holds_frames(path)
    ):
        # With a log beside it, a checkpoint a full disk stopped midway may have written the header of a
        # file it could not grow: the log still holds every page, SQLite reads through it and quick_check
        # (validate) decides, and the next writer finishes the copy.
        raise NotAProjectError(f"{name}: the project file is truncated ({size} bytes)")
    user_version: int = struct.unpack(">i", header[60:64])[0]
    (app_id,) = struct.unpack(">i", header[68:72])
    if app_id != struct.unpack(">i", struct.pack(">I", APPLICATION_ID))[0]:
        raise NotAProjectError(
            f"{name}: an SQLite database but not a dpdesk project (application id {app_id:#x})"
        )
    if user_version > FORMAT_VERSION:
        raise NotAProjectError(
            f"{name}: project format {user_version} was written by a newer dpdesk (this one reads up to {FORMAT_VERSION})"
        )
    if user_version < 1:
        raise NotAProjectError(f"{name}: incomplete dpdesk project (format version {user_version})")
    return user_version


def disk_full_note(path: Path) -> str:
    """``" — the disk holding it is full"`` when it has less than a MiB left (SQLite then often says only
    "disk I/O error": its shared-memory file could not grow), else ""."""
    try:
        free = shutil.disk_usage(Path(path).resolve().parent).free
    except OSError:
        return ""
    if free >= 1 << 20:
        return ""
    return (
        " — the disk holding it is full"
        if free == 0
        else f" — the disk holding it is full ({free // 1024} KiB free)"
    )


def strict_text(path: Path) -> Callable[[bytes], str]:
    """SQLite's text as UTF-8, or one line saying the file holds text that is not (a damaged or hand-edited
    file) instead of the decoder's traceback."""

    def decode(data: bytes) -> str:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise NotAProjectError(
                f"{path.name}: the project file is damaged (it holds text that is not UTF-8: "
                f"{data[:24]!r}…); `dpdesk verify {path}` names where"
            ) from None

    return decode


def connect_readonly(path: Path) -> sqlite3.Connection:
    """A read-only connection that can never change the file (``mode=ro``; ``immutable`` if needed)."""
    uri = f"{file_uri(path)}?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=5.0)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        # A read-only directory, or a full disk, with no -shm: SQLite cannot share WAL state; if no WAL is
        # pending the main file is complete and can be read as immutable.
        if ("unable to open" in str(exc) or "disk I/O error" in str(exc)) and not log_holds_frames(path):
            conn = sqlite3.connect(f"{uri}&immutable=1", uri=True, isolation_level=None)
        else:
            raise NotAProjectError(
                f"{path.name}: cannot read the project file ({exc}){disk_full_note(path)}"
            ) from None
    conn.execute("PRAGMA query_only = ON")
    conn.text_factory = strict_text(path)
    return conn


def validate(conn: sqlite3.Connection, path: Path) -> int:
    """Check the database behind ``conn`` is an intact dpdesk project; return its format version."""
    try:
        problems = [r[0] for r in conn.execute("PRAGMA quick_check").fetchall()]
        if problems != ["ok"]:
            raise NotAProjectError(f"{path.name}: the project file is damaged ({problems[0]})")
        (app_id,) = conn.execute("PRAGMA application_id").fetchone()
        (version,) = conn.execute("PRAGMA user_version").fetchone()
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as exc:
        raise NotAProjectError(f"{path.name}: the project file is damaged ({exc})") from None
    if app_id & 0xFFFFFFFF != APPLICATION_ID:
        raise NotAProjectError(f"{path.name}: an SQLite database but not a dpdesk project")
    if version > FORMAT_VERSION:
        raise NotAProjectError(f"{path.name}: project format {version} was written by a newer dpdesk")
    missing = REQUIRED_TABLES - tables
    if missing:
        raise NotAProjectError(
            f"{path.name}: incomplete dpdesk project (missing {', '.join(sorted(missing))})"
        )
    if "in_flight" in tables:
        check_log(conn, path)
    return int(version)


def log_holds_frames(path: Path) -> bool:
    """Whether ``P-wal`` beside ``path`` is a write-ahead log with at least its header and one frame."""
    wal = Path(f"{path}-wal")
    try:
        with open(wal, "rb") as f:
            head = f.read(32)
            size = os.fstat(f.fileno()).st_size
    except OSError:
        return False
    if len(head) < 32 or struct.unpack(">I", head[:4])[0] not in WAL_MAGIC:
        return False
    page_size = int(struct.unpack(">I", head[8:12])[0])
    return size >= 32 + 24 + page_size


def check_log(conn: sqlite3.Connection, path: Path) -> None:
    """Refuse a file whose main part names a ledger entry in flight while its write-ahead log is missing.

    The entry's transaction removes the ``in_flight`` row; so a row still seen (through the log, if there
    is one) means either that transaction never committed — then the log beside the file holds the
    announcement at least, and the row is stale — or the log that holds it is gone.
    """
    row = conn.execute("SELECT seq, kind, request_id FROM in_flight WHERE id = 1").fetchone()
    if row is None or log_holds_frames(path):
        return
    seq, kind, rid = row
    what = f"ledger entry {seq} ({kind}{f', request {rid}' if rid else ''})"
    raise MissingLogError(
        f"{path.name}: {what} was being recorded in {path.name}-wal, which is missing; put that file back "
        f"beside {path.name} (without it, what it recorded — perhaps an answer someone saw — could be "
        "released again)"
    )


def connect_writer(path: Path) -> sqlite3.Connection:
    """A read-write connection: WAL, ``synchronous=FULL``, explicit transactions only."""
    conn = sqlite3.connect(str(path), isolation_level=None, timeout=2.0)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA trusted_schema = OFF")
    conn.text_factory = strict_text(path)
    return conn


def migrate(conn: sqlite3.Connection, from_version: int) -> None:
    """Apply forward migrations from ``from_version`` up to :data:`FORMAT_VERSION`, one transaction each."""
    for version in range(from_version + 1, FORMAT_VERSION + 1):
        with transaction(conn):
            for statement in MIGRATIONS[version]:
                conn.execute(statement)
            if version in MIGRATION_ROWS:
                MIGRATION_ROWS[version](conn)
            conn.execute(f"PRAGMA user_version = {version}")
        # the new version reaches the file's header; on a full disk the log keeps it (closing reports it)
        with contextlib.suppress(sqlite3.OperationalError):
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _anchor_requests(conn: sqlite3.Connection) -> None:
    """Format 10's ledger entry (inside the migration's transaction): the digests of the requests decided
    so far, so that what their entries — written before requests were digested — depend on is under the
    chain from now on. Nothing when no request is decided (and in a file being created)."""
    from dpdesk.store import ledger
    from dpdesk.store.canonical import utc_now
    from dpdesk.store.requests import request_digests

    row = conn.execute("SELECT genesis_hash FROM project WHERE id = 1").fetchone()
    digests = request_digests(conn, "WHERE status != 'pending'") if row is not None else {}
    if digests:
        payload = {"requests": digests, "format": 10}
        ledger.append(conn, str(row[0]), time=utc_now(), kind="requests", request_id=None, payload=payload)


# Migrations that write rows besides changing tables, run inside their version's transaction.
MIGRATION_ROWS: dict[int, Callable[[sqlite3.Connection], None]] = {10: _anchor_requests}


def open_checked(path: Path, mode: str) -> sqlite3.Connection:
    """A connection to the project file ``path``, checked (:func:`check_header`, :func:`validate`):
    read-only for ``mode`` ``"r"``; for ``"w"`` a writer's, the file migrated to the current format and
    what a stopped process left behind settled."""
    check_header(path)  # raw bytes only: a file we cannot parse is never opened for writing
    ro = connect_readonly(path)
    try:
        version = validate(ro, path)
    except BaseException:
        ro.close()
        raise
    if mode == "r":
        return ro
    ro.close()
    conn = connect_writer(path)
    if version < FORMAT_VERSION:
        migrate(conn, version)
    # what a process that was stopped left behind: its commits written into the main file, and an
    # announcement whose entry it never committed (check_log found the log beside the file)
    with contextlib.suppress(sqlite3.Error):  # a full disk: read through the log until there is room
        settle(conn)
    clear_in_flight(conn)
    return conn


def initialise(conn: sqlite3.Connection) -> None:
    """Give a brand-new, empty database dpdesk's identity and all tables (rollback journal mode)."""
    conn.execute(f"PRAGMA application_id = {struct.unpack('>i', struct.pack('>I', APPLICATION_ID))[0]}")
    migrate(conn, 0)


@contextlib.contextmanager
def transaction(
    conn: sqlite3.Connection,
    *,
    settle_mode: str = "TRUNCATE",
    must_settle: bool = False,
    committed: Callable[[], None] | None = None,
) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` … ``COMMIT`` (rolled back on any exception), then settled into the main file.

    ``committed()`` runs right after the commit (a crash point for the tests). The settling checkpoint
    (``settle_mode``) waits for readers of older states; if they keep it from finishing, ``must_settle``
    raises :class:`~dpdesk.store.errors.Unsettled` (the change is committed, in the log only), else the
    next transaction, or closing, settles it.
    """
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        raise StoreError(f"cannot start a write transaction ({exc})") from None
    try:
        yield conn
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise
    try:
        conn.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise
    if committed is not None:
        committed()
    try:
        settled = settle(conn, settle_mode)
    except sqlite3.Error as exc:  # committed, in the log: closing (or `dpdesk project settle`) copies it
        if must_settle:
            raise Unsettled(unsettled_line(conn, exc)) from None
        return
    if not settled and must_settle:
        raise Unsettled(
            f"{_name(conn)}: the change is committed to {_name(conn)}-wal but not yet written into "
            f"{_name(conn)} itself (another program is reading the file); close it and run the command again"
        )


def settle(conn: sqlite3.Connection, mode: str = "TRUNCATE") -> bool:
    """Checkpoint every commit in the write-ahead log into the main file; whether it all got there.

    ``TRUNCATE`` also empties the log; ``FULL`` leaves its frames in place (what :func:`announce` needs:
    a log beside a file in flight is then never empty). Outside WAL mode there is nothing to do.
    """
    if mode not in ("FULL", "TRUNCATE"):
        raise ValueError(f"mode ({mode!r}) must be 'FULL' or 'TRUNCATE'")
    try:
        busy, log, done = conn.execute(f"PRAGMA wal_checkpoint({mode})").fetchone()
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or "busy" in str(exc):  # SQLITE_BUSY from the checkpoint itself
            return False
        raise  # a full disk or a failing device: the commits stay whole in the log
    return not busy and log == done


def settle_on_close(conn: sqlite3.Connection, path: Path) -> str | None:
    """Copy what the write-ahead log holds into the main file (the checkpoint SQLite would otherwise
    attempt silently as the last connection closes); None when done or left to a reader that holds an
    older state, else one line saying what happened and the one command that finishes it.

    A full disk or a failing device stops the copy midway: every commit is still whole in ``P-wal``
    (each was fsync'd there), and the main file may already carry a header ahead of its size. dpdesk
    reads such a file through its log (:func:`~dpdesk.store.db.check_header`), and any command that
    writes to it finishes the copy once there is room.
    """
    try:  # PASSIVE: never waits for another process's reader (closing then removes the emptied log)
        conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
    except sqlite3.Error as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            return None  # another process reads an older state: the next writer settles it
        name = path.name
        return (
            f"{name}: what this command recorded is safe in {name}-wal but could not be copied into {name} "
            f"itself ({exc}); keep {name}-wal beside it, and once the disk has room run "
            f"`dpdesk project settle {path}`"
        )
    return None


def unsettled_line(conn: sqlite3.Connection, exc: BaseException) -> str:
    """What a change committed to the log but not copied into the main file (a full disk, a failing
    device) says: it is safe in the log (and, a release, not shown), and the command that finishes the copy."""
    name, path = _name(conn), _path(conn)
    return (
        f"{name}: what this command recorded is safe in {name}-wal but could not be copied into {name} "
        f"itself ({exc}{disk_full_note(path) if path else ''}); keep {name}-wal beside it, and once the disk "
        f"has room run `dpdesk project settle {path or name}`"
    )


def announce(conn: sqlite3.Connection, seq: int, kind: str, request_id: str | None, since: str) -> None:
    """Name ledger entry ``seq`` in the main file before it is committed (its transaction clears it).

    Raises :class:`~dpdesk.store.errors.StoreError` if the announcement cannot reach the main file now;
    then nothing of the entry is written.
    """
    if not _has_table(conn, "in_flight"):
        return
    with transaction(conn, settle_mode="FULL"):
        conn.execute(
            "INSERT OR REPLACE INTO in_flight (id, seq, kind, request_id, since) VALUES (1, ?, ?, ?, ?)",
            (seq, kind, request_id, since),
        )
    try:
        settled, why = settle(conn, "FULL"), "another program is reading it"
    except sqlite3.Error as exc:
        path = _path(conn)
        settled, why = False, f"{exc}{disk_full_note(path) if path else ''}"
    if not settled:  # the announcement is not in the main file: nothing of the entry may be written
        clear_in_flight(conn)
        raise StoreError(f"{_name(conn)}: cannot write into the file now ({why}); nothing was recorded")


def landed(conn: sqlite3.Connection) -> None:
    """Within an entry's transaction: the entry is no longer in flight."""
    if _has_table(conn, "in_flight"):
        conn.execute("DELETE FROM in_flight")


def clear_in_flight(conn: sqlite3.Connection) -> None:
    """Remove an announcement whose entry was never committed (best effort: a later writer removes it)."""
    if not _has_table(conn, "in_flight"):
        return
    with contextlib.suppress(sqlite3.Error, StoreError):
        if conn.execute("SELECT 1 FROM in_flight").fetchone() is not None:
            with transaction(conn):
                conn.execute("DELETE FROM in_flight")


def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    return (
        conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone()
        is not None
    )


def _path(conn: sqlite3.Connection) -> Path | None:
    for _, db_name, file in conn.execute("PRAGMA database_list"):
        if db_name == "main" and file:
            return Path(file)
    return None


def _name(conn: sqlite3.Connection) -> str:
    for _, db_name, file in conn.execute("PRAGMA database_list"):
        if db_name == "main" and file:
            return Path(file).name
    return "the project file"


def fsync(path: Path) -> None:
    """Flush the file ``path`` to disk (opened for writing: Windows flushes only such a handle)."""
    fd = os.open(path, os.O_RDWR | getattr(os, "O_BINARY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def publish(tmp: Path, path: Path) -> None:
    """Give the finished file ``tmp`` the name ``path`` too, atomically, never replacing a file created
    meanwhile (:class:`FileExistsError` then).

    A hard link does it everywhere it exists (Linux, macOS, NTFS); where a folder cannot hold one (FAT
    or exFAT removable drives, some network shares) Windows' rename does the same, since it never
    replaces an existing name. The caller removes ``tmp``.
    """
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise
    except OSError:
        if os.name != "nt":
            raise
        os.rename(tmp, path)


def fsync_dir(path: Path) -> None:
    """Flush the folder holding ``path``, so that a file created or renamed there survives a crash.

    Windows cannot open a folder to flush it; NTFS journals the new name itself.
    """
    if os.name == "nt":
        return
    fd = os.open(path.parent or Path("."), os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def file_uri(path: Path) -> str:
    """``path`` as SQLite's ``file:`` URI: ``file:///home/x/P.dpdesk``, ``file:///C:/Users/x/P.dpdesk``
    (``?`` and ``#`` in a name percent-encoded)."""
    return path.resolve().as_uri()
