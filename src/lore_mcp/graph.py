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
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import networkx as nx

EXACT, PREFIX, SUBSTRING = 0, 1, 2  # how a name matched, best first
FOLDED_CHANGES_KEPT = 2000  # node changes applied to a built title index before it is dropped


class TitleIndex:
    """Every node's slug and lowercased title, for search_titles: the best few matches
    for a name without looking at every node, kept in step as nodes come and go.

    Slugs, (last segment, slug) pairs and (title, slug) pairs are each kept sorted, so
    exact and prefix matches are runs found by bisection; substrings are found by
    `_Substrings`."""

    def __init__(self, entries: Iterable[tuple[str, str]]) -> None:
        self._title_of = dict(entries)
        self._slugs = sorted(self._title_of)
        self._by_last = _Pairs((_last(slug), slug) for slug in self._slugs)
        self._by_title = _Pairs((title, slug) for slug, title in self._title_of.items())
        self._substrings: _Substrings | None = None  # made on the first substring lookup

    def __len__(self) -> int:
        return len(self._slugs)

    def add(self, slug: str, title: str) -> None:
        """Add a node, or give one its new title."""
        if slug in self._title_of:
            if self._title_of[slug] == title:
                return
            self.remove(slug)
        self._title_of[slug] = title
        bisect.insort(self._slugs, slug)
        self._by_last.add(_last(slug), slug)
        self._by_title.add(title, slug)
        if self._substrings is not None:
            self._substrings.add(slug, title)

    def remove(self, slug: str) -> None:
        title = self._title_of.pop(slug, None)
        if title is None:
            return
        del self._slugs[bisect.bisect_left(self._slugs, slug)]
        self._by_last.remove(_last(slug), slug)
        self._by_title.remove(title, slug)
        if self._substrings is not None:
            self._substrings.remove(slug)

    def starting(self, prefix: str) -> list[str]:
        """The slugs that start with `prefix`, sorted."""
        low = bisect.bisect_left(self._slugs, prefix)
        high = bisect.bisect_left(
            self._slugs, True, low, key=lambda slug: not slug.startswith(prefix)
        )
        return self._slugs[low:high]

    def ranked(self, wanted: str, text: str, limit: int) -> list[tuple[str, int]]:
        """The first `limit` entries matching a name, as (slug, kind): `wanted` (the name
        as a slug) is the slug or its last segment (EXACT), or starts one (PREFIX), or
        is in the slug (SUBSTRING); `text` (the name lowercased) likewise against the
        title. The best kind first, then by slug."""
        exact = [wanted] if wanted in self._title_of else []
        exact += self._by_last.equal(wanted) + self._by_title.equal(text)
        kinds = dict.fromkeys(exact, EXACT)
        # A prefix match that makes the results follows fewer than `limit` others in
        # its group, so the first `limit` of each group (by slug) are enough.
        prefixes = (
            self.starting(wanted)[:limit],
            heapq.nsmallest(limit, self._by_last.starting(wanted)),
            heapq.nsmallest(limit, self._by_title.starting(text)),
        )
        for slugs in prefixes:
            for slug in slugs:
                kinds.setdefault(slug, PREFIX)
        best = sorted(kinds, key=lambda slug: (kinds[slug], slug))[:limit]
        if len(best) < limit:  # every exact and prefix match is in: add substrings
            if self._substrings is None:
                self._substrings = _Substrings(self._title_of)
            for slug in self._substrings.holding(wanted, text):
                if slug not in kinds:
                    kinds[slug] = SUBSTRING
                    best.append(slug)
                    if len(best) == limit:
                        break
        return [(slug, kinds[slug]) for slug in best]


class _Substrings:
    """Which slugs hold a part in the slug or the title, in slug order. Made with every
    slug and every title joined into one string each, searched with `str.find`; what
    changed since then sits beside them and is looked through one by one (the title
    index is made afresh after many changes)."""

    def __init__(self, title_of: dict[str, str]) -> None:
        self._in_order = sorted(title_of)
        self._slugs = _Column(self._in_order)
        self._titles = _Column([title_of[slug] for slug in self._in_order])
        self._changed: set[str] = set()  # slugs gone or retitled since
        self._added: dict[str, str] = {}  # slugs (re)titled since, and their titles

    def add(self, slug: str, title: str) -> None:
        self._changed.add(slug)
        self._added[slug] = title

    def remove(self, slug: str) -> None:
        self._changed.add(slug)
        self._added.pop(slug, None)

    def holding(self, in_slug: str, in_title: str) -> Iterator[str]:
        """Slugs holding `in_slug` or titles holding `in_title`, in slug order (a slug
        may come twice)."""
        found = heapq.merge(self._slugs.holding(in_slug), self._titles.holding(in_title))
        kept = (s for s in map(self._in_order.__getitem__, found) if s not in self._changed)
        added = sorted(
            slug
            for slug, title in self._added.items()
            if (in_slug and in_slug in slug) or (in_title and in_title in title)
        )
        return heapq.merge(kept, added)


class _Pairs:
    """(key, slug) pairs kept sorted: the slugs under one key, or under keys that start
    with a prefix, are a run found by bisection."""

    def __init__(self, pairs: Iterable[tuple[str, str]]) -> None:
        self._pairs = sorted(pairs)

    def add(self, key: str, slug: str) -> None:
        bisect.insort(self._pairs, (key, slug))

    def remove(self, key: str, slug: str) -> None:
        del self._pairs[bisect.bisect_left(self._pairs, (key, slug))]

    def equal(self, key: str) -> list[str]:
        return [slug for _, slug in self._run(key, lambda pair: pair[0] != key)]

    def starting(self, prefix: str) -> Iterator[str]:
        return (slug for _, slug in self._run(prefix, lambda pair: not pair[0].startswith(prefix)))

    def _run(self, key: str, past: Callable[[tuple[str, str]], bool]) -> list[tuple[str, str]]:
        """The pairs from the first whose key is not below `key`, up to the first `past`."""
        low = bisect.bisect_left(self._pairs, (key,))
        return self._pairs[low : bisect.bisect_left(self._pairs, True, low, key=past)]


def _last(slug: str) -> str:
    return slug.rpartition("/")[2]


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
        self._folded: TitleIndex | None = None  # built on demand, then kept in step
        self._folded_changes = 0

    def clear(self) -> None:
        self._g.clear()
        self._titles.clear()
        self._placeholders.clear()
        self._folded = None

    def set_node(self, slug: str, title: str, placeholder: bool) -> None:
        slug = sys.intern(slug)
        self._g.add_node(slug)
        self._titles[slug] = title
        if placeholder:
            self._placeholders.add(slug)
        else:
            self._placeholders.discard(slug)
        if self._folded is not None and self._keep_folded():
            self._folded.add(slug, title.lower())

    def remove_node(self, slug: str) -> None:
        if slug in self._g:
            self._g.remove_node(slug)
            self._titles.pop(slug, None)
            self._placeholders.discard(slug)
            if self._folded is not None and self._keep_folded():
                self._folded.remove(slug)

    def _keep_folded(self) -> bool:
        """Whether to keep the title index in step with one more change (a few changes
        at a time are cheaper to apply; after many, building it again is)."""
        self._folded_changes += 1
        if self._folded_changes > FOLDED_CHANGES_KEPT:
            self._folded = None
        return self._folded is not None

    def __contains__(self, slug: object) -> bool:
        return slug in self._g

    def __len__(self) -> int:
        return int(self._g.number_of_nodes())

    def node(self, slug: str) -> Node | None:
        if slug not in self._g:
            return None
        return Node(slug, self._titles.get(slug, slug), slug in self._placeholders)

    def nodes(self) -> list[Node]:
        """Every page and placeholder."""
        titles, placeholders = self._titles, self._placeholders
        return [Node(slug, titles.get(slug, slug), slug in placeholders) for slug in self._g]

    def slugs_under(self, prefix: str, placeholders: bool = True) -> list[str]:
        """The slugs that start with `prefix`, sorted: pages, and placeholders if asked."""
        slugs = self.folded_titles().starting(prefix)
        if placeholders:
            return slugs
        return list(itertools.filterfalse(self._placeholders.__contains__, slugs))

    def folded_titles(self) -> TitleIndex:
        """Every node's slug and lowercased title, for title lookups."""
        if self._folded is None:
            titles = self._titles
            self._folded = TitleIndex((slug, titles.get(slug, slug).lower()) for slug in self._g)
            self._folded_changes = 0
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
