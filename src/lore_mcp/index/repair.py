"""A damaged index, told apart from a busy one, and given a fresh start without taking
its files away from the other processes that have it open.

Only SQLite's own verdict counts as damage: an error saying the file is corrupt or not
a database, or a failed `PRAGMA quick_check`. A database that is locked is busy, never
damaged.

Replacing a damaged index is done by one process at a time (an exclusive lock on
`lore.db.lock` beside it), and only after that process has looked again: another may
have replaced it meanwhile (its epoch is new, or it passes the check). The files stay
where they are, so every process keeps talking to the same database:

- a database SQLite can still open gets a fresh, empty schema through SQLite's backup
  API, under SQLite's own write lock: to the other connections it is one more commit;
- a file that is not a database in WAL mode (no connection can read it, it is cut
  short or emptied, or it is in another journal mode) is rewritten in place: the
  write-ahead log truncated, the shared-memory index zeroed (which makes SQLite rebuild
  it), and the file given the bytes of a fresh, empty index in WAL mode. The processes
  that still have it open go on sharing it; an empty file would be a database in
  another journal mode, which no process can switch to WAL while they hold it open.
  A new index is made the same way.
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
DEFAULT_PAGE_SIZE = 4096
HEADER_BYTES = 100  # a database file begins with this many bytes of header
WAL_VERSIONS = b"\x02\x02"  # its bytes 18 and 19 in WAL mode (the file format versions)
Connect = Callable[[], sqlite3.Connection]
Create = Callable[[sqlite3.Connection], None]


def primary(exc: sqlite3.Error) -> int:
    """SQLite's primary result code of an error (extended codes carry it in the low byte)."""
    return (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF


def is_busy(exc: sqlite3.Error) -> bool:
    return primary(exc) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def may_be_damage(exc: sqlite3.Error) -> bool:
    """Whether an error is SQLite saying the file is damaged: corrupt, or not a
    database at all; a busy or locked database never is."""
    return primary(exc) in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)


def is_damage(exc: BaseException) -> bool:
    """Whether an exception says the index is damaged: SQLite's verdict (see
    `may_be_damage`), or text that is not UTF-8, which the index never holds (every text
    in it was written from a Python string); bytes overwritten inside a long text pass
    SQLite's checks and are found only so."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    return may_be_damage(exc) or str(exc).startswith("Could not decode to UTF-8")


def damage(conn: sqlite3.Connection) -> str | None:
    """What is wrong with the database, by SQLite's `quick_check`; None if nothing is."""
    try:
        rows = [str(row[0]) for row in conn.execute("PRAGMA quick_check(5)")]
    except sqlite3.DatabaseError as exc:
        if is_busy(exc) or not may_be_damage(exc):
            raise
        return str(exc)
    return None if rows == ["ok"] else "; ".join(rows)


def epoch(conn: sqlite3.Connection) -> str | None:
    """The index's epoch (see `schema.create_schema`); None when it cannot be read."""
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'epoch'").fetchone()
    except sqlite3.DatabaseError as exc:
        if is_busy(exc):
            raise
        return None
    return str(row[0]) if row else None


def replace_damaged(
    path: Path, connect: Connect, create: Create, seen_epoch: str | None = None
) -> bool:
    """Give the damaged index at `path` a fresh schema made by `create`, unless another
    process has already done so; True if this call did.

    Without `seen_epoch` the index is replaced only if `quick_check` finds it damaged.
    With it (the epoch of the index in which SQLite reported damage) it is replaced
    unless its epoch is another by now: SQLite's error is the verdict, and some damage
    (inside the full-text index's own records) passes the check."""
    with exclusive(path.with_name(path.name + LOCK_SUFFIX)):
        with closing(connect()) as conn:
            if seen_epoch is None:
                problem = damage(conn)
                if problem is None:
                    return False
            else:
                now = epoch(conn)
                if now is not None and now != seen_epoch:
                    return False  # replaced by another process since the caller looked
                problem = damage(conn) or "SQLite reported it damaged"
            log.warning("index %s is damaged (%s); rebuilding it from the files", path, problem)
            try:
                # In another journal mode the copy would wait for every other reader.
                if not not_wal(path) and _in_wal_mode(conn):
                    _overwrite(conn, create)
                    return True
            except sqlite3.DatabaseError as exc:
                if is_busy(exc) or not may_be_damage(exc):
                    raise
        _write_in_place(path, create)
        return True


def _in_wal_mode(conn: sqlite3.Connection) -> bool:
    """Whether the database is in WAL mode, as every index is."""
    return str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal"


def not_wal(path: Path) -> bool:
    """Whether the index file is missing or, by its header, not a database in WAL mode,
    as every index is from its first write on: emptied, cut short, overwritten, or
    switched to another journal mode. SQLite would have to switch it to WAL, which it
    cannot while other processes still have it open (it waits for them, for ever)."""
    try:
        with path.open("rb") as handle:
            header = handle.read(HEADER_BYTES)
    except FileNotFoundError:
        return True
    return len(header) < HEADER_BYTES or header[18:20] != WAL_VERSIONS


def make_wal(path: Path, create: Create) -> bool:
    """Give a file that is `not_wal` (or none yet) the bytes of a fresh index made by
    `create`, unless another process has already done so; True if this call did. A new
    index is made so too, whole, so that no process ever opens a file that another is
    still turning into a database."""
    with exclusive(path.with_name(path.name + LOCK_SUFFIX)):
        if not not_wal(path):
            return False
        if path.exists():
            log.warning("index %s is not a database in WAL mode; rebuilding it", path)
        _write_in_place(path, create)
        return True


@contextmanager
def _fresh(create: Create, page_size: int) -> Iterator[sqlite3.Connection]:
    """An empty index made by `create`, in memory."""
    with closing(sqlite3.connect(":memory:", isolation_level=None)) as fresh:
        fresh.execute(f"PRAGMA page_size = {page_size}")
        fresh.execute("BEGIN")
        create(fresh)
        fresh.execute("COMMIT")
        yield fresh


def _overwrite(target: sqlite3.Connection, create: Create) -> None:
    """Copy an empty index made by `create` over `target`'s database."""
    page_size = int(target.execute("PRAGMA page_size").fetchone()[0])
    with _fresh(create, page_size) as fresh:
        fresh.backup(target)


def _write_in_place(path: Path, create: Create) -> None:
    """Give a file that is not a database the bytes of an empty index in WAL mode,
    keeping every file in place (see the module's description)."""
    with _fresh(create, _page_size(path)) as fresh:
        image = bytearray(fresh.serialize())
    image[18:20] = WAL_VERSIONS
    with suppress(FileNotFoundError):  # first: no frame of the old log may be replayed
        os.truncate(f"{path}-wal", 0)
    shm = Path(f"{path}-shm")
    with suppress(FileNotFoundError), shm.open("r+b") as handle:
        size = os.fstat(handle.fileno()).st_size  # zeroed, not truncated: it may be mapped
        handle.write(bytes(size))
    if not path.exists():  # a new index appears whole
        new = path.with_name(path.name + ".new")
        with new.open("wb") as handle:
            handle.write(image)
            handle.flush()
            os.fsync(handle.fileno())
        new.replace(path)
        return
    with path.open("r+b") as handle:
        handle.write(image)
        handle.truncate()
        handle.flush()
        os.fsync(handle.fileno())


def _page_size(path: Path) -> int:
    """The page size the file's header names (other processes may have it cached),
    else SQLite's default."""
    try:
        with path.open("rb") as handle:
            header = handle.read(18)
    except OSError:
        return DEFAULT_PAGE_SIZE
    size = int.from_bytes(header[16:18], "big") if len(header) == 18 else 0
    size = 65536 if size == 1 else size
    return size if 512 <= size <= 65536 and size & (size - 1) == 0 else DEFAULT_PAGE_SIZE


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
