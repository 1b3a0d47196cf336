"""The `AppState`: everything one process knows about one vault, built once when it opens."""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import platformdirs

from lore_mcp.config import CACHE_DIR, DB_NAME, LORE_DIR, MAX_CONTENT_BYTES
from lore_mcp.errors import VaultError
from lore_mcp.graph import LinkGraph
from lore_mcp.index import Index, last_page_count
from lore_mcp.pagesets import Aliases, PageSet, PlaceholderSet
from lore_mcp.slugs import slug_from_path
from lore_mcp.vault_ops.ignore import Ignores
from lore_mcp.vault_ops.pagefile import OtherFiles, content_hash

log = logging.getLogger(__name__)


class Stoppable(Protocol):
    """The file watcher, as the vault sees it."""

    def stop(self) -> None: ...


@dataclass(eq=False)
class AppState:
    """The vault root, its index, the link graph, the sets of pages (by path) and
    placeholders (by key) links resolve against, and one lock. `ready` is set once the
    first index pass has finished; every operation waits for it."""

    root: Path
    index: Index
    graph: LinkGraph = field(default_factory=LinkGraph)
    pages: PageSet = field(default_factory=PageSet)
    placeholders: PlaceholderSet = field(default_factory=PlaceholderSet)
    aliases: Aliases = field(default_factory=Aliases)
    others: OtherFiles = field(default_factory=OtherFiles)  # files that are not pages
    lock: threading.RLock = field(default_factory=threading.RLock)
    ready: threading.Event = field(default_factory=threading.Event)
    closed: threading.Event = field(default_factory=threading.Event)
    watcher: Stoppable | None = None
    read_only: bool = False
    readers: int = 0  # worker processes that read and parse pages in a pass over many files
    max_content_bytes: int = MAX_CONTENT_BYTES
    data_version: int = 0  # the index's, when this process last took in other commits
    generation: int = 0  # counts changes to the graph and slug sets
    stale: bool = False  # the graph and slug sets must be loaded again from the index
    # Page files that changed (by a write, or vanished) and are not in the index yet: its
    # commit is still to come, or it failed (a full disk); the next write takes them in.
    unindexed: set[str] = field(default_factory=set)
    indexed: tuple[int, int] = (0, 0)  # files read so far by the first pass, of how many
    ignores: Ignores = field(init=False)  # what the vault's ignore files leave out

    def __post_init__(self) -> None:
        self.ignores = Ignores(self.root)

    def handle(self, key: str) -> str:
        """The name tools show for a page or placeholder (see `PageSet.handle`); for
        one that is gone, its slug."""
        if key in self.placeholders:
            return self.placeholders.handle(key, self.pages)
        if key in self.pages:
            return self.pages.handle(key)
        return slug_from_path(key) or key

    def handles(self, keys: list[str]) -> list[str]:
        return [self.handle(key) for key in keys]

    def in_step(self) -> bool:
        """Whether what this process holds in memory is what the index holds: nothing
        to load again, nothing another process committed since it last looked. False
        when the index cannot tell (an operation then meets and heals what is wrong)."""
        try:
            return not self.stale and self.index.data_version() == self.data_version
        except sqlite3.Error:
            return False

    def close(self) -> None:
        """Stop the watcher and close the index."""
        if self.watcher is not None:
            self.watcher.stop()
            self.watcher = None
        with self.lock:
            self.index.close()
        self.closed.set()


def last_index_count(root: Path) -> int | None:
    """The vault's page count at its last index, from the index file alone (without
    opening the vault); None when it has no index yet, or one of another version."""
    root = root.expanduser().resolve()
    for path in (root / LORE_DIR / CACHE_DIR / DB_NAME, _fallback_cache(root) / DB_NAME):
        if (count := last_page_count(path)) is not None:
            return count
    return None


def _fallback_cache(root: Path) -> Path:
    """Where a vault that cannot hold its index keeps it: in the user's cache folder."""
    return Path(platformdirs.user_cache_dir("lore-mcp")) / content_hash(os.fsencode(root))


def open_index(root: Path) -> Index:
    """The index in `<vault>/.lore/cache/`; when the vault cannot hold it (no write
    permission, a read-only mount), in the user's cache folder instead, so reads still
    work."""
    lore = root / LORE_DIR
    problem = "the folder is not writable"
    if os.access(lore if lore.is_dir() else root, os.W_OK):
        for suffix in ("", "-wal", "-shm"):  # where versions before 0.2 kept the index
            (lore / f"{DB_NAME}{suffix}").unlink(missing_ok=True)
        try:
            return Index(lore / CACHE_DIR / DB_NAME)
        except OSError as exc:
            problem = exc.strerror or str(exc)
        except sqlite3.OperationalError as exc:  # e.g. a folder where the file should be
            if exc.sqlite_errorcode != sqlite3.SQLITE_CANTOPEN:
                raise
            problem = str(exc)
    cache = _fallback_cache(root)
    log.warning("cannot keep the index in %s (%s); keeping it in %s", lore, problem, cache)
    try:
        return Index(cache / DB_NAME)
    except OSError as exc:
        raise VaultError(
            f"Cannot create the index in {lore} ({problem}) nor in {cache} "
            f"({exc.strerror or exc}). Make one of them writable."
        ) from exc
