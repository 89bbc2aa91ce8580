"""On-disk store of replayed reasoner steps (:mod:`agents.replay.reasoner`): one SQLite file in WAL mode.

Why SQLite: several processes (the ranks of a training run, an evaluation next to it, the plan
table) read and write one store at once. WAL lets readers run beside one writer, ``busy_timeout``
makes a second writer wait instead of failing, and ``INSERT OR IGNORE`` makes two writers of the
same key harmless (a key names a deterministic step, so both wrote the same text).

Bounded size (documented contract): after every write the store checks, at most once per
``check_every`` inserted rows, the bytes its rows hold; above ``max_mb`` it deletes the oldest rows
(insertion order) down to 90 % of the cap, counts them in ``evicted`` and warns once per process.
Evicted steps are simply decoded again when next needed.

Rows: ``key -> (text, tokens, ids)``: the step's text (what the environment sees), the tokens it cost, and
every token id its turn wrote as a JSON list (what :mod:`agents.replay.reasoner` feeds a session that catches up; NULL
for an agent that writes no tokens). A store written before the ``ids`` column existed gets the column on open
(its rows keep NULL ids; their keys are of an older key layout, so they are never read again and leave first
when the cap evicts).

Faults (documented contract, ``tests/test_replay_store_faults.py``):

* Crash: one transaction per :meth:`StepStore.put_many`; a step whose ``put_many`` returned is in the
  store after the writer is killed (SIGKILL), and an unfinished transaction is rolled back when the
  store is next opened. ``synchronous=NORMAL`` fsyncs the WAL at checkpoints only, so a power cut may
  roll back the latest steps (the file stays consistent); they are cache misses, decoded again.
* Bad file: opening checks the header, the schema (the file's ``application_id`` is rSIM's, or it is a
  store written before the id existed: one ``steps`` table of these columns, stamped on open) and runs
  ``PRAGMA quick_check`` (about 0.1 s per 150 MB). A corrupt file or another program's database is
  refused with one line (:class:`ReplayStoreError`) naming the file and what to do; the store is
  never written before that.
* Full disk: the first write that fails for lack of space (``SQLITE_FULL``, ``ENOSPC``, ``EDQUOT``)
  is rolled back and stops the caching for this store with one warning; later steps are returned to
  the caller but not stored (counted in ``unstored``), stored ones are still read.

Standard library only.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import json
import random
import sqlite3
import time
import warnings
from pathlib import Path
from typing import Iterable, Iterator, NamedTuple, Sequence

__all__ = ["StepStore", "StoredStep", "ReplayStoreError", "APPLICATION_ID"]

_SCHEMA = """CREATE TABLE IF NOT EXISTS steps (
    key TEXT PRIMARY KEY, text TEXT NOT NULL, tokens INTEGER NOT NULL, created REAL NOT NULL, ids TEXT)"""
_COLUMNS = ["key", "text", "tokens", "created", "ids"]
_COLUMNS_BEFORE_IDS = _COLUMNS[:4]
"""The columns of a store written before token ids were stored (``ids`` is added on open)."""

APPLICATION_ID = 0x7253494D
"""``PRAGMA application_id`` of a replay store ("rSIM"): tells it from any other SQLite file."""

_ROW_BYTES = "length(key) + length(CAST(text AS BLOB)) + coalesce(length(ids), 0)"
_BAD_FILE = ("SQLITE_CORRUPT", "SQLITE_NOTADB")
_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


class StoredStep(NamedTuple):
    """One stored step."""

    text: str
    """The step as the environment saw it."""
    tokens: int
    """Tokens it cost when it was decoded."""
    ids: tuple[int, ...] | None = None
    """Every token id its turn wrote (end-of-turn included when written); None for an agent without tokens."""


class ReplayStoreError(ValueError):
    """The file is not a usable replay store (corrupt, or another program's); the message says what to do."""


class StepStore:
    """``key -> StoredStep(text, tokens, ids)`` in the SQLite file ``path`` (created with its parent dirs).

    Args:
        path: the database file (shared by every process replaying the same reasoner).
        max_mb: cap on the bytes of stored keys, texts and token ids; the oldest rows are evicted above it.
        check_every: rows inserted between two size checks.
        timeout_s: how long a writer waits for another one before raising.
    """

    def __init__(self, path: str | Path, max_mb: float = 2048.0, check_every: int = 256, timeout_s: float = 60.0) -> None:
        if not max_mb > 0:
            raise ValueError(f"StepStore max_mb={max_mb!r} must be > 0 (e.g. RSIM_REPLAY_MAX_MB=2048).")
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.max_bytes = int(max_mb * 2**20)
        self.check_every = check_every
        self.evicted = 0
        self._since_check = check_every  # check once on the first write
        self._warned = False
        self.unstored = 0
        """Steps not stored because writing stopped (:attr:`stopped`)."""
        self.stopped: str | None = None
        """Why writing stopped (a full disk); None while steps are stored."""
        self._db = self._open(timeout_s)

    def _open(self, timeout_s: float) -> sqlite3.Connection:
        """Connect, refuse a corrupt or foreign file before writing to it, then switch to WAL and create the table.

        Any number of processes may open (and create) one store at the same instant. SQLite answers
        ``SQLITE_BUSY`` at once, without waiting for ``busy_timeout``, in some steps of this sequence
        while another connection switches the file to WAL or creates the table (the journal-mode
        change and WAL recovery take locks that the busy handler does not wait for). So the whole
        sequence is retried, on a new connection, until ``timeout_s`` has passed; every step of it is
        idempotent. Any other error, or a busy store past the deadline, raises :class:`ReplayStoreError`.
        """
        deadline = time.monotonic() + timeout_s
        for attempt in itertools.count():
            try:
                return self._open_once(timeout_s)
            except _Busy as busy:
                if time.monotonic() >= deadline:
                    raise self._error(busy.error) from None
                # Short, growing, jittered waits: the other opener holds its lock for milliseconds.
                time.sleep(min(0.2, 0.005 * 2 ** min(attempt, 6)) * (0.5 + random.random()))
        raise AssertionError("unreachable")  # pragma: no cover

    def _open_once(self, timeout_s: float) -> sqlite3.Connection:
        """One try of :meth:`_open`; raises :class:`_Busy` where another opener holds a lock."""
        try:
            db = sqlite3.connect(str(self.path), timeout=timeout_s, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as e:
            raise self._error(e) from None
        try:
            db.execute(f"PRAGMA busy_timeout={int(timeout_s * 1000)}")
            state = self._check_schema(db)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            problems = [r[0] for r in db.execute("PRAGMA quick_check(1)").fetchall()]
            if problems != ["ok"]:
                raise sqlite3.DatabaseError(f"quick_check: {problems[0]}")
            if state != "current":
                with _Tx(db):  # under the write lock: another process may have done it since the check
                    db.execute(_SCHEMA)
                    if [r[1] for r in db.execute("PRAGMA table_info(steps)")] == _COLUMNS_BEFORE_IDS:
                        db.execute("ALTER TABLE steps ADD COLUMN ids TEXT")
                    db.execute(f"PRAGMA application_id={APPLICATION_ID}")
        except (sqlite3.Error, ReplayStoreError) as e:
            db.close()
            if isinstance(e, ReplayStoreError):
                raise
            if _busy(e):
                raise _Busy(e) from None
            raise self._error(e) from None
        return db

    def _check_schema(self, db: sqlite3.Connection) -> str:
        """Raise :class:`ReplayStoreError` for another program's database; else return ``"current"`` (a stamped store
        of today's columns) or ``"upgrade"`` (empty, unstamped, or without the ``ids`` column)."""
        app = int(db.execute("PRAGMA application_id").fetchone()[0])
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        columns = [r[1] for r in db.execute("PRAGMA table_info(steps)")]
        if app == APPLICATION_ID and tables == ["steps"] and columns == _COLUMNS:
            return "current"
        known = columns in (_COLUMNS, _COLUMNS_BEFORE_IDS)
        if app not in (0, APPLICATION_ID):
            why = f"its application_id is {app:#x}, not rSIM's {APPLICATION_ID:#x}"
        elif tables and (tables != ["steps"] or not known):  # empty: a new store; steps alone: an older one
            why = f"it holds the tables {tables}" + (f" and steps has the columns {columns}" if "steps" in tables else "")
        else:
            return "upgrade"
        raise ReplayStoreError(f"{self.path} is an SQLite database but not a replay store ({why}); point "
                               "RSIM_REPLAY_DIR at another directory or move that file away.")

    def _error(self, e: BaseException) -> ReplayStoreError:
        """One line naming the file, what is wrong with it and what to do."""
        detail = " ".join(str(e).split())
        detail = detail if len(detail) <= 160 else detail[:157] + "..."
        if getattr(e, "sqlite_errorname", None) in _BAD_FILE or detail.startswith("quick_check"):
            return ReplayStoreError(f"replay store {self.path} is corrupt or not an SQLite file ({detail}); delete it "
                                    f"with its -wal and -shm files (rm {self.path}*) or point RSIM_REPLAY_DIR elsewhere: "
                                    "it only caches reasoner steps, which are decoded again.")
        return ReplayStoreError(f"cannot open the replay store {self.path} ({detail}); check that the path is a "
                                "writable file, or point RSIM_REPLAY_DIR elsewhere.")

    def get_many(self, keys: Sequence[str]) -> dict[str, StoredStep]:
        """The stored step of every key in ``keys`` that is stored."""
        out: dict[str, StoredStep] = {}
        unique = list(dict.fromkeys(keys))
        with self._guard():
            for i in range(0, len(unique), 500):  # SQLite's bound-parameter limit
                chunk = unique[i:i + 500]
                rows = self._db.execute(f"SELECT key, text, tokens, ids FROM steps WHERE key IN "
                                        f"({','.join('?' * len(chunk))})", chunk).fetchall()
                out.update({k: StoredStep(t, int(n), None if ids is None else tuple(json.loads(ids)))
                            for k, t, n, ids in rows})
        return out

    def put_many(self, rows: Iterable[tuple]) -> None:
        """Store ``(key, text, tokens)`` or ``(key, text, tokens, ids)`` rows in one transaction (a key already
        stored keeps its row; ``ids``: the step's token ids, or None).

        When it returns the rows survive a crash of this process. On a full disk nothing of the call is
        stored and writing stops with one warning (module docstring); it does not raise.
        """
        rows = [(k, t, int(n), time.time(), _ids_json(rest[0] if rest else None)) for k, t, n, *rest in rows]
        if not rows:
            return
        if self.stopped is not None:
            self.unstored += len(rows)
            return
        try:
            with self._guard():
                self._insert(rows)
        except (sqlite3.Error, OSError) as e:
            if not _no_space(e):
                raise
            self._stop(e, len(rows))
            return
        self._since_check += len(rows)
        if self._since_check >= self.check_every:
            self._since_check = 0
            try:
                self.enforce_cap()
            except (sqlite3.Error, OSError) as e:  # evicting writes too (the WAL grows before the file shrinks)
                if not _no_space(e):
                    raise
                self._stop(e, 0)

    def _insert(self, rows: list[tuple[str, str, int, float, str | None]]) -> None:
        with self._transaction():
            self._db.executemany("INSERT OR IGNORE INTO steps (key, text, tokens, created, ids) VALUES (?, ?, ?, ?, ?)",
                                 rows)

    def _stop(self, error: BaseException, lost: int) -> None:
        """Stop writing after a full disk: one warning; the steps of the failed call are counted as unstored."""
        self.stopped = " ".join(str(error).split()) or type(error).__name__
        self.unstored += lost
        warnings.warn(f"replay store {self.path}: the disk is full ({self.stopped}); stopped storing new steps for "
                      "the rest of this run (episodes go on, decoded live; stored steps are still read). Free space "
                      "on that disk or point RSIM_REPLAY_DIR elsewhere to cache again.", stacklevel=3)

    def size_bytes(self) -> int:
        """Bytes held by stored keys, texts and token ids."""
        with self._guard():
            return int(self._db.execute(f"SELECT total({_ROW_BYTES}) FROM steps").fetchone()[0])

    def __len__(self) -> int:
        with self._guard():
            return int(self._db.execute("SELECT count(*) FROM steps").fetchone()[0])

    def enforce_cap(self) -> int:
        """Evict the oldest rows down to 90 % of the cap if the store is above it; return how many."""
        size = self.size_bytes()
        if size <= self.max_bytes:
            return 0
        target = int(self.max_bytes * 0.9)
        with self._guard(), self._transaction():
            rows = self._db.execute(f"SELECT rowid, {_ROW_BYTES} FROM steps ORDER BY rowid").fetchall()
            drop, freed = [], 0
            for rowid, n in rows:
                if size - freed <= target:
                    break
                drop.append((rowid,))
                freed += n
            self._db.executemany("DELETE FROM steps WHERE rowid = ?", drop)
        self.evicted += len(drop)
        if not self._warned:
            self._warned = True
            warnings.warn(f"replay store {self.path} passed its cap of {self.max_bytes / 2**20:.0f} MiB: evicted the "
                          f"{len(drop)} oldest steps (they are decoded again when needed); raise RSIM_REPLAY_MAX_MB "
                          "to keep more.", stacklevel=2)
        return len(drop)

    @contextlib.contextmanager
    def _guard(self) -> Iterator[None]:
        """Turn SQLite's "corrupt" / "not a database" errors met after opening into the one-line :class:`ReplayStoreError`."""
        try:
            yield
        except sqlite3.DatabaseError as e:
            if getattr(e, "sqlite_errorname", None) in _BAD_FILE:
                raise self._error(e) from None
            raise

    def close(self) -> None:
        self._db.close()

    def _transaction(self) -> "_Tx":
        return _Tx(self._db)


class _Tx:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (rolled back on error): takes the write lock up front, so two writers
    queue on ``busy_timeout`` instead of one failing on a lock upgrade."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, *_: object) -> None:
        if exc_type is None:
            try:
                self.db.execute("COMMIT")
                return
            except sqlite3.Error:  # e.g. SQLITE_FULL: the transaction may still be open
                self._rollback()
                raise
        self._rollback()

    def _rollback(self) -> None:
        """Roll back if a transaction is open (SQLite rolls some back itself after an I/O or full-disk error)."""
        if self.db.in_transaction:
            try:
                self.db.execute("ROLLBACK")
            except sqlite3.Error:  # already rolled back by SQLite: nothing left to undo
                pass


class _Busy(Exception):
    """Another connection held a lock during :meth:`StepStore._open_once`: try the open again."""

    def __init__(self, error: sqlite3.Error) -> None:
        super().__init__(str(error))
        self.error = error


def _busy(error: BaseException) -> bool:
    """True for SQLite's "database is locked" family (``SQLITE_BUSY*``, ``SQLITE_LOCKED*``)."""
    name = getattr(error, "sqlite_errorname", None)  # Python >= 3.11
    if name is not None:
        return name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED"))
    return isinstance(error, sqlite3.OperationalError) and "locked" in str(error)


def _ids_json(ids: Sequence[int] | None) -> str | None:
    """A step's token ids as stored: a JSON list of ints (None stays NULL)."""
    if ids is None:
        return None
    return json.dumps([int(t) for t in ids], separators=(",", ":"))


def _no_space(error: BaseException) -> bool:
    """True for a write that failed for lack of disk space (SQLite's SQLITE_FULL, or ENOSPC / EDQUOT)."""
    if isinstance(error, OSError):
        return error.errno in _NO_SPACE
    return getattr(error, "sqlite_errorname", None) == "SQLITE_FULL"
