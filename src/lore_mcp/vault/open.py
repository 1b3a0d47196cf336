"""Opening a vault, and the rules every operation follows to use it.

Each operation waits until the first index pass is done, takes the vault's lock, takes
in what other processes committed, and does its work. Writes hold the index's write
lock for the whole operation, so two processes never interleave their changes.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from lore_mcp.errors import FileVanishedError, VaultError
from lore_mcp.models import SyncReport
from lore_mcp.vault import journal, sync
from lore_mcp.vault.core import Vault, open_index
from lore_mcp.vault.files import ignored

log = logging.getLogger(__name__)


def open_vault(
    root: Path | str,
    *,
    scan: bool = True,
    read_only: bool = False,
    progress: sync.Progress | None = None,
    readers: int = 0,
) -> Vault:
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
    vault = Vault(root=root, index=open_index(root), read_only=read_only, readers=readers)
    if scan:
        index_vault(vault, progress)
    return vault


def index_vault(vault: Vault, progress: sync.Progress | None = None) -> SyncReport:
    """Bring the index up to date with the files (only changed files are parsed), then
    let operations run."""
    try:
        with vault.lock, vault.index.write(), _no_cycle_collection():
            sync.load(vault)
            journal.recover(vault.root)  # the pass below takes in what it finishes
            report = sync.sync(vault, progress=progress)
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


def apply_external_changes(vault: Vault, rel_paths: Iterable[str]) -> SyncReport:
    """Apply edits made outside the server to the given files or folders. Idempotent:
    files whose size, time and content are unchanged cost a stat, at most a hash."""
    scope = [p.strip("/") for p in rel_paths if p.strip("/") and not ignored(p)]
    with writing(vault, check_read_only=False):
        return sync.sync(vault, scope=scope)


@contextmanager
def reading(vault: Vault) -> Iterator[None]:
    """Around a read: the first index pass is done, the lock is held, and what other
    processes committed has been taken in."""
    vault.ready.wait()
    with vault.lock:
        sync.refresh(vault)
        try:
            yield
        except FileVanishedError as exc:
            sync.forget(vault, exc.rel_path)
            raise


@contextmanager
def writing(vault: Vault, check_read_only: bool = True) -> Iterator[None]:
    """Around a write: as `reading`, inside one write transaction of the index. On a
    failure the transaction rolls back, and the graph is loaded again if it changed."""
    if check_read_only and vault.read_only:
        raise VaultError("The vault is open read-only; it cannot be changed.")
    vault.ready.wait()
    with vault.lock:
        generation = vault.generation
        try:
            with vault.index.write():
                sync.refresh(vault)
                if touched := journal.recover(vault.root):  # a rename another process left
                    sync.sync(vault, scope=touched)
                yield
        except BaseException as exc:
            if vault.generation != generation:  # the graph holds what the index rolled back
                vault.stale = True
            if isinstance(exc, FileVanishedError):
                sync.forget(vault, exc.rel_path)
            raise
