"""The sets of names a vault has, held in memory, and where a link leads among them.

`PageSet` holds the page files by path, title and slug; `PlaceholderSet` the link targets
with no file; `Aliases` the further names frontmatter gives; `resolve` follows a link's
key through a `PageSet` as Obsidian does. The keys they compare are `slugs`' pure
folding; these are kept apart from it because they hold state (sets that grow and shrink
as files come and go) and need a fuzzy matcher for close spellings. No I/O.
"""

from __future__ import annotations

import heapq
import unicodedata
from collections.abc import Collection, Iterable, Iterator
from typing import NamedTuple

from rapidfuzz import fuzz, process

from lore_mcp.slugs import Key, parent, path_key, slug_from_path, strip_md

CLOSE_CUTOFF = 60  # the least similarity (0-100) of a close spelling


def pick(candidates: Iterable[str], source: str | None) -> str:
    """Obsidian's tie-break among several files a link may mean: one in the linking
    page's own folder (an ancestor folder counts for nothing), else the shortest path,
    then the first in sort order."""
    found = list(candidates)
    if source is not None:
        folder = parent(source)
        local = [c for c in found if parent(c) == folder]
        if local:
            return min(local)
    return min(found, key=lambda path: (len(path), path))


class _Multi:
    """A map from a key to a set of paths. Most keys have one path, which is kept as
    itself: a set for each would make the name tables of a large vault several times
    their size."""

    def __init__(self) -> None:
        self.sets: dict[str, str | set[str]] = {}

    def add(self, key: str, path: str) -> None:
        found = self.sets.get(key)
        if found is None:
            self.sets[key] = path
        elif isinstance(found, str):
            if found != path:
                self.sets[key] = {found, path}
        else:
            found.add(path)

    def remove(self, key: str, path: str) -> None:
        found = self.sets.get(key)
        if found is None:
            return
        if isinstance(found, str):
            if found == path:
                del self.sets[key]
            return
        found.discard(path)
        if len(found) == 1:
            self.sets[key] = next(iter(found))

    def get(self, key: str) -> Collection[str]:
        found = self.sets.get(key, ())
        return (found,) if isinstance(found, str) else found


class _Slugged:
    """A set of keys (page paths or placeholder keys) and their slugs: what a loose
    lookup, a close spelling and a handle need."""

    def __init__(self, keys: Iterable[str] = ()) -> None:
        self._keys: set[str] = set()
        self._by_slug = _Multi()  # slug -> keys
        self._by_slug_title = _Multi()  # the last segment of the slug -> keys
        for key in keys:
            self.add(key)

    def add(self, key: str) -> None:
        if key not in self._keys:
            self._keys.add(key)
            slug = slug_from_path(key)
            self._by_slug.add(slug, key)
            if slug:
                self._by_slug_title.add(slug.rpartition("/")[2], key)

    def remove(self, key: str) -> None:
        if key in self._keys:
            self._keys.discard(key)
            slug = slug_from_path(key)
            self._by_slug.remove(slug, key)
            self._by_slug_title.remove(slug.rpartition("/")[2], key)

    def update(self, keys: Iterable[str]) -> None:
        for key in keys:
            self.add(key)

    def clear(self) -> None:
        self._keys = set()
        self._by_slug = _Multi()
        self._by_slug_title = _Multi()

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def slugged(self, slug: str, exact: bool = False) -> list[str]:
        """The keys whose slug is `slug` or (unless `exact`) ends with `/slug`, sorted."""
        tail = "/" + slug
        return sorted(
            k
            for k in self._by_slug_title.get(slug.rpartition("/")[2])
            if (found := slug_from_path(k)) == slug or (not exact and found.endswith(tail))
        )

    def sharing(self, slug: str) -> int:
        """How many keys have this slug."""
        return len(self._by_slug.get(slug))

    def close_titles(self, word: str, count: int) -> list[tuple[float, str]]:
        """Slug titles spelled like `word`, as (similarity 0-100, title), closest first,
        ties by title, so that the answer does not depend on the order keys came in."""
        found = process.extract(
            word,
            self._by_slug_title.sets.keys(),
            scorer=fuzz.ratio,
            limit=None,
            score_cutoff=CLOSE_CUTOFF,
        )
        return heapq.nlargest(count, ((score, name) for name, score, _ in found))

    def with_slug_title(self, title: str) -> list[str]:
        return sorted(self._by_slug_title.get(title))


class PageSet(_Slugged):
    """The page files of a vault, by path, and the lookups names and links need: the
    path compared as Obsidian compares it, the file name (title), and the slug."""

    def __init__(self, paths: Iterable[str] = ()) -> None:
        self._by_path = _Multi()  # path_key -> paths
        self._by_title = _Multi()  # the last segment of path_key -> paths
        super().__init__(paths)

    def add(self, key: str) -> None:
        if key not in self:
            found = path_key(key)
            self._by_path.add(found, key)
            self._by_title.add(found.rpartition("/")[2], key)
        super().add(key)

    def remove(self, key: str) -> None:
        if key in self:
            found = path_key(key)
            self._by_path.remove(found, key)
            self._by_title.remove(found.rpartition("/")[2], key)
        super().remove(key)

    def at(self, key: str) -> list[str]:
        """The files at this path (`path_key` form), sorted: more than one only where the
        file system tells case or Unicode forms apart (`Note.md`, `note.md`)."""
        return sorted(self._by_path.get(key))

    def ending(self, key: str) -> list[str]:
        """The files whose path is `key` or ends with `/key`, sorted."""
        tail = "/" + key
        return sorted(
            p
            for p in self._by_title.get(key.rpartition("/")[2])
            if (found := path_key(p)) == key or found.endswith(tail)
        )

    def clear(self) -> None:
        super().clear()
        self._by_path = _Multi()
        self._by_title = _Multi()

    def titled(self, title: str) -> list[str]:
        """The files with this file name (`path_key` form of the stem), sorted."""
        return sorted(self._by_title.get(title))

    def handle(self, path: str) -> str:
        """The name tools show for a page: its slug where no other file shares it, else
        its path."""
        slug = slug_from_path(path)
        return slug if slug and self.sharing(slug) == 1 else path


class PlaceholderSet(_Slugged):
    """The placeholders (link targets with no file), by key, with their slugs."""

    def handle(self, key: str, pages: PageSet) -> str:
        """A placeholder's name for tools: its slug where that names it alone, else its key."""
        slug = slug_from_path(key)
        unique = slug and self.sharing(slug) == 1 and not pages.sharing(slug)
        return slug if unique else key


class Aliases:
    """The frontmatter aliases of pages, by alias (`path_key` form): further names a
    read may find a page by. They never resolve a link (Obsidian's rule)."""

    def __init__(self) -> None:
        self._pages: dict[str, set[str]] = {}  # alias key -> the pages that have it
        self._keys: dict[str, set[str]] = {}  # page -> its alias keys

    def give(self, page: str, aliases: Iterable[str]) -> None:
        """Give `page` these aliases (none: take its aliases away)."""
        new = {path_key(alias.strip()) for alias in aliases if alias.strip()}
        old = self._keys.pop(page, set())
        for gone in old - new:
            self._pages[gone].discard(page)
            if not self._pages[gone]:
                del self._pages[gone]
        for came in new - old:
            self._pages.setdefault(came, set()).add(page)
        if new:
            self._keys[page] = new

    def pages(self, key: str) -> list[str]:
        return sorted(self._pages.get(key, ()))

    def of(self, page: str) -> frozenset[str]:
        return frozenset(self._keys.get(page, ()))

    def clear(self) -> None:
        self._pages.clear()
        self._keys.clear()


class Resolution(NamedTuple):
    """Where a link leads: a page's path, or (when `placeholder`) the key of the
    placeholder it waits at; `ambiguous` when several files matched and Obsidian's
    tie-break chose; `loose` when only the slug form found the page (Obsidian would
    not follow such a link)."""

    target: str
    placeholder: bool = False
    ambiguous: bool = False
    loose: bool = False


def _spelled(found: list[str], text: str) -> list[str]:
    """Of several files at one path (told apart by case or Unicode form only), those
    spelled as the link is: code point for point, else once normalised (NFC)."""
    if len(found) < 2 or not text:
        return found
    for same in (
        [p for p in found if strip_md(p) == text],
        [p for p in found if unicodedata.normalize("NFC", strip_md(p)) == nfc(text)],
    ):
        if same:
            return same
    return found


def nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def resolve(pages: PageSet, key: Key, source: str | None) -> Resolution:
    """Where a link from the page `source` with this key leads, as Obsidian resolves
    it: the exact path, else among the files whose path ends with it the one in the
    linking page's folder or the shortest (see `pick`). Only where that finds nothing
    does the slug form find a page, loosely; else the link waits at a placeholder."""
    found = _spelled(pages.at(key.path), key.text)
    if not found and not key.exact:
        found = pages.ending(key.path)
    loose = False
    if not found and key.fold:
        found = pages.slugged(key.fold, exact=key.exact)
        loose = True
    if not found:
        return Resolution(key.path, placeholder=True)
    if len(found) == 1:
        return Resolution(found[0], loose=loose)
    return Resolution(pick(found, source), ambiguous=True, loose=loose)
