"""A damaged index, told apart from a busy one, and given a fresh start without taking
its files away from the other processes that have it open.

Only SQLite's own verdict counts as damage: a file it says is not a database, or one
that fails `PRAGMA quick_check`. A database that is locked is busy, never damaged.

Replacing a damaged index is done by one process at a time (an exclusive lock on
`lore.db.lock` beside it), and only after that process has looked again: another may
have replaced it meanwhile. The files stay where they are, so every process keeps
talking to the same database:

- a database SQLite can still open gets a fresh, empty schema through SQLite's backup
  API, under SQLite's own write lock: to the other connections it is one more commit;
- a file that is not a database at all (no connection can read it) is emptied in place:
  the database and its write-ahead log truncated, the shared-memory index zeroed, which
  makes SQLite rebuild it. An empty file is an empty database.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import sys
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager, suppress
from pathlib import Path

log = logging.getLogger(__name__)

LOCK_SUFFIX = ".lock"
Connect = Callable[[], sqlite3.Connection]
Create = Callable[[sqlite3.Connection], None]


def primary(exc: sqlite3.Error) -> int:
    """SQLite's primary result code of an error (extended codes carry it in the low byte)."""
    return (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF


def is_busy(exc: sqlite3.Error) -> bool:
    return primary(exc) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def may_be_damage(exc: sqlite3.Error) -> bool:
    """Whether an error is SQLite saying the file is damaged (to be confirmed by
    `damage`); a busy or locked database never is."""
    return primary(exc) in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)


def damage(conn: sqlite3.Connection) -> str | None:
    """What is wrong with the database, by SQLite's `quick_check`; None if nothing is."""
    try:
        rows = [str(row[0]) for row in conn.execute("PRAGMA quick_check(5)")]
    except sqlite3.DatabaseError as exc:
        if is_busy(exc) or not may_be_damage(exc):
            raise
        return str(exc)
    return None if rows == ["ok"] else "; ".join(rows)


def replace_damaged(path: Path, connect: Connect, create: Create) -> bool:
    """Give the damaged index at `path` a fresh schema made by `create`, unless another
    process has already done so; True if this call did."""
    with exclusive(path.with_name(path.name + LOCK_SUFFIX)):
        with closing(connect()) as conn:
            problem = damage(conn)
            if problem is None:
                return False
            log.warning("index %s is damaged (%s); rebuilding it from the files", path, problem)
            try:
                _overwrite(conn, create)
                return True
            except sqlite3.DatabaseError as exc:
                if is_busy(exc) or not may_be_damage(exc):
                    raise
        _empty_in_place(path)
        return True


def _overwrite(target: sqlite3.Connection, create: Create) -> None:
    """Copy an empty index made by `create` over `target`'s database."""
    page_size = int(target.execute("PRAGMA page_size").fetchone()[0])
    with closing(sqlite3.connect(":memory:", isolation_level=None)) as fresh:
        fresh.execute(f"PRAGMA page_size = {page_size}")
        fresh.execute("BEGIN")
        create(fresh)
        fresh.execute("COMMIT")
        fresh.backup(target)


def _empty_in_place(path: Path) -> None:
    """Empty a file that is not a database, keeping every file in place."""
    for suffix in ("", "-wal"):
        with suppress(FileNotFoundError):
            os.truncate(f"{path}{suffix}", 0)
    shm = Path(f"{path}-shm")
    with suppress(FileNotFoundError), shm.open("r+b") as handle:
        size = os.fstat(handle.fileno()).st_size  # zeroed, not truncated: it may be mapped
        handle.write(bytes(size))


@contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on the file `path` (made if missing) against every other
    process; released when the block ends, or when the process dies."""
    with path.open("a+b") as handle:
        if sys.platform == "win32":
            import msvcrt

            handle.seek(0)
            while True:  # LK_LOCK gives up after ten tries, a second apart
                try:
                    msvcrt.locking(handle.fileno(), msvcrt.LK_LOCK, 1)
                    break
                except OSError:
                    continue
            try:
                yield
            finally:
                handle.seek(0)
                msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)
        else:
            import fcntl

            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
