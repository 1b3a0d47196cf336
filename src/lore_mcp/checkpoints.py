"""Copying the index's write-ahead log into its database file, off the writer's path.

In WAL mode SQLite appends each commit to a log and, by default, the commit that takes
the log past 1000 pages copies it into the database file and fsyncs it (a checkpoint).
For the index that was one save in twenty or so taking 15-55 ms longer than the rest,
with the vault's lock held, so any call behind it waited too. Here the index's own
connection never checkpoints: a thread with a connection of its own does it a moment
after a commit (`DELAY_S`, so a burst of saves costs one checkpoint rather than one
each, whose fsyncs would compete with the saves' own). Checkpoints are PASSIVE: readers
and writers go on meanwhile, as SQLite's automatic ones allow.

Nothing depends on when a checkpoint happens: a commit is in the log, and the log is
part of the database, from the moment it returns. A checkpoint left undone is done by
the next one, or by SQLite when the last connection closes.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path

log = logging.getLogger(__name__)

DELAY_S = 0.05


class Checkpointer:
    """Checkpoints the database at `path` in a thread of its own after `due()` is called
    (at most once per `delay` seconds). The thread starts at the first `due()`."""

    def __init__(self, path: Path, timeout_s: float, delay: float = DELAY_S) -> None:
        self.path = path
        self._timeout_s = timeout_s
        self._delay = delay
        self._due = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._start = threading.Lock()

    def due(self) -> None:
        """A commit happened: checkpoint soon."""
        if self._thread is None:
            with self._start:
                if self._thread is None and not self._stopping.is_set():
                    self._thread = threading.Thread(
                        target=self._run, name="lore-checkpoint", daemon=True
                    )
                    self._thread.start()
        self._due.set()

    def close(self) -> None:
        """Stop the thread; a checkpoint under way finishes first."""
        with self._start:
            self._stopping.set()
            thread = self._thread
        self._due.set()
        if thread is not None:
            thread.join()

    def now(self) -> None:
        """Checkpoint in the calling thread, from a connection opened for it. Never raises."""
        conn = self._checkpoint(None)
        if conn is not None:
            conn.close()

    def _run(self) -> None:
        conn: sqlite3.Connection | None = None
        try:
            while True:
                self._due.wait()
                if self._stopping.wait(self._delay):
                    return
                self._due.clear()  # commits from here on ask for the next checkpoint
                if self._stopping.is_set():  # close() came after the wait: its wake is gone
                    return
                conn = self._checkpoint(conn)
        finally:
            if conn is not None:
                conn.close()

    def _checkpoint(self, conn: sqlite3.Connection | None) -> sqlite3.Connection | None:
        """Checkpoint through `conn` (opened here the first time); the connection to use
        next time. A failure is logged and the next commit asks again."""
        try:
            conn = conn or sqlite3.connect(self.path, timeout=self._timeout_s)
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        except sqlite3.Error as exc:
            busy = "locked" in str(exc) or "busy" in str(exc)  # another process's checkpoint
            log.log(
                logging.DEBUG if busy else logging.WARNING,
                "cannot checkpoint the index %s now: %s",
                self.path,
                exc,
            )
        return conn
