"""The SQLite index: one connection, write transactions, and its tables: pages
(`pages`, `search`), links (`links`), the change log other processes read to keep their
in-memory graph in step (`changes`) and the renames remembered (`moves`); `schema`
makes them.

The index is a cache of the files. It carries a schema version (`PRAGMA user_version`);
an outdated one is emptied and rebuilt from the files by the caller, and so is one
SQLite finds damaged (see `repair`): at open, or at any later call (`heal`, which the
engine's `vault_ops.heal` calls). Several processes share it: WAL, short write
transactions taken with `BEGIN IMMEDIATE`, and a wait for the write lock that ends in
`VaultBusyError`, never in a rebuild. Opening takes no write lock when the schema is
current, so a process starts at once while another one writes.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import closing, contextmanager, suppress
from functools import partial
from pathlib import Path

from lore_mcp.config import BUSY_TIMEOUT_S, LARGE_PASS_CACHE_KIB
from lore_mcp.errors import VaultBusyError
from lore_mcp.index import fill, repair, upkeep
from lore_mcp.index.changes import ChangeLog
from lore_mcp.index.links import LinkRow, LinkTable
from lore_mcp.index.moves import MoveTable
from lore_mcp.index.pages import PageRow, PageTable
from lore_mcp.index.schema import (
    LATER_INDEXES,
    PAGE_TABLES,
    SCHEMA_VERSION,
    TABLES,
    create_schema,
    make_indexes,
)
from lore_mcp.index.search import SearchTable, SearchText

log = logging.getLogger(__name__)

LOCK_SLICE_S = 0.25  # a wait for the write lock looks up this often (to give up, or log)
WARN_AFTER_S = 2.0  # a wait this long is worth a line in the log
WAL_CHECKPOINT_PAGES = 1000  # SQLite's own: a commit past this much log checkpoints

# How long to wait for another process's write lock: called with the seconds waited so
# far, it says whether to go on waiting.
Patience = Callable[[float], bool]


class Index:
    """One connection to the vault's index database, and its tables."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self.rebuilt = False
        self.busy_timeout = BUSY_TIMEOUT_S  # how long a write waits for the lock
        self.heals = 0  # how often a call found this index damaged and it was replaced
        self._upkeep = upkeep.Upkeep(self._connect)  # see `upkeep_soon`
        # Inside `filling` of an index with no rows at all: `fresh`, and the thread that
        # writes the pages (see `fill`) with the id the next page written gets.
        self._fresh = False
        self._filler: fill.Filler | None = None
        self._next_id = 1
        try:
            self._open()
        except sqlite3.DatabaseError as exc:
            if not repair.is_damage(exc):
                raise
            self.rebuilt |= repair.replace_damaged(path, self._connect, create_schema)
            try:
                self._open()
            except sqlite3.DatabaseError as again:  # damage that passes quick_check
                if not repair.is_damage(again):
                    raise
                with closing(self._connect()) as conn:
                    seen = repair.epoch(conn) or ""
                self.rebuilt |= repair.replace_damaged(path, self._connect, create_schema, seen)
                self._open()

    def heal(self) -> bool:
        """Replace the index after a call found it damaged: with a fresh, empty schema,
        in place and one process at a time (see `repair`), unless another process has
        already replaced it since this connection last looked (its epoch is new). Then
        connect again. True if this call emptied it; either way the caller brings it up
        to date with the files and loads what it holds afresh."""
        seen = self.changes.epoch
        with suppress(sqlite3.Error):  # a damaged file may refuse even this
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
        self.close()  # its lock would keep the repair waiting
        try:
            emptied = repair.replace_damaged(self.path, self._connect, create_schema, seen)
        finally:  # connected again, even when the repair failed (the next call tries again)
            self._open()
        self.rebuilt |= emptied
        self.heals += 1
        return emptied

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(
            self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )

    def _open(self) -> None:
        if repair.not_wal(self.path):  # missing, emptied, cut short: made afresh
            self.rebuilt |= repair.make_wal(self.path, create_schema)
        self._conn = self._connect()
        self.pages = PageTable(self._conn)
        self.links = LinkTable(self._conn)
        self.search = SearchTable(self._conn)
        self.moves = MoveTable(self._conn)
        try:
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = NORMAL")
            self._ensure_schema()
            # Made here, so that damage its reads run into counts as damage found at open.
            self.changes = ChangeLog(self._conn)
        except BaseException:
            self._conn.close()
            raise

    def _ensure_schema(self) -> None:
        """Make the tables when they are missing or outdated. A current schema is only
        read: no write lock, so opening never waits for another process's writes."""
        if self._schema_problem() is None:
            return
        try:  # while waiting, another process may make the tables
            self._begin(lambda waited: self.within_timeout(waited) and bool(self._schema_problem()))
        except VaultBusyError:
            if self._schema_problem() is None:
                return
            raise
        try:
            if (problem := self._schema_problem()) is not None:
                log.info("index %s: %s; rebuilding it from the files", self.path, problem)
                create_schema(self._conn)
                self.rebuilt = True
        except BaseException:
            self._rollback()
            raise
        self._conn.execute("COMMIT")

    def _rollback(self) -> None:
        """End the open transaction, if SQLite has not ended it itself (it does after
        some errors)."""
        if self._conn.in_transaction:
            self._conn.execute("ROLLBACK")

    def _schema_problem(self) -> str | None:
        """Why the tables cannot be used as they are; None when they can."""
        version = self._conn.execute("PRAGMA user_version").fetchone()[0]
        if version != SCHEMA_VERSION:
            return f"schema {version} is not {SCHEMA_VERSION}" if version else "no tables yet"
        try:
            for table in TABLES:  # a table dropped by hand
                self._conn.execute(f"SELECT 1 FROM {table} LIMIT 0")
            # Reading the tables finds a truncated or damaged file early.
            self._conn.execute("SELECT count(*) FROM pages").fetchone()
            self.search.check()
        except sqlite3.OperationalError as exc:
            if repair.primary(exc) != sqlite3.SQLITE_ERROR:  # busy or locked: not damage
                raise
            return f"it is incomplete ({exc})"
        return None

    def close(self) -> None:
        self._upkeep.stop()
        self.search.close()
        self._conn.close()

    # -- pages with their text ----------------------------------------------------------

    @property
    def fresh(self) -> bool:
        """Inside `filling` of an index that held no rows at all: every page written is
        new to it, so that no row of it is there to replace or delete first."""
        return self._fresh

    def put_pages(
        self,
        pages: Sequence[tuple[PageRow, SearchText | None]],
        aliases: Mapping[str, Sequence[str]] | None = None,
        tags: Mapping[str, Sequence[str]] | None = None,
        links: Sequence[LinkRow] = (),
    ) -> None:
        """Insert or replace page rows, with their aliases and tags; a search text (real
        pages: see `search.search_text`) replaces the page's; `links` (held by these
        pages, resolved) are added. Inside a `filling` with a thread of its own, this is
        handed to that thread and returns at once."""
        if self._filler is not None:
            first, self._next_id = self._next_id, self._next_id + len(pages)
            write = partial(self._insert_new, pages, aliases or {}, tags or {}, links, first)
            self._filler.submit(write)
            return
        fresh = self._fresh
        ids = self.pages.upsert([row for row, _ in pages], aliases, tags, fresh=fresh)
        texts = ((ids[row.key], text) for row, text in pages if text is not None)
        self.search.put(texts, fresh=fresh)
        self.links.add(links)

    def _insert_new(
        self,
        pages: Sequence[tuple[PageRow, SearchText | None]],
        aliases: Mapping[str, Sequence[str]],
        tags: Mapping[str, Sequence[str]],
        links: Sequence[LinkRow],
        first_id: int,
    ) -> None:
        ids = self.pages.insert_new([row for row, _ in pages], aliases, tags, first_id)
        self.search.insert_new((ids[row.key], text) for row, text in pages if text is not None)
        self.links.insert_new(links)

    def delete_pages(self, keys: Sequence[str]) -> None:
        self.search.delete(list(self.pages.ids(keys).values()))
        self.pages.delete(keys)

    @contextmanager
    def filling(self, *, thread: bool = True) -> Iterator[None]:
        """Around filling an empty index with every page, in the caller's transaction:
        the indexes on names, slugs, times, tags and where links lead are made once at
        the end, by a sort, instead of written into at each insert (a write at a random
        place of their B-trees a row: at 100,000 pages, much of a first index's time).
        Meanwhile a lookup by them reads the whole table. An index that held no rows at
        all is `fresh`. Its pages are then written by a thread of its own, a few
        statements a table and batch, unless `thread` is false (see `fill`); until the
        end, only `put_pages` and `forget_moves` may use the index. A failure leaves
        what was written to the caller's rollback."""
        for name in LATER_INDEXES:
            self._conn.execute(f"DROP INDEX IF EXISTS {name}")
        # Rows left where no page is (a damaged index) are deleted as each page is written.
        self._fresh = fresh = not any(
            self._conn.execute(f"SELECT EXISTS (SELECT 1 FROM {table})").fetchone()[0]
            for table in PAGE_TABLES
        )
        if fresh and thread:
            self._next_id = 1  # the first rowid SQLite gives in an empty table
            self._filler = fill.Filler()
        try:
            yield
        except BaseException:
            if self._filler is not None:
                self._filler.abandon()
            raise
        else:
            if self._filler is not None:
                self._filler.finish()
        finally:
            self._fresh, self._filler = False, None
        make_indexes(self._conn)

    @contextmanager
    def no_checkpoint(self) -> Iterator[None]:
        """Around a write transaction that may write much of the index (a pass over the
        files): its commit does not copy the log into the database, which would hold up
        the end of the pass about as long again as writing the log did. Call
        `upkeep_soon` after it."""
        self._conn.execute("PRAGMA wal_autocheckpoint = 0")
        try:
            yield
        finally:
            self._conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_CHECKPOINT_PAGES}")

    def merge_later(self) -> None:
        """Have the next `upkeep_soon` merge the search index's segments, which a pass
        that wrote many pages leaves many of (see `upkeep`); in the caller's
        transaction, so that the call for it is kept with what it wrote."""
        upkeep.merge_later(self._conn)

    def upkeep_soon(self, *, after_pass: bool) -> None:
        """In a thread and on a connection of its own: merge the search index's
        segments (all of them if a pass called for it, else the small ones writes
        leave, once writes pause), and after a pass copy what the log holds into the
        database (a passive checkpoint, which no reader or writer waits for). `close`
        stops a merge after the slice in hand; the next start takes it up."""
        pause = 0.0 if after_pass else upkeep.TIDY_AFTER_S
        self._upkeep.start(checkpoint=after_pass, after=pause)

    def upkeep_done(self) -> None:
        """Wait for the upkeep asked for so far to end."""
        self._upkeep.wait()

    @contextmanager
    def large_cache(self) -> Iterator[None]:
        """A larger page cache for the length of a pass over many pages: the tables'
        B-trees then stay in memory instead of being read back for each batch."""
        previous = self._conn.execute("PRAGMA cache_size").fetchone()[0]
        self._conn.execute(f"PRAGMA cache_size = -{LARGE_PASS_CACHE_KIB}")
        try:
            yield
        finally:
            self._conn.execute(f"PRAGMA cache_size = {int(previous)}")

    # -- transactions ---------------------------------------------------------------

    def within_timeout(self, waited: float) -> bool:
        """The patience of an ordinary write: `busy_timeout` seconds."""
        return waited < self.busy_timeout

    @contextmanager
    def write(self, patience: Patience | None = None) -> Iterator[None]:
        """A write transaction; it takes the database's write lock at once, waiting for
        another process's as long as `patience` says (by default `busy_timeout`
        seconds; then `VaultBusyError`, with nothing changed). Nested calls join the
        transaction already open."""
        if self._conn.in_transaction:
            yield
            return
        self._begin(patience or self.within_timeout)
        start = self.changes.last()
        try:
            yield
            seen = self.changes.seen_after(start)
        except BaseException:
            self._rollback()
            raise
        try:
            self._conn.execute("COMMIT")
        except sqlite3.Error:  # a full disk: SQLite may leave the transaction open
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            raise
        self.changes.seen = seen

    def _begin(self, patience: Patience) -> None:
        """`BEGIN IMMEDIATE`, waiting in slices for another process's write lock."""
        started = time.monotonic()
        warned = False
        self._conn.execute(f"PRAGMA busy_timeout = {int(LOCK_SLICE_S * 1000)}")
        try:
            while True:
                try:
                    self._conn.execute("BEGIN IMMEDIATE")
                    return
                except sqlite3.OperationalError as exc:
                    if not repair.is_busy(exc):
                        raise
                waited = time.monotonic() - started
                if not patience(waited):
                    raise VaultBusyError(waited)
                if not warned and waited >= WARN_AFTER_S:
                    log.warning("the index is busy: waiting for another process to finish writing")
                    warned = True
        finally:
            self._conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")

    def flush(self) -> None:
        """Have the full-text index write now what it keeps until the commit (a
        savepoint makes FTS5 do so): damage in it is then found while the write that
        changed the files can still put them back (see `vault_ops.heal`), not at the
        commit, after the write was recorded as done."""
        if self._conn.in_transaction:
            self._conn.execute("SAVEPOINT flush")
            self._conn.execute("RELEASE flush")

    @property
    def in_transaction(self) -> bool:
        return self._conn.in_transaction

    # -- what other processes changed -----------------------------------------------

    def data_version(self) -> int:
        """A number that changes when another connection commits."""
        return int(self._conn.execute("PRAGMA data_version").fetchone()[0])

    # -- pages renamed away ------------------------------------------------------------

    def forget_moves(self, keys: Iterable[str]) -> None:
        """`moves.forget`, handed to the filling thread inside `filling`."""
        if self._filler is not None:
            self._filler.submit(partial(self.moves.forget, list(keys)))
            return
        self.moves.forget(keys)
