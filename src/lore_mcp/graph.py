"""The link graph: a networkx `DiGraph` behind small functions that speak keys (a
page's path, a placeholder's link key).

Nodes are pages and placeholders, with their title and a placeholder flag; an edge
`a → b` means page `a` links to `b` at least once.
"""

from __future__ import annotations

import heapq
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING, Any

import networkx as nx

if TYPE_CHECKING:
    _DiGraph = nx.DiGraph[str]
else:
    _DiGraph = nx.DiGraph


class _ThinDiGraph(_DiGraph):
    """A DiGraph whose edges all share one empty attribute dict, as networkx's own
    subclassing example does: edges here hold no data, and a dict for each would be a
    third of the graph's memory (about 30 MB at 100,000 pages)."""

    _no_data: dict[str, Any] = {}  # noqa: RUF012  (shared on purpose, never written)

    def _shared_edge_data(self) -> dict[str, Any]:
        return self._no_data

    edge_attr_dict_factory = _shared_edge_data


@dataclass(frozen=True, slots=True)
class Node:
    key: str
    title: str
    is_placeholder: bool


class LinkGraph:
    """The vault's pages and the links between them, in memory."""

    def __init__(self) -> None:
        self._g: nx.DiGraph[str] = _ThinDiGraph()

    def clear(self) -> None:
        self._g.clear()

    def set_node(self, key: str, title: str, placeholder: bool) -> None:
        self._g.add_node(key, title=title, placeholder=placeholder)

    def remove_node(self, key: str) -> None:
        if key in self._g:
            self._g.remove_node(key)

    def __contains__(self, key: object) -> bool:
        return key in self._g

    def __len__(self) -> int:
        return int(self._g.number_of_nodes())

    def node(self, key: str) -> Node | None:
        if key not in self._g:
            return None
        data = self._g.nodes[key]
        return Node(key, data.get("title", key), bool(data.get("placeholder")))

    def title(self, key: str) -> str:
        return self._g.nodes[key].get("title", key) if key in self._g else key

    def nodes(self) -> list[Node]:
        """Every page and placeholder."""
        return [
            Node(key, data.get("title", key), bool(data.get("placeholder")))
            for key, data in self._g.nodes(data=True)
        ]

    def replace_out_edges(self, sources: Iterable[str], edges: Iterable[tuple[str, str]]) -> None:
        """Drop every edge leaving `sources`, then add `edges` (which leave them)."""
        old = [(s, t) for s in sources if s in self._g for t in self._g.successors(s)]
        self._g.remove_edges_from(old)
        self.add_edges(edges)

    def add_edges(self, edges: Iterable[tuple[str, str]]) -> None:
        """Add edges (a pair given twice is one edge); nodes they name that are new get
        no title until `set_node` gives one. Keys are interned: each edge would
        otherwise hold copies of its two keys."""
        self._g.add_edges_from((sys.intern(a), sys.intern(b)) for a, b in edges)

    def linking_to(self, key: str) -> list[str]:
        return sorted(self._g.predecessors(key)) if key in self._g else []

    def linked_from(self, key: str) -> list[str]:
        return sorted(self._g.successors(key)) if key in self._g else []

    def in_degree(self, key: str) -> int:
        return int(self._g.in_degree(key)) if key in self._g else 0

    def out_degree(self, key: str) -> int:
        return int(self._g.out_degree(key)) if key in self._g else 0

    def degrees(self) -> dict[str, tuple[int, int]]:
        """Every node's links in and out, in one pass."""
        outs = dict(self._g.out_degree())
        return {key: (int(n), int(outs[key])) for key, n in self._g.in_degree()}

    def edge_count(self) -> int:
        return int(self._g.number_of_edges())

    def edges(self) -> set[tuple[str, str]]:
        return set(self._g.edges())

    def neighbourhood(
        self, center: str, depth: int
    ) -> tuple[dict[str, int], list[tuple[str, str]]]:
        """Nodes within `depth` links of `center` in either direction (with their
        distance), and the edges among them: a breadth-first walk over successors and
        predecessors (networkx's undirected views cost more than the walk itself)."""
        seen = {center: 0}
        frontier = [center]
        for hops in range(1, depth + 1):
            reached = []
            for node in frontier:
                for other in chain(self._g.successors(node), self._g.predecessors(node)):
                    if other not in seen:
                        seen[other] = hops
                        reached.append(other)
            frontier = reached
        edges = [(a, b) for a in seen for b in self._g.successors(a) if b in seen]
        return seen, sorted(edges)

    def orphans(self) -> list[str]:
        """Real pages with no links in or out (a link to itself does not count)."""
        return sorted(
            key
            for key, placeholder in self._g.nodes(data="placeholder")
            if not placeholder
            and all(other == key for other in self._g.successors(key))
            and all(other == key for other in self._g.predecessors(key))
        )

    def unreferenced(self) -> list[str]:
        """Real pages no other page links to (a link to itself does not count)."""
        return sorted(
            key
            for key, placeholder in self._g.nodes(data="placeholder")
            if not placeholder and all(other == key for other in self._g.predecessors(key))
        )

    def most_linked(self, count: int, placeholders: bool) -> list[tuple[str, int]]:
        """Nodes with the most distinct pages linking in, most first, ties by key."""
        pool = (
            (key, int(self._g.in_degree(key)))
            for key, placeholder in self._g.nodes(data="placeholder")
            if bool(placeholder) == placeholders
        )
        return heapq.nsmallest(count, (p for p in pool if p[1] > 0), key=lambda p: (-p[1], p[0]))


def graphml(
    nodes: Iterable[tuple[str, dict[str, str | int | bool]]], edges: Iterable[tuple[str, str]]
) -> str:
    """GraphML of a directed graph: nodes by id with their attributes, then edges, as
    networkx writes it (keys declared with their types, so other tools read them back)."""
    g: nx.DiGraph[str] = nx.DiGraph()
    g.add_nodes_from(nodes)
    g.add_edges_from(edges)
    return "\n".join(nx.generate_graphml(g)) + "\n"
