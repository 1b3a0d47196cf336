"""The link graph as a whole, for drawing and for other tools: every node with its
title, kind and link counts, and every edge, of the vault or of one page's
neighbourhood. A large vault can be cut to its most linked nodes.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from lore_mcp.errors import InvalidArgumentError
from lore_mcp.vault_ops import names
from lore_mcp.vault_ops.core import AppState
from lore_mcp.vault_ops.open import reading


@dataclass(frozen=True, slots=True)
class ExportNode:
    """A page or placeholder: `slug` is the name tools show for it."""

    slug: str
    title: str
    is_placeholder: bool
    links_in: int
    links_out: int
    depth: int | None = None  # hops from the centre of a neighbourhood

    @property
    def unreferenced(self) -> bool:
        """A page nothing links to."""
        return not self.is_placeholder and self.links_in == 0


@dataclass(frozen=True, slots=True)
class ExportGraph:
    """Nodes and directed edges (`source` links to `target`); `node_count` and
    `edge_count` are of the whole graph asked for, before any cut to `max_nodes`."""

    nodes: list[ExportNode]
    edges: list[tuple[str, str]]
    node_count: int
    edge_count: int
    center: str | None = None
    depth: int | None = None

    @property
    def cut(self) -> bool:
        return len(self.nodes) < self.node_count


def export_graph(
    vault: AppState, name: str | None = None, depth: int = 1, max_nodes: int | None = None
) -> ExportGraph:
    """The whole vault's graph, or with `name` the neighbourhood of that page to `depth`
    (1-3) hops in either direction. With `max_nodes`, only that many nodes are kept (see
    `_most_linked`)."""
    if not 1 <= depth <= 3:
        raise InvalidArgumentError("depth must be 1, 2 or 3.")
    with reading(vault):
        graph = vault.graph
        center: str | None = None
        edges: Collection[tuple[str, str]]
        if name is None or not name.strip():
            hops: dict[str, int] = {node.key: 0 for node in graph.nodes()}
            edges = graph.edges()
        else:
            center = names.find(vault, name).key
            hops, edges = graph.neighbourhood(center, depth)
        degrees = graph.degrees()
        keys = list(hops)
        if max_nodes is not None and len(keys) > max_nodes:
            keys = _most_linked(keys, degrees, center, max_nodes)
        handles = {key: vault.handle(key) for key in sorted(keys)}
        nodes = []
        for key, handle in handles.items():
            node = graph.node(key)
            nodes.append(
                ExportNode(
                    slug=handle,
                    title=node.title if node else key,
                    is_placeholder=bool(node and node.is_placeholder),
                    links_in=degrees[key][0],
                    links_out=degrees[key][1],
                    depth=None if center is None else hops[key],
                )
            )
        kept = sorted((a, b) for a, b in edges if a in handles and b in handles)
        return ExportGraph(
            nodes=nodes,
            edges=[(handles[a], handles[b]) for a, b in kept],
            node_count=len(hops),
            edge_count=len(edges),
            center=None if center is None else vault.handle(center),
            depth=None if center is None else depth,
        )


def _most_linked(
    keys: list[str], degrees: dict[str, tuple[int, int]], center: str | None, count: int
) -> list[str]:
    """`count` of `keys`: the centre, then those with the most links in and out (ties by
    name), except that up to a tenth of the room goes to pages nothing links to (those
    linking out most first), which a cut by links alone would never show."""

    def rank(key: str) -> tuple[bool, int, str]:
        return key != center, -sum(degrees[key]), key

    unlinked = sorted((k for k in keys if degrees[k][0] == 0 and k != center), key=rank)
    reserved = unlinked[: count // 10]
    taken = set(reserved)
    rest = sorted((k for k in keys if k not in taken), key=rank)
    return rest[: count - len(reserved)] + reserved
