"""What the UI's pages are made of, read through the engine: a page with its rendered
body, properties, links and kept versions; an attachment's file; the graph as the
drawing script takes it."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lore_mcp import frontmatter
from lore_mcp import vault_ops as engine
from lore_mcp.config import LORE_DIR
from lore_mcp.errors import LoreError
from lore_mcp.links import ATTACHMENTS
from lore_mcp.models import PageVersion, PageView
from lore_mcp.ui import markup
from lore_mcp.vault_ops.ignore import Ignores

MAX_GRAPH_NODES = 2000  # the whole-vault drawing keeps the most linked pages beyond this
FILES_TTL_SECONDS = 30.0  # how long the list of attachment files is trusted
PLACEHOLDER, UNREFERENCED, CENTER = 1, 2, 4


@dataclass
class Attachments:
    """The vault's attachment files by lowercased name, to find `![[pic.png]]` wherever
    it is; listed at most every `FILES_TTL_SECONDS`. What the vault's ignore files leave
    out is not shown, as it is not part of the vault."""

    root: Path
    ignores: Ignores
    _by_name: dict[str, str] = field(default_factory=dict)
    _listed: float = float("-inf")
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def find(self, folder: str, target: str) -> str | None:
        target = target.replace("\\", "/").lstrip("/")
        for rel in (f"{folder}/{target}" if folder else target, target):
            if self.allowed(rel):
                return rel
        with self._lock:
            if time.monotonic() - self._listed > FILES_TTL_SECONDS:
                self._by_name = self._list()
                self._listed = time.monotonic()
            return self._by_name.get(target.rpartition("/")[2].lower())

    def _list(self) -> dict[str, str]:
        found: dict[str, str] = {}
        for top, dirs, files in os.walk(self.root):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(files):
                rel = os.path.relpath(os.path.join(top, name), self.root).replace(os.sep, "/")
                if _attachment_name(name) and not self.ignores.ignored(rel):
                    found.setdefault(name.lower(), rel)
        return found

    def allowed(self, rel: str) -> bool:
        """Whether `rel` is an attachment file inside the vault (no dot-folder, no
        symlink out)."""
        parts = rel.split("/")
        if not _attachment_name(parts[-1]) or any(p in ("", ".", "..") for p in parts):
            return False
        if any(p.startswith(".") for p in parts) or parts[0] == LORE_DIR:
            return False
        if self.ignores.ignored(rel):
            return False
        path = self.root / rel
        try:
            inside = path.resolve().is_relative_to(self.root.resolve())
        except OSError:
            return False
        return inside and path.is_file()


def _attachment_name(name: str) -> bool:
    return "." in name and name.rpartition(".")[2].lower() in ATTACHMENTS


@dataclass(frozen=True, slots=True)
class Page:
    view: PageView
    html: str
    versions: list[PageVersion]


def page(vault: engine.AppState, name: str, files: Attachments) -> Page:
    """The page a read of `name` finds, rendered."""
    view, data = engine.read_source(vault, name)
    text = "" if data is None else data.decode("utf-8", "replace").removeprefix("\ufeff")
    body = text[frontmatter.extent(text) :]
    ctx = markup.context(view.path, view.links, files.find)
    versions: list[PageVersion] = []
    if view.path is not None:
        try:
            versions = engine.page_history(vault, "/" + view.path).versions
        except LoreError:
            versions = []
    return Page(view, markup.render(body, ctx), versions)


def graph_data(vault: engine.AppState, name: str | None, depth: int) -> dict[str, Any]:
    """The graph for the drawing script: nodes as `[slug, title, flags, degree]`, edges
    as pairs of node indexes; the whole vault is cut to its `MAX_GRAPH_NODES` most
    linked nodes."""
    exported = engine.export_graph(vault, name, depth, max_nodes=MAX_GRAPH_NODES)
    index = {node.slug: i for i, node in enumerate(exported.nodes)}
    nodes = [
        [
            node.slug,
            node.title,
            (PLACEHOLDER if node.is_placeholder else 0)
            | (UNREFERENCED if node.unreferenced else 0)
            | (CENTER if node.slug == exported.center else 0),
            node.links_in + node.links_out,
        ]
        for node in exported.nodes
    ]
    return {
        "center": exported.center,
        "depth": exported.depth,
        "node_count": exported.node_count,
        "edge_count": exported.edge_count,
        "nodes": nodes,
        "edges": [[index[a], index[b]] for a, b in exported.edges],
    }
