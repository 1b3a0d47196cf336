"""The links table: one row per link written in a page, with where it resolves: a page's
path, or the key of the placeholder it waits at."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

from lore_mcp.index.batch import execute_in, insert_at_once, select_in

# The indexes on where links lead, by name: made once at the end of a first index (see
# `Index.filling`), kept up at each write after.
LINK_INDEXES = {
    "links_resolved": "links(resolved)",
    "links_key": "links(key)",
    "links_fold": "links(fold)",
}
LINK_SCHEMA = """
CREATE TABLE links(
    id INTEGER PRIMARY KEY,
    source TEXT NOT NULL,
    target TEXT NOT NULL,
    line INTEGER NOT NULL,
    context TEXT NOT NULL,
    key TEXT NOT NULL,
    exact INTEGER NOT NULL,
    fold TEXT NOT NULL,
    resolved TEXT NOT NULL,
    ambiguous INTEGER NOT NULL DEFAULT 0,
    loose INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX links_source ON links(source);
"""
_COLUMNS = "source, target, line, context, key, exact, fold, resolved, ambiguous, loose"


class LinkRow(NamedTuple):
    """A link as stored: the page it is written in (its path), its target as written,
    its line and that line's text, the target's key (see `slugs.Key`), and where it
    resolves, with how (see `pagesets.Resolution`)."""

    source: str
    target: str
    line: int
    context: str
    key: str
    exact: bool
    fold: str
    resolved: str
    ambiguous: bool = False
    loose: bool = False
    id: int = 0


def _row(row: tuple[str, str, int, str, str, int, str, str, int, int, int]) -> LinkRow:
    source, target, line, context, key, exact, fold, resolved, ambiguous, loose, id_ = row
    return LinkRow(
        source,
        target,
        line,
        context,
        key,
        bool(exact),
        fold,
        resolved,
        bool(ambiguous),
        bool(loose),
        id_,
    )


class LinkTable:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def add(self, rows: Iterable[LinkRow]) -> None:
        self._conn.executemany(
            f"INSERT INTO links({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (row[:10] for row in rows),
        )

    def insert_new(self, rows: Sequence[LinkRow]) -> None:
        """`add`, in one statement (see `batch.insert_at_once`)."""
        insert_at_once(self._conn, "links", _COLUMNS.split(", "), [row[:10] for row in rows])

    def delete_from(self, sources: Sequence[str]) -> None:
        execute_in(self._conn, "DELETE FROM links WHERE source IN ({})", sources)

    def _select(self, where: str, *args: object) -> list[LinkRow]:
        sql = f"SELECT {_COLUMNS}, id FROM links {where}"
        return [_row(row) for row in self._conn.execute(sql, args)]

    def from_page(self, source: str) -> list[LinkRow]:
        """The links written in a page, in order."""
        return self._select("WHERE source = ? ORDER BY id", source)

    def to_page(self, key: str) -> list[LinkRow]:
        """The links that resolve to a page or placeholder, by source and line."""
        return self._select("WHERE resolved = ? ORDER BY source, line, id", key)

    def with_keys(self, keys: Sequence[str], folds: Sequence[str] = ()) -> list[LinkRow]:
        """The links whose target has one of these keys, or one of these slug forms."""
        sql = f"SELECT {_COLUMNS}, id FROM links WHERE key IN ({{}})"
        found = {row[-1]: row for row in select_in(self._conn, sql, keys)}
        sql = f"SELECT {_COLUMNS}, id FROM links WHERE fold IN ({{}})"
        found |= {row[-1]: row for row in select_in(self._conn, sql, folds)}
        return [_row(row) for _, row in sorted(found.items())]

    def all(self) -> list[LinkRow]:
        return self._select("")

    def set_resolutions(self, updates: Iterable[tuple[int, str, bool, bool]]) -> None:
        """(id, resolved, ambiguous, loose) for links that now lead elsewhere."""
        self._conn.executemany(
            "UPDATE links SET resolved = ?, ambiguous = ?, loose = ? WHERE id = ?",
            (
                (key, int(ambiguous), int(loose), link_id)
                for link_id, key, ambiguous, loose in updates
            ),
        )

    def edges(self, sources: Sequence[str] | None = None) -> Iterator[tuple[str, str]]:
        """Distinct (source, resolved) pairs, for all sources or the given ones, as they
        are read (a vault's links need not be held at once)."""
        if sources is None:
            return iter(self._conn.execute("SELECT DISTINCT source, resolved FROM links"))
        sql = "SELECT DISTINCT source, resolved FROM links WHERE source IN ({})"
        return select_in(self._conn, sql, sources)

    def first_targets(self, keys: Sequence[str]) -> dict[str, str]:
        """For each key, the target text of the first link to it (by source, then line)."""
        sql = (
            "SELECT resolved, target FROM links WHERE resolved IN ({}) "
            "ORDER BY resolved, source DESC, line DESC, id DESC"
        )
        return dict(select_in(self._conn, sql, keys))  # the last row per key wins: the first

    def empty(self) -> bool:
        return not self._conn.execute("SELECT EXISTS (SELECT 1 FROM links)").fetchone()[0]

    def count(self) -> int:
        return int(self._conn.execute("SELECT count(*) FROM links").fetchone()[0])
