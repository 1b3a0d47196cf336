"""The index heals itself: when SQLite reports it damaged (corrupt, cut short, not a
database) at any call, it is rebuilt from the files and the call runs once more, so the
caller gets its answer instead of an error.

`run` is the whole rule and `heals` puts it around an engine operation: every public
operation has it (see the package), so the tools, the `lore` commands and the watcher
heal alike. The rebuild is the coordinated one of `index.repair`: one process at a time,
in place, never taking the file away from the processes that have it open; the new
epoch tells them to load everything afresh.

A write may find the damage after it has changed page files (the index is written
after the file). Such a write puts the files back as they were (`put_back`, called by
`open.writing`) before the index is rebuilt, so that running it again does it whole:
an append is appended once, and `expected_hash` still matches.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable
from typing import Concatenate, ParamSpec, TypeVar

from lore_mcp.errors import VaultError
from lore_mcp.index import is_damage
from lore_mcp.vault_ops import apply, history, sync
from lore_mcp.vault_ops.core import AppState
from lore_mcp.vault_ops.files import atomic_write, fsync_dir

log = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")


def heals(
    operation: Callable[Concatenate[AppState, P], T],
) -> Callable[Concatenate[AppState, P], T]:
    """`operation`, healing a damaged index and running once more (see `run`)."""

    @functools.wraps(operation)
    def healing(vault: AppState, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return run(vault, lambda: operation(vault, *args, **kwargs))

    return healing


def run(vault: AppState, attempt: Callable[[], T], refill: bool = True) -> T:
    """Call `attempt`; if SQLite reports the index damaged, rebuild it from the files
    (`refill` false: leave that to the attempt, an index pass) and call it once more. A
    call made inside another's transaction leaves the healing to the outer one."""
    heals = vault.index.heals
    try:
        return attempt()
    except Exception as exc:
        if not is_damage(exc) or vault.index.in_transaction:
            raise
        log.warning("the index of %s turned out damaged (%s)", vault.root, exc)
    rebuild(vault, heals, refill)
    try:
        return attempt()
    except Exception as exc:
        if not is_damage(exc):
            raise
        raise VaultError(
            "The vault's index was found damaged and rebuilt from the files, but it failed "
            "again at once; nothing was changed. Try again; if it keeps failing, run "
            "`lore doctor` on the vault."
        ) from exc


def rebuild(vault: AppState, heals: int, refill: bool = True) -> None:
    """Replace the damaged index (unless another thread did since it was `heals`) and
    bring it up to date with the files, under the vault's lock; the graph and slug sets
    are loaded afresh."""
    with vault.lock:
        if vault.index.heals == heals:
            vault.index.heal()
        vault.stale = True
        if refill:
            with vault.index.write():
                apply.load(vault)
                report = sync.sync(vault)
            log.info("rebuilt the index of %s: %d pages", vault.root, report.pages)


def put_back(vault: AppState) -> None:
    """Put the page files the write in progress changed back as they were, and drop
    the versions it kept; raises `VaultError` naming the files it could not."""
    undo = vault.undo
    failed: list[str] = []
    # Files that were not there go first: a move whose names differ only in case may
    # be one file on this disk.
    for rel, data in sorted(undo.files.items(), key=lambda item: item[1] is not None):
        path = vault.root / rel
        try:
            if data is None:
                path.unlink(missing_ok=True)
                fsync_dir(path.parent)
            else:
                atomic_write(path, data)
                if rel in undo.times:  # as it was, to whoever sorts by time
                    os.utime(path, ns=(undo.times[rel], undo.times[rel]))
        except (OSError, VaultError) as exc:
            log.error("could not put %s back as it was: %s", rel, exc)
            failed.append(rel)
    for kept in undo.kept:
        history.discard(vault.root, kept)
    undo.clear()
    if failed:
        raise VaultError(
            f"The vault's index turned out damaged during this write, and {', '.join(failed)} "
            "could not be put back as they were: they hold what the write made. The index "
            "is rebuilt from the files at the next call; read the pages to check them."
        )
