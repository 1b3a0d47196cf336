"""The renames remembered: where the page at a path went, so that a write by its old
name is told where the page is now (see `vault_ops.names`). Rows of `meta`, a cache like
the rest of the index: a rebuild forgets them."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

MOVES_KEEP = 10_000  # renames remembered, the latest (see `MoveTable.record`)
_MOVED = "moved:"  # the prefix of a rename's row in `meta`: old path key -> new path
_MOVED_END = "moved;"  # the first key after every key with that prefix


class MoveTable:
    """The renames, in the index's `meta` table."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def record(self, old_key: str, new_path: str) -> None:
        """Remember that the page at the path key `old_key` was renamed to the file
        `new_path`, until a page is there again (`forget`); the latest `MOVES_KEEP`
        renames are kept."""
        cursor = self._conn.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (_MOVED + old_key, new_path)
        )
        # By rowid (`+key` keeps the key's index out): only the rows older than the kept
        # ones are visited, and those were deleted by the renames before.
        self._conn.execute(
            "DELETE FROM meta WHERE rowid <= ? AND +key >= ? AND +key < ?",
            ((cursor.lastrowid or 0) - MOVES_KEEP, _MOVED, _MOVED_END),
        )

    def moved_to(self, key: str) -> str | None:
        """The path the page at the path key `key` was last renamed to, if it was."""
        row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (_MOVED + key,))
        found = row.fetchone()
        return None if found is None else str(found[0])

    def forget(self, keys: Iterable[str]) -> None:
        """Forget the renames away from these path keys (a page is there again). One
        look when no rename is remembered, as in a first index."""
        wanted = [(_MOVED + key,) for key in keys]
        remembered = self._conn.execute(
            "SELECT 1 FROM meta WHERE key >= ? AND key < ? LIMIT 1", (_MOVED, _MOVED_END)
        ).fetchone()
        if wanted and remembered:
            self._conn.executemany("DELETE FROM meta WHERE key = ?", wanted)
