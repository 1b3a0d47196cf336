"""The change log: the pages and placeholders each write changed (the `changes` table),
which every process reads to keep its graph in step with what the others commit, and how
far this connection has read it."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

CHANGELOG_KEEP = 20_000  # the latest changes kept; a reader further behind reloads all


def read_epoch(conn: sqlite3.Connection) -> str:
    """The index's epoch (see `schema.create_schema`), which a rebuild changes."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'epoch'").fetchone()
    return str(row[0]) if row else ""


class ChangeLog:
    """The log, and this connection's mark in it: the epoch it last saw and the last
    change it has taken in (both read at once: damage they run into is found here)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self.epoch = read_epoch(conn)
        self.seen = self.last()

    def last(self) -> int:
        row = self._conn.execute("SELECT max(seq) FROM changes").fetchone()
        return int(row[0] or 0)

    def record(self, keys: Iterable[str]) -> None:
        """Note the pages and placeholders a write changed, for the other processes."""
        self._conn.executemany("INSERT INTO changes(page) VALUES (?)", ((k,) for k in keys))
        last = self.last()
        self._conn.execute("DELETE FROM changes WHERE seq <= ?", (last - CHANGELOG_KEEP,))

    def seen_after(self, start: int) -> int:
        """In a write transaction that began with the log at `start`: the mark once it
        commits. When everything before it was seen, what it added is our own."""
        return self.last() if self.seen >= start else self.seen

    def since_seen(self) -> list[str] | None:
        """Keys other connections changed since this one last looked; None if too many
        to list (the log was pruned past our mark) or the index was rebuilt (a new
        epoch), meaning: reload everything."""
        epoch = read_epoch(self._conn)
        if epoch != self.epoch:
            self.epoch = epoch
            self.seen = self.last()
            return None
        first = self._conn.execute("SELECT min(seq) FROM changes").fetchone()[0]
        if first is not None and first > self.seen + 1:
            self.seen = self.last()
            return None
        rows = self._conn.execute(
            "SELECT seq, page FROM changes WHERE seq > ? ORDER BY seq", (self.seen,)
        ).fetchall()
        if rows:
            self.seen = int(rows[-1][0])
        return list(dict.fromkeys(str(key) for _, key in rows))
