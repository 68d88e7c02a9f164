"""The class store in an SQLite file (the default: nothing to set up). WAL journal, one
connection per thread, every change in an IMMEDIATE transaction: safe across the threads of one
server and across processes sharing the file."""

from __future__ import annotations

import json
import sqlite3
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from app.classroom.store import ClassRecord, ClassStore, ClassStoreUnavailable, Limits

SCHEMA = """
CREATE TABLE IF NOT EXISTS classes (
    code TEXT PRIMARY KEY, record TEXT NOT NULL, expires REAL NOT NULL, version INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS entries (
    code TEXT NOT NULL, tbl TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
    PRIMARY KEY (code, tbl, key)
);
"""


def default_path() -> str:
    return str(Path(tempfile.gettempdir()) / "encoder-explorer-classes.sqlite3")


class SqliteClassStore(ClassStore):
    def __init__(
        self, path: str, limits: Limits | None = None, clock=None, timeout: float = 10.0
    ) -> None:
        super().__init__(limits, clock)
        self.path, self.timeout = path, timeout
        self._local = threading.local()
        with self._transaction(write=False) as db:
            db.executescript(SCHEMA)  # its own transaction

    def _connection(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            self._local.db = db
        return db

    @contextmanager
    def _transaction(self, write: bool = True) -> Iterator[sqlite3.Connection]:
        try:
            db = self._connection()
            if not write:
                yield db
                return
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
        except sqlite3.Error as error:
            self._local.db = None
            raise ClassStoreUnavailable(f"SQLite: {error}") from error

    def _insert_class(self, code: str, record: ClassRecord, now: float) -> bool:
        with self._transaction() as db:
            db.execute(
                "DELETE FROM entries WHERE code IN (SELECT code FROM classes WHERE expires <= ?)",
                (now,),
            )
            db.execute("DELETE FROM classes WHERE expires <= ?", (now,))
            (live,) = db.execute("SELECT COUNT(*) FROM classes").fetchone()
            if live >= self.limits.classes:
                return False
            inserted = db.execute(
                "INSERT OR IGNORE INTO classes VALUES (?, ?, ?, ?)",
                (code, json.dumps(record.to_fields()), record.expires, record.version),
            )
            return inserted.rowcount == 1

    def _load_class(self, code: str) -> ClassRecord | None:
        with self._transaction(write=False) as db:
            row = db.execute("SELECT record FROM classes WHERE code = ?", (code,)).fetchone()
        return None if row is None else ClassRecord.from_fields(json.loads(row[0]))

    def _swap_class(self, code: str, old: ClassRecord, new: ClassRecord) -> bool:
        with self._transaction() as db:
            changed = db.execute(
                "UPDATE classes SET record = ?, version = ? WHERE code = ? AND version = ?",
                (json.dumps(new.to_fields()), new.version, code, old.version),
            )
            return changed.rowcount == 1

    def _bounded_put(
        self, code: str, table: str, key: str, value: str, limit: int, expires: float
    ) -> bool:
        with self._transaction() as db:
            args = (code, table, key)
            known = db.execute(
                "SELECT 1 FROM entries WHERE code = ? AND tbl = ? AND key = ?", args
            ).fetchone()
            if known is None:
                (held,) = db.execute(
                    "SELECT COUNT(*) FROM entries WHERE code = ? AND tbl = ?", (code, table)
                ).fetchone()
                if held >= limit:
                    return False
            db.execute("INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?)", (*args, value))
            return True

    def _read_map(self, code: str, table: str) -> dict[str, str]:
        with self._transaction(write=False) as db:
            rows = db.execute(
                "SELECT key, value FROM entries WHERE code = ? AND tbl = ?", (code, table)
            ).fetchall()
        return dict(rows)
