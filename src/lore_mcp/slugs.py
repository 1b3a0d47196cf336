"""Slugs, titles and the resolution of names to slugs: pure functions, no I/O.

A slug is a page's identity: its vault-relative path without `.md`, each segment
lowercased and reduced to letters, digits and hyphens. Links and tool arguments are
resolved to slugs by the rules here.
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
# Not portable in file names, or (`[ ] # ^ |`) cannot be written inside a [[link]].
_FORBIDDEN_FILE_CHARS = frozenset('<>:"|?*[]#^')
_DASH_RUN = re.compile(r"-{2,}")


@lru_cache(maxsize=65536)
def slugify(segment: str) -> str:
    """Normalise one path segment: `My Page_1` → `my-page-1`, `Ünïcode Ω` → `ünïcode-ω`."""
    text = unicodedata.normalize("NFC", segment.strip().lower())
    text = "".join(
        "-" if char in " _" else char
        for char in text
        if char in " _-" or char.isalnum() or unicodedata.category(char) in ("Mn", "Mc")
    )
    return _DASH_RUN.sub("-", text).strip("-")


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
    """Reject names no tool should act on: NUL, invalid Unicode, traversal, dot-folders."""
    if "\x00" in name:
        raise InvalidNameError("Page names cannot contain NUL bytes.")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidNameError("Page names must be valid Unicode text.") from None
    if len(name) > MAX_NAME_CHARS:
        raise InvalidNameError(f"Page names are limited to {MAX_NAME_CHARS} characters.")
    for text in (name, unquote(name)):
        path = text.replace("\\", "/").strip()
        if path.startswith("/") or re.match(r"^[A-Za-z]:", path):
            raise UnsafePathError(
                f"{name!r} is an absolute path; name pages relative to the vault root."
            )
        parts = [p.strip() for p in path.split("/")]
        if ".." in parts or any(p.startswith("..") and p.strip(".") == "" for p in parts):
            raise UnsafePathError(f"{name!r} leaves the vault; '..' is not allowed in names.")
        if any(p.startswith(".") and p != "." for p in parts if p):
            raise UnsafePathError(
                f"{name!r} points into a hidden file or folder; those are not part of the vault."
            )


def name_key(name: str) -> Key:
    """Normalise a page name typed by a caller (title, path or slug) to a lookup key."""
    check_name(name)
    text = name.strip().replace("\\", "/")
    if text.startswith("./"):
        text = text[2:]
    key = target_key(text)
    if key is None:
        raise InvalidNameError(
            f"{name!r} has no letters or digits, so it cannot name a page. "
            "Use a name such as 'Project Notes' or 'notes/project-notes'."
        )
    return key


def file_path_for(name: str) -> str:
    """The vault-relative file path a new page named `name` gets: `a/My Page` → `a/My Page.md`.

    Segments keep their spelling (so other Markdown tools resolve `[[My Page]]`), minus
    characters that are not portable in file names or cannot appear in a link.
    """
    check_name(name)
    text = name.strip().replace("\\", "/")
    if text.lower().endswith(".md"):
        text = text[:-3]
    parts: list[str] = []
    for raw in text.split("/"):
        if raw.strip() in ("", "."):
            continue
        seg = "".join(c for c in raw.strip() if c not in _FORBIDDEN_FILE_CHARS and c.isprintable())
        seg = seg.strip().rstrip(".")
        if seg.startswith("."):  # "<.x" once cleaned: a hidden file, never indexed
            raise UnsafePathError(
                f"{name!r} would make the hidden file or folder {seg!r}; those are not part "
                "of the vault. Start the name with a letter or digit."
            )
        if len(seg) > MAX_SEGMENT_CHARS:
            raise InvalidNameError(
                f"The segment {seg[:40]!r}… is longer than {MAX_SEGMENT_CHARS} characters."
            )
        if not slugify(seg):
            raise InvalidNameError(
                f"{raw!r} in {name!r} has no letters or digits; "
                "every folder and page name needs some."
            )
        parts.append(seg)
    if not parts:
        raise InvalidNameError(f"{name!r} does not name a page.")
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
        self.update(slugs)

    def add(self, slug: str) -> None:
        self._slugs.add(slug)
        self._by_last.setdefault(slug.rpartition("/")[2], set()).add(slug)

    def update(self, slugs: Iterable[str]) -> None:
        for slug in slugs:
            self.add(slug)

    def remove(self, slug: str) -> None:
        self._slugs.discard(slug)
        last = slug.rpartition("/")[2]
        bucket = self._by_last.get(last)
        if bucket is not None:
            bucket.discard(slug)
            if not bucket:
                del self._by_last[last]

    def clear(self) -> None:
        self._slugs.clear()
        self._by_last.clear()

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

    def link_target(self, key: Key, source_slug: str) -> tuple[str, bool]:
        """Where a link from `source_slug` with this key leads, and whether it was
        ambiguous; a key that matches no slug here leads to its own path."""
        found = self.matches(key)
        if not found:
            return key.path, False
        if len(found) == 1:
            return found[0], False
        return pick_candidate(found, source_slug), True

    def close_names(self, word: str, count: int) -> list[tuple[float, str]]:
        """Last segments spelled like `word`, as (similarity 0-100, name), closest first
        and ties by name, so that the answer does not depend on the order names came in."""
        found = process.extract(
            word, self._by_last.keys(), scorer=fuzz.ratio, limit=None, score_cutoff=CLOSE_CUTOFF
        )
        return heapq.nlargest(count, ((score, name) for name, score, _ in found))
