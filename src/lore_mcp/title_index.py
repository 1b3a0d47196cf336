"""The title index behind search_titles and list_pages: every node's slug and lowercased
title, ordered so that the best few matches for a name, or the pages of a folder, are
found without looking at every node, and kept in step as nodes come and go.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import operator
from collections.abc import Callable, Iterable, Iterator

EXACT, PREFIX, SUBSTRING = 0, 1, 2  # how a name matched, best first


class TitleIndex:
    """Every node's slug and lowercased title. Slugs, (last segment, slug) pairs and
    (title, slug) pairs are each kept sorted, so exact and prefix matches are runs found
    by bisection; substrings are found by `_Substrings`."""

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
