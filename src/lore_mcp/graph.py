"""The link graph: a networkx `DiGraph` behind small functions that speak slugs.

Nodes are pages and placeholders, with their title and a placeholder flag; an edge
`a → b` means page `a` links to `b` at least once.
"""

from __future__ import annotations

import heapq
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import chain

import networkx as nx


@dataclass(frozen=True, slots=True)
class Node:
    slug: str
    title: str
    is_placeholder: bool


class LinkGraph:
    """The vault's pages and the links between them, in memory."""

    def __init__(self) -> None:
        self._g: nx.DiGraph[str] = nx.DiGraph()

    def clear(self) -> None:
        self._g.clear()

    def set_node(self, slug: str, title: str, placeholder: bool) -> None:
        self._g.add_node(slug, title=title, placeholder=placeholder)

    def remove_node(self, slug: str) -> None:
        if slug in self._g:
            self._g.remove_node(slug)

    def __contains__(self, slug: object) -> bool:
        return slug in self._g

    def __len__(self) -> int:
        return int(self._g.number_of_nodes())

    def node(self, slug: str) -> Node | None:
        if slug not in self._g:
            return None
        data = self._g.nodes[slug]
        return Node(slug, data.get("title", slug), bool(data.get("placeholder")))

    def title(self, slug: str) -> str:
        return self._g.nodes[slug].get("title", slug) if slug in self._g else slug

    def nodes(self) -> list[Node]:
        """Every page and placeholder."""
        return [
            Node(slug, data.get("title", slug), bool(data.get("placeholder")))
            for slug, data in self._g.nodes(data=True)
        ]

    def replace_out_edges(self, sources: Iterable[str], edges: Iterable[tuple[str, str]]) -> None:
        """Drop every edge leaving `sources`, then add `edges` (which leave them)."""
        old = [(s, t) for s in sources if s in self._g for t in self._g.successors(s)]
        self._g.remove_edges_from(old)
        self.add_edges(edges)

    def add_edges(self, edges: Iterable[tuple[str, str]]) -> None:
        """Add edges (a pair given twice is one edge); nodes they name that are new get
        no title until `set_node` gives one. Slugs are interned: each edge would
        otherwise hold copies of its two slugs."""
        self._g.add_edges_from((sys.intern(a), sys.intern(b)) for a, b in edges)

    def linking_to(self, slug: str) -> list[str]:
        return sorted(self._g.predecessors(slug)) if slug in self._g else []

    def linked_from(self, slug: str) -> list[str]:
        return sorted(self._g.successors(slug)) if slug in self._g else []

    def in_degree(self, slug: str) -> int:
        return int(self._g.in_degree(slug)) if slug in self._g else 0

    def out_degree(self, slug: str) -> int:
        return int(self._g.out_degree(slug)) if slug in self._g else 0

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
            slug
            for slug, placeholder in self._g.nodes(data="placeholder")
            if not placeholder
            and all(other == slug for other in self._g.successors(slug))
            and all(other == slug for other in self._g.predecessors(slug))
        )

    def unreferenced(self) -> list[str]:
        """Real pages no other page links to (a link to itself does not count)."""
        return sorted(
            slug
            for slug, placeholder in self._g.nodes(data="placeholder")
            if not placeholder and all(other == slug for other in self._g.predecessors(slug))
        )

    def most_linked(self, count: int, placeholders: bool) -> list[tuple[str, int]]:
        """Nodes with the most distinct pages linking in, most first, ties by slug."""
        pool = (
            (slug, int(self._g.in_degree(slug)))
            for slug, placeholder in self._g.nodes(data="placeholder")
            if bool(placeholder) == placeholders
        )
        return heapq.nsmallest(count, (p for p in pool if p[1] > 0), key=lambda p: (-p[1], p[0]))
