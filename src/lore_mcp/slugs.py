"""Slugs, titles and the resolution of names to slugs: pure functions, no I/O.

A slug is a page's identity: its vault-relative path without `.md`, each segment
lowercased, spaces and underscores made `-`, and the characters that link syntax or
file systems reserve dropped; every other character stays, so distinct files keep
distinct slugs (`C++.md` is `c++`, `C.md` is `c`). Links and tool arguments are resolved
to slugs by the rules here. A looser key (letters and digits only) may help find a page
for a read or a suggestion; it is never an identity.
"""

from __future__ import annotations

import heapq
import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import unquote

from rapidfuzz import fuzz, process

from lore_mcp.config import MAX_NAME_CHARS, MAX_SEGMENT_CHARS
from lore_mcp.errors import InvalidNameError, UnsafePathError

CLOSE_CUTOFF = 60  # the least similarity (0-100) of a close spelling
# Reserved by link syntax (`[ ] # ^ |`) or by file systems: never in a slug or a new file name.
RESERVED = frozenset('/\\:*?"<>|#^[]')
_DASH_RUN = re.compile(r"-{2,}")
_DRIVE = re.compile(r"^(?:[A-Za-z]:[\\/]|[\\/]{2})")  # C:\..., C:/..., \\server\...


@lru_cache(maxsize=65536)
def slugify(segment: str) -> str:
    """One path segment as a slug: `My Page_1` → `my-page-1`, `C++` → `c++`,
    `v1.1.0` → `v1.1.0`, `🚀 Launch` → `🚀-launch`, `Ünïcode Ω` → `ünïcode-ω`."""
    kept = (
        "-" if char.isspace() or char == "_" else char
        for char in unicodedata.normalize("NFC", segment.lower())
        if char not in RESERVED and (char.isspace() or unicodedata.category(char) != "Cc")
    )
    slug = _DASH_RUN.sub("-", "".join(kept)).strip("-").rstrip(".").strip("-")
    return slug if any(_is_word(char) for char in slug) else ""


def _is_word(char: str) -> bool:
    """A letter, a digit, or a symbol such as an emoji: what a name needs at least one of."""
    return char.isalnum() or unicodedata.category(char) == "So"


@lru_cache(maxsize=65536)
def loose(segment: str) -> str:
    """A looser key for finding: letters, digits and hyphens only (`C++` → `c`)."""
    kept = (
        "-" if char.isspace() or char == "_" else char
        for char in unicodedata.normalize("NFC", segment.lower())
        if char.isalnum() or char in " _-" or unicodedata.category(char) in ("Mn", "Mc")
    )
    return _DASH_RUN.sub("-", "".join(kept)).strip("-")


@lru_cache(maxsize=65536)
def slug_from_path(rel_path: str) -> str:
    """`notes/My Page.md` → `notes/my-page`. Empty segments are dropped."""
    path = rel_path.replace("\\", "/")
    if path.lower().endswith(".md"):
        path = path[:-3]
    return "/".join([s for s in map(slugify, path.split("/")) if s])


def title_from_path(rel_path: str) -> str:
    """The file's stem: `notes/My Page.md` → `My Page`."""
    name = rel_path.replace("\\", "/").rsplit("/", 1)[-1]
    return name[:-3] if name.lower().endswith(".md") else name


def parent(slug: str) -> str:
    """The folder part of a slug (`a/b/c` → `a/b`, `c` → ``)."""
    return slug.rpartition("/")[0]


def suffixes(slug: str) -> list[str]:
    """Every segment-aligned tail of a slug: `a/b/c` → [`a/b/c`, `b/c`, `c`]."""
    parts = slug.split("/")
    return ["/".join(parts[i:]) for i in range(len(parts))]


def is_hidden(rel_path: str) -> bool:
    """True when any segment of the path is a dot-file or dot-folder."""
    return any(part.startswith(".") for part in rel_path.replace("\\", "/").split("/") if part)


@dataclass(frozen=True, slots=True)
class Key:
    """A normalised reference: `path` is slug-shaped; `exact` means no suffix matching."""

    path: str
    exact: bool


def target_key(target: str, source_slug: str | None = None) -> Key | None:
    """Normalise a link target (alias and fragment already removed) to a lookup key.

    `./x` and `../x` are resolved against the source page's folder and `/x` against the
    vault root; those are exact. `None` when nothing page-like remains (empty target,
    `..` above the root).
    """
    text = target.strip().replace("\\", "/").removeprefix("!")
    relative = source_slug is not None and text.startswith(("./", "../"))
    return _key(text, parent(source_slug) if relative and source_slug is not None else None)


@lru_cache(maxsize=65536)
def _key(text: str, folder: str | None) -> Key | None:
    if text.lower().endswith(".md"):
        text = text[:-3]
    exact = folder is not None or text.startswith("/")
    parts = [p for p in (folder or "").split("/") if p]
    for raw in text.split("/"):
        if raw.strip() == "..":
            if not exact or not parts:
                return None
            parts.pop()
        elif raw.strip() not in ("", "."):
            seg = slugify(raw)
            if seg:
                parts.append(seg)
    if not parts:
        return None
    return Key("/".join(parts), exact)


def check_name(name: str) -> None:
    """Reject names no tool should act on: NUL, invalid Unicode, paths that leave the
    vault (`..`, a drive or a network share) and dot-folders."""
    if "\x00" in name:
        raise InvalidNameError("Page names cannot contain NUL bytes.")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidNameError("Page names must be valid Unicode text.") from None
    if len(name) > MAX_NAME_CHARS:
        raise InvalidNameError(f"Page names are limited to {MAX_NAME_CHARS} characters.")
    for text in (name, unquote(name)):
        if _DRIVE.match(text.strip()):
            raise UnsafePathError(
                f"{name!r} is an absolute path on this machine; name pages inside the vault "
                "('notes/Idea', or '/notes/Idea' from the vault's top)."
            )
        parts = [p.strip() for p in text.replace("\\", "/").split("/")]
        if any(p.startswith("..") and not p.strip(".") for p in parts):
            raise UnsafePathError(f"{name!r} leaves the vault; '..' is not allowed in names.")
        if any(p.startswith(".") and p != "." for p in parts):
            raise UnsafePathError(
                f"{name!r} points into a hidden file or folder; those are not part of the vault."
            )


@dataclass(frozen=True, slots=True)
class Name:
    """A page name as a tool got it. `explicit` when it is a path (a folder part, a
    leading `./` or `/`, or a trailing `.md`): that names exactly one place. Only a
    bare name may find a page in another folder."""

    text: str  # as given, with `/` for `\\` and without `./`, `/` and `.md`
    key: Key
    explicit: bool


def parse_name(name: str) -> Name:
    """A page name typed by a caller (title, path or slug), checked and keyed."""
    check_name(name)
    text = name.strip().replace("\\", "/")
    explicit = text.startswith(("./", "/")) or "/" in text or text.lower().endswith(".md")
    text = text.removeprefix("./").lstrip("/")
    if text.lower().endswith(".md"):
        text = text[:-3]
    parts = [slugify(part) for part in text.split("/") if part.strip() not in ("", ".")]
    if not parts or not all(parts):
        raise InvalidNameError(
            f"{name!r} has no letters or digits in a part of it, so it cannot name a page. "
            "Use a name such as 'Project Notes' or 'notes/project-notes'."
        )
    return Name(text, Key("/".join(parts), explicit), explicit)


def name_key(name: str) -> Key:
    """The lookup key of a page name typed by a caller."""
    return parse_name(name).key


def file_name(text: str) -> str:
    """`text` made safe as a file or folder name: reserved and control characters go
    (`Q: Why?` → `Q Why`), as do spaces and dots at the ends."""
    kept = "".join(c for c in text if c not in RESERVED and unicodedata.category(c) != "Cc")
    return kept.strip().rstrip(". ").strip()


def file_path_for(name: str) -> str:
    """The vault-relative file a new page named `name` gets: `a/My Page` → `a/My Page.md`.

    Segments keep their spelling (so other Markdown tools resolve `[[My Page]]`), less
    what a file name cannot hold."""
    parts: list[str] = []
    for raw in parse_name(name).text.split("/"):
        if raw.strip() in ("", "."):
            continue
        segment = file_name(raw)
        if segment.startswith("."):
            raise UnsafePathError(
                f"{name!r} would make the hidden file or folder {segment!r}; those are not "
                "part of the vault. Start the name with a letter or digit."
            )
        if len(segment) > MAX_SEGMENT_CHARS:
            raise InvalidNameError(
                f"The part {segment[:40]!r}… is longer than {MAX_SEGMENT_CHARS} characters."
            )
        if not slugify(segment):
            raise InvalidNameError(
                f"{raw!r} in {name!r} has no letters or digits; every folder and page name "
                "needs some."
            )
        parts.append(segment)
    return "/".join(parts) + ".md"


def pick_candidate(candidates: list[str], source_slug: str | None) -> str:
    """The deterministic tie-break among several matches: the linking page's own folder,
    then the shortest path, then the first in sort order."""
    if source_slug is not None:
        folder = parent(source_slug)
        local = [c for c in candidates if parent(c) == folder]
        if local:
            return min(local)
    return min(candidates, key=lambda s: (s.count("/"), len(s), s))


class SlugSet:
    """A set of slugs that answers the lookups of resolution: the exact slug, or every
    slug that ends in the same segments; and close spellings of a last segment."""

    def __init__(self, slugs: Iterable[str] = ()) -> None:
        self._slugs: set[str] = set()
        self._by_last: dict[str, set[str]] = {}
        self._by_loose: dict[str, set[str]] = {}  # by the loose key of the last segment
        self.update(slugs)

    def add(self, slug: str) -> None:
        self._slugs.add(slug)
        last = slug.rpartition("/")[2]
        self._by_last.setdefault(last, set()).add(slug)
        self._by_loose.setdefault(loose(last), set()).add(slug)

    def update(self, slugs: Iterable[str]) -> None:
        for slug in slugs:
            self.add(slug)

    def remove(self, slug: str) -> None:
        if slug not in self._slugs:
            return
        self._slugs.discard(slug)
        last = slug.rpartition("/")[2]
        for index, key in ((self._by_last, last), (self._by_loose, loose(last))):
            index[key].discard(slug)
            if not index[key]:
                del index[key]

    def clear(self) -> None:
        self._slugs.clear()
        self._by_last.clear()
        self._by_loose.clear()

    def __contains__(self, slug: object) -> bool:
        return slug in self._slugs

    def __iter__(self) -> Iterator[str]:
        return iter(self._slugs)

    def __len__(self) -> int:
        return len(self._slugs)

    def named(self, last: str) -> list[str]:
        """The slugs whose last segment is `last`, sorted."""
        return sorted(self._by_last.get(last, ()))

    def matches(self, key: Key) -> list[str]:
        """Every slug the key could mean, sorted: the exact slug alone, else suffix matches."""
        if key.path in self._slugs:
            return [key.path]
        if key.exact:
            return []
        tail = "/" + key.path
        return sorted(
            s for s in self._by_last.get(key.path.rpartition("/")[2], ()) if s.endswith(tail)
        )

    def matches_loosely(self, key: Key) -> list[str]:
        """The slugs that match the key when both are reduced to letters and digits:
        a looser way to find a page, for reads and suggestions only."""
        wanted = "/".join(loose(part) for part in key.path.split("/"))
        found = self._by_loose.get(wanted.rpartition("/")[2], ())
        return sorted(
            slug
            for slug in found
            if (folded := "/".join(loose(part) for part in slug.split("/"))) == wanted
            or (not key.exact and folded.endswith("/" + wanted))
        )

    def close_names(self, word: str, count: int) -> list[tuple[float, str]]:
        """Last segments spelled like `word`, as (similarity 0-100, name), closest first
        and ties by name, so that the answer does not depend on the order names came in."""
        found = process.extract(
            word, self._by_last.keys(), scorer=fuzz.ratio, limit=None, score_cutoff=CLOSE_CUTOFF
        )
        return heapq.nlargest(count, ((score, name) for name, score, _ in found))


class Aliases:
    """The frontmatter aliases of pages, by alias key: further names a link may use."""

    def __init__(self) -> None:
        self._pages: dict[str, set[str]] = {}  # alias key -> the pages that have it
        self._keys: dict[str, set[str]] = {}  # page -> its alias keys

    def give(self, slug: str, aliases: Iterable[str]) -> set[str]:
        """Give `slug` these aliases (none: take its aliases away); the alias keys that
        changed, whose links may now lead elsewhere."""
        new = {found.path for alias in aliases if (found := target_key(alias)) is not None}
        old = self._keys.pop(slug, set())
        for gone in old - new:
            self._pages[gone].discard(slug)
            if not self._pages[gone]:
                del self._pages[gone]
        for came in new - old:
            self._pages.setdefault(came, set()).add(slug)
        if new:
            self._keys[slug] = new
        return old ^ new

    def pages(self, key: str) -> list[str]:
        return sorted(self._pages.get(key, ()))

    def of(self, slug: str) -> frozenset[str]:
        return frozenset(self._keys.get(slug, ()))

    def clear(self) -> None:
        self._pages.clear()
        self._keys.clear()

    def moved(self, old: str, new: str) -> Aliases:
        """A copy in which the page `old` is called `new`."""
        copy = Aliases()
        for slug, keys in self._keys.items():
            copy._keys[new if slug == old else slug] = set(keys)
            for key in keys:
                copy._pages.setdefault(key, set()).add(new if slug == old else slug)
        return copy


def resolve(
    pages: SlugSet, aliases: Aliases, key: Key, source_slug: str | None
) -> tuple[str, bool]:
    """Where a link from `source_slug` with this key leads, and whether it was ambiguous:
    the exact slug, the unique slug that ends with the key, the best of several (see
    `pick_candidate`), a page that has the key as an alias (paths and file names
    first, as Obsidian resolves), else the key's own path: a placeholder."""
    found = pages.matches(key)
    if not found and not key.exact:
        found = aliases.pages(key.path)
    if not found:
        return key.path, False
    if len(found) == 1:
        return found[0], False
    return pick_candidate(found, source_slug), True
