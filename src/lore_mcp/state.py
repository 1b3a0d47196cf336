"""`AppState`: everything one process knows about one vault, built once at start-up."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from lore_mcp.graph import LinkGraph
from lore_mcp.index import Index
from lore_mcp.slugs import SlugIndex

LORE_DIR = ".lore"
DB_NAME = "lore.db"
MAX_CONTENT_BYTES = 1024 * 1024
MAX_RESULT_CHARS = 40_000


class Stoppable(Protocol):
    """The file watcher, as the state sees it."""

    def stop(self) -> None: ...


@dataclass(eq=False)
class AppState:
    """The vault root, its index connection, the link graph, the watcher slot, one lock.

    `pages` and `placeholders` are the slug sets resolution runs against; they mirror
    the graph's nodes. `ready` is set once the first index pass has finished; every
    operation waits for it.
    """

    root: Path
    index: Index
    graph: LinkGraph = field(default_factory=LinkGraph)
    pages: SlugIndex = field(default_factory=SlugIndex)
    placeholders: SlugIndex = field(default_factory=SlugIndex)
    lock: threading.RLock = field(default_factory=threading.RLock)
    ready: threading.Event = field(default_factory=threading.Event)
    observer: Stoppable | None = None
    read_only: bool = False
    max_content_bytes: int = MAX_CONTENT_BYTES
    max_result_chars: int = MAX_RESULT_CHARS
    data_version: int = 0
    generation: int = 0  # counts in-memory changes made by `indexing.apply`
    needs_load: bool = False  # the graph and slug sets must be rebuilt from the index

    @property
    def lore_dir(self) -> Path:
        return self.root / LORE_DIR

    def close(self) -> None:
        """Stop the watcher and close the index."""
        if self.observer is not None:
            self.observer.stop()
            self.observer = None
        with self.lock:
            self.index.close()
