"""The project file's tables, format by format: the SQL of each forward migration (:mod:`.db` runs them)."""

from __future__ import annotations

from dpdesk.store import answering

__all__ = ["MIGRATIONS"]

# Forward migrations: MIGRATIONS[v] takes a database at format version v-1 to version v.
MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: (
        """CREATE TABLE project (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            name TEXT NOT NULL,
            total_budget REAL NOT NULL CHECK (total_budget > 0),
            neighbour_model TEXT NOT NULL,
            schema_json TEXT NOT NULL,
            test_project INTEGER NOT NULL CHECK (test_project IN (0, 1)),
            created TEXT NOT NULL,
            initial_source_json TEXT NOT NULL,
            genesis_hash TEXT NOT NULL
        )""",
        """CREATE TABLE source (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            location TEXT NOT NULL,
            table_name TEXT,
            fingerprint_method TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            row_count INTEGER,
            out_of_domain INTEGER NOT NULL,
            bound_at TEXT NOT NULL
        )""",
        """CREATE TABLE requests (
            id TEXT PRIMARY KEY,
            position INTEGER NOT NULL UNIQUE,
            requester TEXT NOT NULL,
            query_text TEXT,
            query_json TEXT NOT NULL,
            eps REAL NOT NULL CHECK (eps > 0),
            delta REAL NOT NULL CHECK (delta > 0 AND delta < 1),
            received TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('pending', 'answered', 'rejected'))
        )""",
        """CREATE TABLE ledger (
            seq INTEGER PRIMARY KEY,
            time TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('fresh', 'inferred', 'rejected', 'rebind')),
            request_id TEXT,
            payload TEXT NOT NULL,
            prev_hash TEXT NOT NULL,
            hash TEXT NOT NULL UNIQUE
        )""",
        # One decision per request: a crash-and-retry can never record a second fresh draw.
        """CREATE UNIQUE INDEX ledger_one_decision ON ledger(request_id)
           WHERE kind IN ('fresh', 'inferred', 'rejected')""",
        """CREATE TABLE ledger_head (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            seq INTEGER NOT NULL,
            hash TEXT NOT NULL
        )""",
        # Append-only against accidents (a determined editor can drop these; the hash chain catches that).
        """CREATE TRIGGER ledger_no_update BEFORE UPDATE ON ledger
           BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END""",
        """CREATE TRIGGER ledger_no_delete BEFORE DELETE ON ledger
           BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END""",
    ),
    # 2: the curator's answering settings (spend policy, declared table size); see store/answering.py
    2: answering.TABLES,
    # 3: a ledger entry holds any release kind (docs/project-file.md): the kind is checked against the
    # mechanism registry in code, not by a fixed list here, and "one decision per request" covers every
    # kind that names a request. The rows move over unchanged, so every hash still holds.
    3: (
        "DROP TRIGGER ledger_no_update",
        "DROP TRIGGER ledger_no_delete",
        "DROP INDEX ledger_one_decision",
        "ALTER TABLE ledger RENAME TO ledger_format2",
        """CREATE TABLE ledger (
            seq INTEGER PRIMARY KEY,
            time TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (length(kind) BETWEEN 1 AND 40),
            request_id TEXT,
            payload TEXT NOT NULL,
            prev_hash TEXT NOT NULL,
            hash TEXT NOT NULL UNIQUE
        )""",
        "INSERT INTO ledger (seq, time, kind, request_id, payload, prev_hash, hash) "
        "SELECT seq, time, kind, request_id, payload, prev_hash, hash FROM ledger_format2 ORDER BY seq",
        "DROP TABLE ledger_format2",
        "CREATE UNIQUE INDEX ledger_one_decision ON ledger(request_id) WHERE request_id IS NOT NULL",
        """CREATE TRIGGER ledger_no_update BEFORE UPDATE ON ledger
           BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END""",
        """CREATE TRIGGER ledger_no_delete BEFORE DELETE ON ledger
           BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END""",
    ),
    # 4: the project's δ cap, fixed at creation like the total budget (0: every release is pure ε-DP).
    # A non-zero cap is one of the settings the genesis hash covers; 0 is left out of them, so every
    # older project's genesis still holds.
    4: (
        "ALTER TABLE project ADD COLUMN delta_cap REAL NOT NULL DEFAULT 0 CHECK (delta_cap >= 0 AND delta_cap < 1)",
    ),
    # 5: the queue holds a request of any release kind (engine/registry.py): its ``kind``, the cells
    # it reads (``query_json``: a count's coefficients, another kind's box), an accuracy requirement
    # (ε, δ) or a per-cell budget α. ε and δ may now be empty (a max priced by α; a posterior whose text
    # states its budget); a count request still needs both. The rows move over as counts; the ledger is
    # untouched, so every hash still holds.
    5: (
        "ALTER TABLE requests RENAME TO requests_format4",
        """CREATE TABLE requests (
            id TEXT PRIMARY KEY,
            position INTEGER NOT NULL UNIQUE,
            requester TEXT NOT NULL,
            kind TEXT NOT NULL DEFAULT 'count' CHECK (length(kind) BETWEEN 1 AND 40),
            query_text TEXT,
            query_json TEXT NOT NULL,
            eps REAL CHECK (eps IS NULL OR eps > 0),
            delta REAL CHECK (delta IS NULL OR (delta > 0 AND delta < 1)),
            alpha REAL CHECK (alpha IS NULL OR alpha > 0),
            received TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('pending', 'answered', 'rejected')),
            CHECK (kind != 'count' OR (eps IS NOT NULL AND delta IS NOT NULL AND alpha IS NULL))
        )""",
        "INSERT INTO requests (id, position, requester, kind, query_text, query_json, eps, delta, alpha, received, status) "
        "SELECT id, position, requester, 'count', query_text, query_json, eps, delta, NULL, received, status "
        "FROM requests_format4 ORDER BY position",
        "DROP TABLE requests_format4",
    ),
    # 6: watched claims (store/watch.py) live in the ledger: entries of kinds "watch" and "unwatch", and a
    # release made while claims are watched records the risk it spent on each ("claims"). No table
    # changes and no row is rewritten, so every hash holds; the version keeps a format-5 dpdesk, which
    # would call those entries unknown, from opening the file.
    6: (),
    # 7: the batch plans' look-ahead share, one of the curator's answering settings (store/answering.py)
    7: answering.LOOK_AHEAD_TABLES,
    # 8: the source binding is a fingerprint keyed with a secret kept on the curator's machine
    # (store/binding.py): the key's public id and the binding's salt are kept, the row and out-of-domain
    # counts no longer (NULL in a new binding). An older binding moves over as it was (its genesis hash and
    # ledger entries cover it) until a rebind replaces it.
    8: (
        "ALTER TABLE source RENAME TO source_format7",
        """CREATE TABLE source (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            location TEXT NOT NULL,
            table_name TEXT,
            fingerprint_method TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            row_count INTEGER,
            out_of_domain INTEGER,
            bound_at TEXT NOT NULL,
            key_id TEXT,
            salt TEXT,
            CHECK ((key_id IS NULL) = (salt IS NULL)),
            CHECK (key_id IS NULL OR (row_count IS NULL AND out_of_domain IS NULL))
        )""",
        "INSERT INTO source (id, location, table_name, fingerprint_method, fingerprint, row_count, out_of_domain, "
        "bound_at) SELECT id, location, table_name, fingerprint_method, fingerprint, row_count, out_of_domain, "
        "bound_at FROM source_format7",
        "DROP TABLE source_format7",
    ),
    # 9: a batch plan is recorded in the ledger (an entry of kind "batch") before its first measurement, and
    # each measurement names it, so a batch stopped midway is resumed as planned (store/batch.py). No table
    # changes and no row is rewritten; the version keeps an older dpdesk, which would call the entries
    # unknown, from opening the file.
    9: (),
    # 10: what a decision depends on is under the hash chain: every entry that decides a request records the
    # digest of the request as stored (store/requests.py request_digest), and verify checks it. The entries
    # already in the file cannot change, so the migration appends one entry of kind "requests" holding the
    # digests of the requests decided so far, as they are now (MIGRATION_ROWS: _anchor_requests).
    10: (),
    # 11: a project's accounting mode, fixed at creation like the total budget: NULL is pure ε (every older
    # project), else the JSON of a zCDP accounting (its δ and conversion; engine/budget/mode.py). A zCDP
    # project's accounting is one of the settings the genesis hash covers; pure ε is left out of them, so
    # every older project's genesis still holds.
    11: ("ALTER TABLE project ADD COLUMN accounting_json TEXT",),
    # 12: a ledger entry is announced in the main file before it is committed to the write-ahead log
    # (``announce``): while the row is there, the main file alone may lack a release; see the docstring.
    12: (
        """CREATE TABLE in_flight (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            seq INTEGER NOT NULL,
            kind TEXT NOT NULL,
            request_id TEXT,
            since TEXT NOT NULL
        )""",
    ),
}
