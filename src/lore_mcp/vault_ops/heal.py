"""The index heals itself: when SQLite reports it damaged (corrupt, cut short, not a
database) at any call, it is rebuilt from the files and the call runs once more, so the
caller gets its answer instead of an error.

`run` is the whole rule and `heals` puts it around an engine operation: every public
operation has it (see the package), so the tools, the `lore` commands and the watcher
heal alike. The rebuild is the coordinated one of `index.repair`: one process at a time,
in place, never taking the file away from the processes that have it open; the new
epoch tells them to load everything afresh.

A write changes no page file before its commit point (see `journal`): damage found
on the way leaves the files as they were, so running it again does it whole (an append
is appended once, and `expected_hash` still matches). Damage found after the commit
point is not run again: the write says it was made (see `open.writing`), and the next
call heals the index.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Concatenate, ParamSpec, TypeVar

from lore_mcp.errors import VaultError
from lore_mcp.index import is_damage
from lore_mcp.vault_ops import apply, sync
from lore_mcp.vault_ops.core import AppState

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
