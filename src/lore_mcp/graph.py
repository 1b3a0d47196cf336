"""The link graph: a networkx `DiGraph` behind small functions that speak slugs.

Nodes are pages and placeholders; an edge `a → b` means page `a` links to `b` at least
once. Titles and the placeholder flag live beside the graph rather than in per-node
attribute dicts, edges carry no attributes (they all share one empty dict), and slugs
are interned, so a node's name is stored once however many edges touch it.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import operator
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx

EXACT, PREFIX, SUBSTRING = 0, 1, 2  # how a name matched, best first


class TitleIndex:
    """Every node's slug and lowercased title, for search_titles: the best few matches
    for a name without looking at every node.

    Entries sort by slug, so an entry's position is its place in the results among
    matches of the same kind. Slugs, their last segments and titles are each kept
    sorted with their positions (exact and prefix matches by bisection), and slugs and
    titles each joined into one string (substrings at the speed of `str.find`)."""

    def __init__(self, entries: Iterable[tuple[str, str]]) -> None:
        self.entries = tuple(sorted(entries))
        slugs = [slug for slug, _ in self.entries]
        titles = [title for _, title in self.entries]
        self._slugs = _Sorted(slugs, already=True)
        self._lasts = _Sorted([slug.rpartition("/")[2] for slug in slugs])
        self._titles = _Sorted(titles)
        self._slug_text = _Column(slugs)
        self._title_text = _Column(titles)

    def ranked(self, wanted: str, text: str, limit: int) -> list[tuple[str, int]]:
        """The first `limit` entries matching a name, as (slug, kind): `wanted` (the name
        as a slug) is the slug or its last segment (EXACT), or starts one (PREFIX), or
        is in the slug (SUBSTRING); `text` (the name lowercased) likewise against the
        title. The best kind first, then by slug."""
        kinds: dict[int, int] = {}
        exact = (self._slugs.equal(wanted), self._lasts.equal(wanted), self._titles.equal(text))
        for positions in exact:
            kinds.update(dict.fromkeys(positions, EXACT))
        # A prefix match that makes the results follows fewer than `limit` others in
        # its group, so the first `limit` of each group are enough.
        prefixes = (
            self._slugs.starting(wanted)[:limit],  # already in slug order
            heapq.nsmallest(limit, self._lasts.starting(wanted)),
            heapq.nsmallest(limit, self._titles.starting(text)),
        )
        for positions in prefixes:
            for position in positions:
                kinds.setdefault(position, PREFIX)
        best = sorted(kinds, key=lambda position: (kinds[position], position))[:limit]
        if len(best) < limit:  # every exact and prefix match is in: add substrings
            hits = heapq.merge(self._slug_text.holding(wanted), self._title_text.holding(text))
            for position in hits:
                if position not in kinds:
                    kinds[position] = SUBSTRING
                    best.append(position)
                    if len(best) == limit:
                        break
        return [(self.entries[position][0], kinds[position]) for position in best]


class _Sorted:
    """Strings in sorted order, each with the position of the entry it came from."""

    def __init__(self, values: list[str], *, already: bool = False) -> None:
        self.positions: Sequence[int]
        if already:
            self.keys, self.positions = values, range(len(values))
        else:
            order = sorted(range(len(values)), key=values.__getitem__)
            self.keys, self.positions = [values[i] for i in order], order

    def equal(self, key: str) -> Sequence[int]:
        return self.positions[
            bisect.bisect_left(self.keys, key) : bisect.bisect_right(self.keys, key)
        ]

    def starting(self, prefix: str) -> Sequence[int]:
        """The positions of the strings that start with `prefix` (a run of the sorted keys)."""
        low = bisect.bisect_left(self.keys, prefix)
        high = bisect.bisect_left(self.keys, True, low, key=lambda key: not key.startswith(prefix))
        return self.positions[low:high]


class _Column:
    """Strings joined by NUL into one, and where each starts."""

    def __init__(self, values: list[str]) -> None:
        self.values = values
        self.text = "\0".join(values) + "\0"
        # Where value i starts: the lengths before it, plus one NUL after each (in C).
        lengths = itertools.accumulate(map(len, values[:-1]), initial=0)
        self.starts = list(map(operator.add, lengths, itertools.count()))

    def holding(self, part: str) -> Iterator[int]:
        """The positions of the strings that hold `part`, in order."""
        if not part or not self.values:
            return
        if "\0" in part:  # in the joined text it would match across strings: look one by one
            yield from (i for i, value in enumerate(self.values) if part in value)
            return
        at = self.text.find(part)
        while at >= 0:
            entry = bisect.bisect_right(self.starts, at) - 1
            yield entry
            following = entry + 1
            if following >= len(self.starts):
                return
            at = self.text.find(part, self.starts[following])


@dataclass(frozen=True, slots=True)
class Node:
    slug: str
    title: str
    is_placeholder: bool


class _NoData(dict[str, Any]):
    """The one attribute dict every node and edge shares: empty, and loud if anything
    tries to write to it (which would write to every node and edge at once)."""

    def __setitem__(self, key: str, value: Any) -> None:
        raise TypeError("the link graph keeps no node or edge attributes")

    def update(self, *args: Any, **kwargs: Any) -> None:
        if any(args) or kwargs:  # networkx calls update({}) when adding a bare node or edge
            raise TypeError("the link graph keeps no node or edge attributes")

    def setdefault(self, key: str, default: Any = None) -> Any:
        raise TypeError("the link graph keeps no node or edge attributes")


_NO_DATA = _NoData()


class _ThinDiGraph(nx.DiGraph):  # type: ignore[type-arg]
    """A DiGraph whose nodes and edges all share one empty attribute dict (networkx's
    documented `edge_attr_dict_factory` hook) instead of holding one dict each."""

    def _shared_dict(self) -> dict[str, Any]:
        return _NO_DATA

    node_attr_dict_factory = _shared_dict
    edge_attr_dict_factory = _shared_dict


def _interned(edges: Iterable[tuple[str, str]]) -> Iterator[tuple[str, str]]:
    for source, target in edges:
        yield sys.intern(source), sys.intern(target)


class LinkGraph:
    """The vault's pages and the links between them, in memory."""

    def __init__(self) -> None:
        self._g: nx.DiGraph[str] = _ThinDiGraph()
        self._titles: dict[str, str] = {}
        self._placeholders: set[str] = set()
        self._nodes: tuple[Node, ...] | None = None  # built on demand, dropped on change
        self._folded: TitleIndex | None = None

    def clear(self) -> None:
        self._g.clear()
        self._titles.clear()
        self._placeholders.clear()
        self._nodes = self._folded = None

    def set_node(self, slug: str, title: str, placeholder: bool) -> None:
        slug = sys.intern(slug)
        self._g.add_node(slug)
        self._titles[slug] = title
        if placeholder:
            self._placeholders.add(slug)
        else:
            self._placeholders.discard(slug)
        self._nodes = self._folded = None

    def remove_node(self, slug: str) -> None:
        if slug in self._g:
            self._g.remove_node(slug)
            self._titles.pop(slug, None)
            self._placeholders.discard(slug)
            self._nodes = self._folded = None

    def __contains__(self, slug: object) -> bool:
        return slug in self._g

    def __len__(self) -> int:
        return int(self._g.number_of_nodes())

    def node(self, slug: str) -> Node | None:
        if slug not in self._g:
            return None
        return Node(slug, self._titles.get(slug, slug), slug in self._placeholders)

    def nodes(self) -> tuple[Node, ...]:
        """Every page and placeholder (kept between calls until the nodes change)."""
        if self._nodes is None:
            titles, placeholders = self._titles, self._placeholders
            self._nodes = tuple(
                Node(slug, titles.get(slug, slug), slug in placeholders) for slug in self._g
            )
        return self._nodes

    def folded_titles(self) -> TitleIndex:
        """Every node's slug and lowercased title, for title lookups."""
        if self._folded is None:
            titles = self._titles
            self._folded = TitleIndex((slug, titles.get(slug, slug).lower()) for slug in self._g)
        return self._folded

    def replace_out_edges(self, sources: Iterable[str], edges: Iterable[tuple[str, str]]) -> None:
        """Drop every edge leaving `sources`, then add `edges` (which leave them)."""
        old = [
            (source, target)
            for source in sources
            if source in self._g
            for target in self._g.successors(source)
        ]
        self._g.remove_edges_from(old)
        self._g.add_edges_from(_interned(edges))

    def add_edges(self, edges: Iterable[tuple[str, str]]) -> None:
        """Add edges (a pair given twice is one edge)."""
        self._g.add_edges_from(_interned(edges))

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
            for slug in self._g
            if slug not in self._placeholders
            and not any(t != slug for t in self._g.successors(slug))
            and not any(s != slug for s in self._g.predecessors(slug))
        )

    def most_linked(self, count: int, placeholders: bool) -> list[tuple[str, int]]:
        """Nodes with the most distinct pages linking in, most first, ties by slug."""
        pool = (
            (slug, int(self._g.in_degree(slug)))
            for slug in self._g
            if (slug in self._placeholders) == placeholders
        )
        return heapq.nsmallest(count, (p for p in pool if p[1] > 0), key=lambda p: (-p[1], p[0]))
