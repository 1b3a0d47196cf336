"""The link graph: a networkx `DiGraph` behind small functions that speak slugs.

Nodes are pages and placeholders (attributes `title`, `placeholder`); an edge `a → b`
means page `a` links to `b` at least once.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass

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
        self._nodes: tuple[Node, ...] | None = None  # built on demand, dropped on change
        self._folded: tuple[tuple[str, str], ...] | None = None

    def clear(self) -> None:
        self._g.clear()
        self._nodes = self._folded = None

    def set_node(self, slug: str, title: str, placeholder: bool) -> None:
        self._g.add_node(slug, title=title, placeholder=placeholder)
        self._nodes = self._folded = None

    def remove_node(self, slug: str) -> None:
        if slug in self._g:
            self._g.remove_node(slug)
            self._nodes = self._folded = None

    def __contains__(self, slug: object) -> bool:
        return slug in self._g

    def __len__(self) -> int:
        return int(self._g.number_of_nodes())

    def node(self, slug: str) -> Node | None:
        if slug not in self._g:
            return None
        data = self._g.nodes[slug]
        return Node(slug, str(data.get("title", slug)), bool(data.get("placeholder", False)))

    def nodes(self) -> tuple[Node, ...]:
        """Every page and placeholder (kept between calls until the nodes change)."""
        if self._nodes is None:
            self._nodes = tuple(
                Node(slug, str(data.get("title", slug)), bool(data.get("placeholder", False)))
                for slug, data in self._g.nodes(data=True)
            )
        return self._nodes

    def folded_titles(self) -> tuple[tuple[str, str], ...]:
        """(slug, lowercased title) of every node, for title lookups."""
        if self._folded is None:
            self._folded = tuple((n.slug, n.title.lower()) for n in self.nodes())
        return self._folded

    def replace_out_edges(self, sources: Iterable[str], edges: Iterable[tuple[str, str]]) -> None:
        """Drop every edge leaving `sources`, then add `edges` (which leave them)."""
        old = [
            edge for source in sources if source in self._g for edge in self._g.out_edges(source)
        ]
        self._g.remove_edges_from(old)
        self._g.add_edges_from(edges)

    def add_edges(self, edges: Iterable[tuple[str, str]]) -> None:
        self._g.add_edges_from(edges)

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
        """Nodes within `depth` hops of `center` in either direction (with their hop
        count), and the edges among them."""
        seen = {center: 0}
        frontier = [center]
        for hop in range(1, depth + 1):
            nxt: list[str] = []
            for slug in frontier:
                for other in (*self._g.successors(slug), *self._g.predecessors(slug)):
                    if other not in seen:
                        seen[other] = hop
                        nxt.append(other)
            frontier = nxt
        edges = sorted(self._g.subgraph(seen).edges())
        return seen, edges

    def orphans(self) -> list[str]:
        """Real pages with no links in or out (a self-link does not count)."""
        return sorted(
            slug
            for slug, data in self._g.nodes(data=True)
            if not data.get("placeholder")
            and not any(t != slug for t in self._g.successors(slug))
            and not any(s != slug for s in self._g.predecessors(slug))
        )

    def most_linked(self, count: int, placeholders: bool) -> list[tuple[str, int]]:
        """Nodes with the most distinct pages linking in, most first, ties by slug."""
        pool = (
            (slug, int(self._g.in_degree(slug)))
            for slug, data in self._g.nodes(data=True)
            if bool(data.get("placeholder")) == placeholders
        )
        return heapq.nsmallest(count, (p for p in pool if p[1] > 0), key=lambda p: (-p[1], p[0]))
