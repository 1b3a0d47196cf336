"""The index's upkeep, in a thread and on a connection of its own: merging FTS5's
segments, after a pass that wrote many pages and after each write, and copying the log
into the database after a pass.

FTS5 writes the terms it gathers in memory to a new b-tree (a segment) whenever they
fill its buffer and at each commit, and merges segments only a few at a time: a first
index of 10,000 pages leaves 17 in the search table, 22 at 100,000, and each save adds
one; every lookup of a term reads each of them (with 17, a search is about a sixth
slower, a title search a third). So:

- after a pass that wrote many pages, every segment is merged into one: FTS5's `merge`
  command with a negative page count starts that (once: it would start over each
  time), and the same command with a positive count goes on with it, in slices of short
  write transactions (a save waits for one slice at most; reads never wait). At 10,000
  pages that is 0.15 s of work, at 100,000 1.5 s. The pass calls for it in a row of
  `meta`, written in its own transaction, so that a merge cut short by the end of the
  process goes on at the next start where it stopped;
- after writes, the same positive command merges the segments of each level that holds
  two or more (the tables' `usermerge` is 2): the small segments writes leave are merged
  among themselves (well under a millisecond, mostly), and into the large one only once
  they have grown to about its size.

Every slice waits until writes have paused for `TIDY_AFTER_S`, which keeps the merges'
write lock out of the way of a burst of saves, each of which would otherwise wait for
it; closing the index does a few slices of the small segments' merge at once.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager

from lore_mcp.index import repair

log = logging.getLogger(__name__)

MERGED_TABLES = ("fts", "names_text")  # the FTS5 tables
MERGE_SLICE_PAGES = 100  # pages a slice of a merge writes at most (about 5 ms of work)
_MERGE_KEY = "merge"  # the row of `meta` there while a whole merge is to be done
_STARTED = "started"  # its value once FTS5 has started it
_BUSY_SLICE_MS = 250  # a slice waits this long for the write lock, then looks up again
TIDY_AFTER_S = 0.5  # the pause in writes the merge of their segments waits for
_CLOSING_SLICES = 4  # slices of the small segments' merge a closing index waits for


def merge_later(conn: sqlite3.Connection) -> None:
    """Call for a whole merge, in the caller's transaction (see the module's docstring)."""
    conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, '')", (_MERGE_KEY,))


def merge_called_for(conn: sqlite3.Connection) -> str | None:
    """Where a whole merge stands: None when none is called for, else '' until FTS5
    has started it and `_STARTED` after."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (_MERGE_KEY,)).fetchone()
    return None if row is None else str(row[0])


class Upkeep:
    """The thread that does the upkeep: one at a time, going on when more is asked of
    it while it runs, and stopped (after the slice in hand) by `stop`."""

    def __init__(self, connect: Callable[[], sqlite3.Connection]) -> None:
        self._connect = connect
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._wanted = False
        self._checkpoint = False
        self._due = 0.0  # when the work asked for is to start (`time.monotonic`)
        self._stopping = threading.Event()

    def start(self, checkpoint: bool, after: float = 0.0) -> None:
        """In `after` seconds (put off by a later call): merge (the whole index, if a
        pass called for it; else the small segments), then, with `checkpoint`, copy the
        log into the database: a passive checkpoint, which no reader or writer waits
        for."""
        with self._lock:
            self._wanted = True
            self._checkpoint |= checkpoint
            self._due = time.monotonic() + after
            self._stopping.clear()
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="lore-upkeep", daemon=True)
                self._thread.start()

    def stop(self) -> None:
        """Merge the small segments writes left at once (a few slices at most), leave
        the rest of a whole merge to the next start; wait for the thread to end."""
        self._stopping.set()
        self.wait()

    def wait(self) -> None:
        """Wait for what was asked of the thread to be done."""
        with self._lock:
            thread = self._thread
        if thread is not None:
            thread.join()

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._wanted:
                    self._thread = None
                    return
                closing_now = self._stopping.is_set()
                pause = 0.0 if closing_now else self._due - time.monotonic()
                if pause <= 0:
                    checkpoint, self._wanted, self._checkpoint = self._checkpoint, False, False
            if pause > 0:
                self._stopping.wait(pause)
                continue
            try:
                with closing(self._connect()) as conn:
                    conn.execute(f"PRAGMA busy_timeout = {_BUSY_SLICE_MS}")
                    self._merge(conn)
                    if checkpoint and not closing_now:  # closing the index does it then
                        conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
            except sqlite3.Error as exc:  # the next upkeep, or commit, does it then
                log.debug("upkeep of the index failed: %s", exc)

    def _merge(self, conn: sqlite3.Connection) -> None:
        """Merge in slices, each once writes have paused: a whole merge (started once,
        then taken on where it stopped, at the next start too) or the small segments'
        merge. A closing index leaves a whole merge to the next start, and does a few
        slices of the small segments' merge."""
        whole = merge_called_for(conn)
        if whole is not None and self._stopping.is_set():
            return
        if whole != _STARTED and whole is not None and not self._start_whole(conn):
            return
        for table in MERGED_TABLES:
            slices = 0
            while True:
                self._wait_for_pause()
                if self._stopping.is_set() and (whole is not None or slices >= _CLOSING_SLICES):
                    return
                worked = self._slice(conn, table)
                if worked is False:
                    break
                slices += 1
        if whole is not None:
            with _transaction(conn):
                conn.execute("DELETE FROM meta WHERE key = ?", (_MERGE_KEY,))
            log.info("merged the search index's segments")

    def _wait_for_pause(self) -> None:
        """Wait until writes have paused for `TIDY_AFTER_S` (or the index closes)."""
        with self._lock:
            pause = self._due - time.monotonic()
        if pause > 0:
            self._stopping.wait(pause)

    def _start_whole(self, conn: sqlite3.Connection) -> bool:
        """Start the merge of every segment of each table (FTS5's `merge` with a negative
        count, once: it would start over each time), and say so in `meta`, in one
        transaction; False if the index closed first."""

        def start() -> bool:
            for table in MERGED_TABLES:
                _merge_command(conn, table, -MERGE_SLICE_PAGES)
            conn.execute("UPDATE meta SET value = ? WHERE key = ?", (_STARTED, _MERGE_KEY))
            return True

        while not self._stopping.is_set():
            self._wait_for_pause()
            if _unless_busy(conn, start):
                return True
        return False

    def _slice(self, conn: sqlite3.Connection, table: str) -> bool | None:
        """One slice of a merge of `table` (FTS5 goes on with a merge it has started, else
        merges a level of two or more segments): whether it found one to do (FTS5
        changes at least two rows when it does), or None when the write lock was busy."""

        def merge() -> bool:
            before = conn.total_changes
            _merge_command(conn, table, MERGE_SLICE_PAGES)
            return conn.total_changes - before >= 2

        return _unless_busy(conn, merge)


def _merge_command(conn: sqlite3.Connection, table: str, pages: int) -> None:
    conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('merge', ?)", (pages,))


def _unless_busy(conn: sqlite3.Connection, work: Callable[[], bool]) -> bool | None:
    """`work` in a write transaction of its own; None when the write lock stayed busy
    (for `_BUSY_SLICE_MS`), and nothing was done."""
    try:
        with _transaction(conn):
            return work()
    except sqlite3.OperationalError as exc:
        if not repair.is_busy(exc):
            raise
        return None


@contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """`BEGIN IMMEDIATE` ... `COMMIT`, rolled back on a failure."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
