"""On-disk store of replayed reasoner steps (:mod:`agents.replay`): one SQLite file in WAL mode.

Why SQLite: several processes (the ranks of a training run, an evaluation next to it, the plan
table) read and write one store at once. WAL lets readers run beside one writer, ``busy_timeout``
makes a second writer wait instead of failing, and ``INSERT OR IGNORE`` makes two writers of the
same key harmless (a key names a deterministic step, so both wrote the same text).

Bounded size (documented contract): after every write the store checks, at most once per
``check_every`` inserted rows, the bytes its rows hold; above ``max_mb`` it deletes the oldest rows
(insertion order) down to 90 % of the cap, counts them in ``evicted`` and warns once per process.
Evicted steps are simply decoded again when next needed.

Standard library only.
"""

from __future__ import annotations

import sqlite3
import time
import warnings
from pathlib import Path
from typing import Iterable, Sequence

__all__ = ["StepStore"]

_SCHEMA = """CREATE TABLE IF NOT EXISTS steps (
    key TEXT PRIMARY KEY, text TEXT NOT NULL, tokens INTEGER NOT NULL, created REAL NOT NULL)"""


class StepStore:
    """``key -> (step text, tokens)`` in the SQLite file ``path`` (created with its parent dirs).

    Args:
        path: the database file (shared by every process replaying the same reasoner).
        max_mb: cap on the bytes of stored keys and texts; the oldest rows are evicted above it.
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
        self._db = sqlite3.connect(str(self.path), timeout=timeout_s, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(f"PRAGMA busy_timeout={int(timeout_s * 1000)}")
        self._db.execute(_SCHEMA)

    def get_many(self, keys: Sequence[str]) -> dict[str, tuple[str, int]]:
        """The stored ``(text, tokens)`` of every key in ``keys`` that is stored."""
        out: dict[str, tuple[str, int]] = {}
        unique = list(dict.fromkeys(keys))
        for i in range(0, len(unique), 500):  # SQLite's bound-parameter limit
            chunk = unique[i:i + 500]
            rows = self._db.execute(f"SELECT key, text, tokens FROM steps WHERE key IN ({','.join('?' * len(chunk))})",
                                    chunk).fetchall()
            out.update({k: (t, int(n)) for k, t, n in rows})
        return out

    def put_many(self, rows: Iterable[tuple[str, str, int]]) -> None:
        """Store ``(key, text, tokens)`` rows in one transaction (a key already stored keeps its row)."""
        rows = [(k, t, int(n), time.time()) for k, t, n in rows]
        if not rows:
            return
        with self._transaction():
            self._db.executemany("INSERT OR IGNORE INTO steps (key, text, tokens, created) VALUES (?, ?, ?, ?)", rows)
        self._since_check += len(rows)
        if self._since_check >= self.check_every:
            self._since_check = 0
            self.enforce_cap()

    def size_bytes(self) -> int:
        """Bytes held by stored keys and texts."""
        return int(self._db.execute("SELECT total(length(key) + length(CAST(text AS BLOB))) FROM steps").fetchone()[0])

    def __len__(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM steps").fetchone()[0])

    def enforce_cap(self) -> int:
        """Evict the oldest rows down to 90 % of the cap if the store is above it; return how many."""
        size = self.size_bytes()
        if size <= self.max_bytes:
            return 0
        target = int(self.max_bytes * 0.9)
        with self._transaction():
            rows = self._db.execute("SELECT rowid, length(key) + length(CAST(text AS BLOB)) FROM steps ORDER BY rowid").fetchall()
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
        self.db.execute("COMMIT" if exc_type is None else "ROLLBACK")
