"""A first index written by a thread of its own, beside the pass that reads the pages.

A first index spends most of its time in two kinds of work: reading and parsing pages
(Python, which holds the interpreter's global lock) and inserting their rows (SQLite,
which lets go of it while a statement runs). A `Filler` runs the inserts in a thread,
so that SQLite writes one batch on the second core while the pass parses the next.
That pays only when a batch is a few statements: a thread that takes the global lock
back for every row (`executemany`) waits for the interpreter's switch between threads
at each one, and goes no faster than that. So the filler's inserts write each table's
rows of a batch in one statement (`batch.insert_at_once`).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable

# Batches handed over and not yet written: the pass parses ahead by no more than this.
WAITING = 2
THREAD_NAME = "lore-index-fill"


class Filler:
    """Runs the writes handed to it one after the other, in order, in a thread of its
    own, on a connection no other thread uses meanwhile. The first write that fails
    stops the rest; its exception is raised in the thread that hands over the next one,
    or that finishes."""

    def __init__(self) -> None:
        self._queue: queue.Queue[Callable[[], object] | None] = queue.Queue(WAITING)
        self._failure: BaseException | None = None
        self._abandoned = False
        self._thread = threading.Thread(target=self._run, name=THREAD_NAME, daemon=True)
        self._thread.start()

    def submit(self, write: Callable[[], object]) -> None:
        """Hand over a write (waiting while `WAITING` are waiting already)."""
        self._raise_failure()
        self._queue.put(write)

    def finish(self) -> None:
        """Wait for every write handed over; raise the first one's failure."""
        self._end()
        self._raise_failure()

    def abandon(self) -> None:
        """Wait for the write under way; the ones still waiting are dropped (the pass
        failed, and its transaction is rolled back next)."""
        self._abandoned = True
        self._end()

    def _end(self) -> None:
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()

    def _raise_failure(self) -> None:
        if self._failure is not None:
            raise self._failure

    def _run(self) -> None:
        while (write := self._queue.get()) is not None:
            if self._failure is None and not self._abandoned:  # else only empty the queue
                try:
                    write()
                except BaseException as exc:  # handed to the pass, which rolls back
                    self._failure = exc
