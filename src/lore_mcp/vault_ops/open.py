"""Opening a vault, and the rules every operation follows to use it.

Each operation waits until the first index pass is done, takes the vault's lock, takes
in what other processes committed, and does its work. Writes hold the index's write
lock for the whole operation, so two processes never interleave their changes; a write
that cannot get it in time fails with `VaultBusyError`, having changed nothing.

Edits made outside reach the index through `apply_external_changes` (the files a
watcher saw change), `resync` (a pass over every file, when events were lost) and
`changed_on_disk` (what differs, found by stat alone, for a periodic check). These
passes, and the start-up pass, put what they find on the record (see `outside`).

An index SQLite reports damaged is rebuilt from the files and the operation run again
(see `heal`); a write has changed no file before its commit point (see `journal`).
"""

from __future__ import annotations

import gc
import logging
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from lore_mcp.config import MAX_FILE_BYTES, MERGE_AFTER_PAGES
from lore_mcp.errors import FileVanishedError, VaultError
from lore_mcp.index import Patience, is_damage, repair
from lore_mcp.models import SyncReport
from lore_mcp.vault_ops import apply, heal, recovery, sync
from lore_mcp.vault_ops.core import AppState, open_index
from lore_mcp.vault_ops.files import ignored, scan_files
from lore_mcp.vault_ops.ignore import is_ignore_file
from lore_mcp.vault_ops.paths import shown

log = logging.getLogger(__name__)


def open_vault(
    root: Path | str,
    *,
    scan: bool = True,
    read_only: bool = False,
    progress: sync.Progress | None = None,
    readers: int = 0,
) -> AppState:
    """Open a vault: its index (rebuilt if missing, outdated or damaged) and, unless
    `scan` is false, an incremental index pass (see `index_vault`). With `scan` false
    that is left to `index_vault`, which a server runs in the background; operations
    wait for it. `readers` worker processes read the pages of a pass over many files
    (the program that asks for them must start from a module guarded by
    `if __name__ == "__main__"`, as multiprocessing requires)."""
    root = Path(root).expanduser()
    if not root.is_dir():
        raise VaultError(f"The vault folder {str(root)!r} does not exist or is not a folder.")
    root = root.resolve()
    vault = AppState(root=root, index=open_index(root), read_only=read_only, readers=readers)
    if scan:
        try:
            index_vault(vault, progress)
        except BaseException:
            vault.close()
            raise
    return vault


def index_vault(
    vault: AppState, progress: sync.Progress | None = None, patience: Patience | None = None
) -> SyncReport:
    """Bring the index up to date with the files (only changed files are parsed), then
    let operations run. While another process writes the index, the pass waits as long
    as `patience` says (by default the index's busy timeout; a server waits until it
    stops), then fails with `VaultBusyError`. An index found damaged on the way is
    emptied and the pass made again (see `heal`)."""
    try:
        report = heal.run(vault, lambda: _index_pass(vault, progress, patience), refill=False)
    finally:
        vault.ready.set()
    log.info(
        "indexed %s: %d pages, %d placeholders, %d links (%d new, %d changed, %d removed) in %.2fs",
        vault.root,
        report.pages,
        report.placeholders,
        report.links,
        report.added,
        report.updated,
        report.removed,
        report.seconds,
    )
    return report


def _index_pass(
    vault: AppState, progress: sync.Progress | None, patience: Patience | None
) -> SyncReport:
    # The commit leaves the pages in the log; the checkpoint after copies them.
    with (
        vault.lock,
        vault.index.no_checkpoint(),
        vault.index.write(patience),
        _no_cycle_collection(),
    ):
        apply.load(vault)
        # The pass below takes in what a write cut short left, finished now (not with
        # --read-only: that is reported, and finished by the next writable start).
        finished = recovery.recover(vault.root, read_only=vault.read_only)
        # Half a write of lore's own is no change made outside: not on the record.
        unfinished = vault.read_only and recovery.pending(vault.root) is not None
        report = sync.sync(vault, progress=progress, outside=not unfinished, ours=finished)
        _merge_if_many(vault, report)
    vault.index.upkeep_soon(after_pass=True)
    return report


def _merge_if_many(vault: AppState, report: SyncReport) -> None:
    """After a pass that wrote many pages, in its transaction: have the search index's
    segments merged (see `index.upkeep`)."""
    if report.added + report.updated + report.removed >= MERGE_AFTER_PAGES:
        vault.index.merge_later()


@contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Hold Python's cycle collector off during a pass over the whole vault: it makes
    millions of objects and hardly any cycles, and collections would walk them all.
    What the pass leaves (the graph, the name tables) lives as long as the vault, so it
    is frozen: later collections skip it instead of pausing the next call to walk it."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


@heal.heals
def apply_external_changes(vault: AppState, rel_paths: Iterable[str]) -> SyncReport:
    """Apply edits made outside the server to the given files or folders (as the file
    system names them, or as page paths: see `paths.shown`), recording them as made
    outside (see `outside`). Idempotent: files whose size, time and content are
    unchanged cost a stat, at most a hash. A change to an ignore file (`.gitignore`,
    `.loreignore`) changes what is part of the vault: it makes a pass over every file.
    Big files are parsed before the write lock is taken, so it is held about as long as
    for a small one (see `sync.Ahead`)."""

    paths = [p.strip("/") for p in rel_paths if p.strip("/")]
    if any(is_ignore_file(p) and not ignored(p.rpartition("/")[0]) for p in paths):
        vault.ignores.forget()
        return resync(vault)
    scope = [
        shown(p)
        for p in paths
        if not ignored(p) and not vault.ignores.ignored(p, not p.lower().endswith(".md"))
    ]
    ahead = sync.parse_ahead(vault.root, scope, vault.others)  # big files: before the lock
    with writing(vault, check_read_only=False):
        return sync.sync(vault, scope=scope, outside=True, ahead=ahead)


@heal.heals
def resync(vault: AppState) -> SyncReport:
    """The pass a start-up makes, over every file (a stat for those unchanged): for
    when file events were lost, or too many came to be worth sorting."""
    with (
        vault.lock,
        vault.index.no_checkpoint(),
        writing(vault, check_read_only=False),
        _no_cycle_collection(),
    ):
        report = sync.sync(vault, outside=True)
        _merge_if_many(vault, report)
    vault.index.upkeep_soon(after_pass=True)
    return report


@heal.heals
def changed_on_disk(vault: AppState) -> list[str]:
    """The page files whose stamp (size, modification time, inode, ctime) is not what
    the index holds, the new ones and the indexed ones that are gone: found by stat
    alone, with no write lock. The pass that takes them in compares the hash of a file
    whose size and mtime are the same (an edit by `cp -p` or `rsync -t`), and stamps it
    anew when its bytes are too. Files the index passes over on purpose (too large) are
    not counted as changed."""
    with reading(vault):
        known = vault.index.pages.stamps()
    found = scan_files(vault.root, warn=False, ignores=vault.ignores)

    changed = [rel for rel in known if rel not in found]
    for rel, stamp in found.items():
        row = known.get(rel)
        if row is not None:
            if stamp.compare(row) != "same":
                changed.append(rel)
        elif stamp.size <= MAX_FILE_BYTES:
            changed.append(rel)
    return sorted(changed)


@contextmanager
def reading(vault: AppState) -> Iterator[None]:
    """Around a read: the first index pass is done, the lock is held, and what other
    processes committed has been taken in."""
    vault.ready.wait()
    with vault.lock:
        apply.refresh(vault)
        try:
            yield
        except FileVanishedError as exc:
            _forget(vault, exc.rel_path)
            raise


@contextmanager
def writing(vault: AppState, check_read_only: bool = True) -> Iterator[None]:
    """Around a write: as `reading`, inside one write transaction of the index, after
    finishing what a write another process left (see `recovery`) and taking in the files
    an earlier write changed whose index update failed. On a failure the transaction
    rolls back, and the graph is loaded again if it changed; a full or unwritable index
    fails as a VaultError that says whether the files changed. An index found damaged
    before the write's commit point has changed no file: `heal` runs the write again."""
    if check_read_only and vault.read_only:
        raise VaultError("The vault is open read-only; it cannot be changed.")
    vault.ready.wait()
    with vault.lock:
        generation = vault.generation
        behind = set(vault.unindexed)
        try:
            with vault.index.write():
                apply.refresh(vault)
                # A write another process left, finished now; or ours, not in the index yet.
                behind |= set(recovery.recover(vault.root, read_only=vault.read_only))
                vault.unindexed |= behind
                if behind:
                    sync.sync(vault, scope=sorted(behind))
                yield
            vault.unindexed.clear()
            vault.index.upkeep_soon(after_pass=False)
        except BaseException as exc:
            if vault.generation != generation:  # the graph holds what the index rolled back
                vault.stale = True
            if isinstance(exc, FileVanishedError):
                _forget(vault, exc.rel_path)
            changed = sorted(vault.unindexed - behind)
            damaged = is_damage(exc)
            if changed and damaged and not vault.index.in_transaction:
                # Made and recorded (running it again would repeat it), and the files are
                # the truth: rebuild the index from them, and the write has its answer.
                log.warning("the index of %s turned out damaged (%s)", vault.root, exc)
                try:
                    heal.rebuild(vault, vault.index.heals)
                except Exception as again:
                    raise _not_indexed(again, changed, damaged=True) from exc
                vault.unindexed.clear()
                return

            if isinstance(exc, sqlite3.Error) and repair.primary(exc) in _DISK_TROUBLE:
                raise _not_indexed(exc, changed) from exc
            raise


def _forget(vault: AppState, rel: str) -> None:
    """Take a file that vanished out of the index; where the index cannot be written
    (a full disk), the next write does it."""
    try:
        sync.forget(vault, rel)
    except sqlite3.Error as exc:
        if repair.primary(exc) not in _DISK_TROUBLE:
            raise
        vault.stale = True
        vault.unindexed.add(rel)
        log.warning("could not take %s out of the index: %s", rel, exc)


# SQLite's verdicts on a disk that is full, failing or not writable.
_DISK_TROUBLE = (
    sqlite3.SQLITE_FULL,
    sqlite3.SQLITE_IOERR,
    sqlite3.SQLITE_READONLY,
    sqlite3.SQLITE_CANTOPEN,
    sqlite3.SQLITE_PERM,
)


def _not_indexed(exc: BaseException, changed: list[str], damaged: bool = False) -> VaultError:
    """What a write whose index update failed tells: nothing changed, or which files
    did (the next write, the watcher or the next start takes them in)."""
    if damaged:
        return VaultError(
            f"The change was made and recorded in the audit log ({', '.join(changed)}), but "
            f"the index turned out damaged ({exc}); it is rebuilt from the files at the next "
            "call, which then shows the change. Do not repeat the change."
        )
    if not changed:
        return VaultError(
            f"The index could not be updated ({exc}); nothing was changed. Free some disk "
            "space where the vault keeps its index (.lore/cache/) and try again."
        )
    return VaultError(
        f"The change was made and recorded in the audit log ({', '.join(changed)}), but "
        f"the index could not be updated ({exc}). Reads and searches may not show it until "
        "it is taken in: by the next write, the file watcher, or the next start. Do not "
        "repeat the change; free some disk space where the vault keeps its index."
    )
