"""The SQLite index: one connection, its schema version, write transactions, and the
change log other processes read to keep their in-memory graph in step.

The index is a cache of the files. It carries a schema version (`PRAGMA user_version`);
an outdated one is emptied and rebuilt from the files by the caller, and so is a file
SQLite says is not a database. Several processes share it: WAL, short write
transactions taken with `BEGIN IMMEDIATE`, and a busy timeout.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

from lore_mcp.config import BUSY_TIMEOUT_S
from lore_mcp.index.links import LINK_SCHEMA, LinkTable
from lore_mcp.index.pages import PAGE_SCHEMA, PageRow, PageTable
from lore_mcp.index.search import SEARCH_SCHEMA, SEARCH_TABLES, SearchTable

log = logging.getLogger(__name__)

SCHEMA_VERSION = 7
CHANGELOG_KEEP = 20_000
_CHANGES_SCHEMA = "CREATE TABLE changes(seq INTEGER PRIMARY KEY AUTOINCREMENT, slug TEXT NOT NULL);"
# What SQLite says of a file that is damaged, as opposed to one that is only busy.
_DAMAGED = (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)
_TABLES = ("pages", "shadowed", "names", "names_text", "links", *SEARCH_TABLES, "changes")


class Index:
    """One connection to the vault's index database, and its tables."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self.rebuilt = False
        try:
            self._open()
        except sqlite3.DatabaseError as exc:
            if exc.sqlite_errorcode not in _DAMAGED:
                raise
            log.warning("index %s is damaged (%s); rebuilding it from the files", path, exc)
            with suppress(sqlite3.Error):
                self._conn.close()
            for suffix in ("", "-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
            self._open()
        self._last_seq = self.last_change()

    def _open(self) -> None:
        self._conn = sqlite3.connect(
            self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
        self._conn.execute("PRAGMA journal_mode = WAL")
        self._conn.execute("PRAGMA synchronous = NORMAL")
        self.pages = PageTable(self._conn)
        self.links = LinkTable(self._conn)
        self.search = SearchTable(self._conn)
        self._begin()
        try:
            self._ensure_schema()
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def _ensure_schema(self) -> None:
        version = self._conn.execute("PRAGMA user_version").fetchone()[0]
        if version == SCHEMA_VERSION:
            try:
                for table in _TABLES:  # a table dropped by hand
                    self._conn.execute(f"SELECT 1 FROM {table} LIMIT 0")
                # Reading the tables finds a truncated or damaged file early.
                self._conn.execute("SELECT count(*) FROM pages").fetchone()
                self.search.check()
                return
            except sqlite3.OperationalError as exc:
                if exc.sqlite_errorcode != sqlite3.SQLITE_ERROR:  # busy or locked: not damage
                    raise
                log.warning("index %s is incomplete (%s); rebuilding it", self.path, exc)
        elif version:
            log.info("index schema %s is not %s; rebuilding", version, SCHEMA_VERSION)
        self._drop_all()
        for schema in (PAGE_SCHEMA, LINK_SCHEMA, SEARCH_SCHEMA, _CHANGES_SCHEMA):
            self._run_script(schema)
        self._conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        self.rebuilt = True

    def _run_script(self, schema: str) -> None:
        # executescript() would commit the open transaction; run the statements one by one.
        statement = ""
        for piece in schema.split(";"):
            statement += piece + ";"
            if sqlite3.complete_statement(statement):
                if statement.strip(" \n;"):
                    self._conn.execute(statement)
                statement = ""

    def _drop_all(self) -> None:
        rows = self._conn.execute(
            "SELECT type, name FROM sqlite_master WHERE type IN ('table', 'view') "
            "AND name NOT LIKE 'sqlite_%'"
        ).fetchall()
        for kind, name in rows:
            with suppress(sqlite3.OperationalError):  # shadow tables go with their FTS table
                self._conn.execute(f'DROP {kind.upper()} IF EXISTS "{name}"')

    def close(self) -> None:
        self.search.close()
        self._conn.close()

    # -- pages with their text ----------------------------------------------------------

    def put_pages(
        self,
        pages: Sequence[tuple[PageRow, str | None]],
        aliases: Mapping[str, Sequence[str]] | None = None,
        tags: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        """Insert or replace page rows, with their aliases and tags; a body (real pages)
        replaces the page's text."""
        ids = self.pages.upsert([row for row, _ in pages], aliases, tags)
        named = aliases or {}
        self.search.put(
            (ids[row.slug], row.title, named.get(row.slug, ()), body)
            for row, body in pages
            if body is not None
        )

    def delete_pages(self, slugs: Sequence[str]) -> None:
        self.search.delete(list(self.pages.ids(slugs).values()))
        self.pages.delete(slugs)

    # -- transactions ---------------------------------------------------------------

    @contextmanager
    def write(self) -> Iterator[None]:
        """A write transaction; it takes the database's write lock at once. Nested
        calls join the transaction already open."""
        if self._conn.in_transaction:
            yield
            return
        self._begin()
        start_seq = self.last_change()
        try:
            yield
            # When everything before this transaction was seen, what it added is our own.
            seen = self.last_change() if self._last_seq >= start_seq else self._last_seq
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")
        self._last_seq = seen

    def _begin(self) -> None:
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        while True:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                busy = exc.sqlite_errorcode in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
                if not busy or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    @property
    def in_transaction(self) -> bool:
        return self._conn.in_transaction

    # -- what other processes changed -----------------------------------------------

    def data_version(self) -> int:
        """A number that changes when another connection commits."""
        return int(self._conn.execute("PRAGMA data_version").fetchone()[0])

    def last_change(self) -> int:
        row = self._conn.execute("SELECT max(seq) FROM changes").fetchone()
        return int(row[0] or 0)

    def changes_since_seen(self) -> list[str] | None:
        """Slugs other connections changed since this one last looked; None if too many
        to list (the log was pruned past our mark), meaning: reload everything."""
        first = self._conn.execute("SELECT min(seq) FROM changes").fetchone()[0]
        if first is not None and first > self._last_seq + 1:
            self._last_seq = self.last_change()
            return None
        rows = self._conn.execute(
            "SELECT seq, slug FROM changes WHERE seq > ? ORDER BY seq", (self._last_seq,)
        ).fetchall()
        if rows:
            self._last_seq = int(rows[-1][0])
        return list(dict.fromkeys(str(slug) for _, slug in rows))

    def record_changes(self, slugs: Iterable[str]) -> None:
        """Note the slugs a write changed, for the other processes."""
        self._conn.executemany("INSERT INTO changes(slug) VALUES (?)", ((s,) for s in slugs))
        last = self.last_change()
        self._conn.execute("DELETE FROM changes WHERE seq <= ?", (last - CHANGELOG_KEEP,))
