"""Slugs, titles and name resolution: pure functions, no I/O.

A slug is a page's identity: its vault-relative path without `.md`, each segment
lowercased and reduced to letters, digits and hyphens. Links and tool arguments are
resolved to slugs by the rules here (SPEC §2 and §3).
"""

from __future__ import annotations

import bisect
import heapq
import math
import re
import sys
import threading
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain
from urllib.parse import unquote

from lore_mcp.errors import InvalidNameError, UnsafePathError

MAX_SEGMENT_CHARS = 200
MAX_NAME_CHARS = 1000
CLOSE_POOL = 64  # names per fuzzy lookup that are rated for similarity
CLOSE_CUTOFF = 0.6  # the least similarity of a close name
# Not portable in file names, or (`[ ] # ^ |`) cannot be written inside a [[link]].
_FORBIDDEN_FILE_CHARS = frozenset('<>:"|?*[]#^')
_DASH_RUN = re.compile(r"-{2,}")
# Lowercased ASCII: spaces and underscores become hyphens; what is not a-z, 0-9 or `-` goes.
_ASCII_SLUG = str.maketrans(
    {chr(c): None for c in range(128) if not (chr(c).isalnum() or chr(c) in " _-")}
    | {" ": "-", "_": "-"}
)


@lru_cache(maxsize=65536)
def slugify(segment: str) -> str:
    """Normalise one path segment: `My Page_1` → `my-page-1`, `Ünïcode Ω` → `ünïcode-ω`."""
    text = segment.strip().lower()
    if text.isascii():
        text = text.translate(_ASCII_SLUG)
    else:
        text = "".join(
            "-" if char in " _" else char
            for char in unicodedata.normalize("NFC", text)
            if char in " _-" or char.isalnum() or _is_combining(char)
        )
    if "--" in text:
        text = _DASH_RUN.sub("-", text)
    return text.strip("-")


def _is_combining(char: str) -> bool:
    # Marks keep scripts such as Devanagari readable; they never start a slug on their own.
    return unicodedata.category(char) in ("Mn", "Mc")


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


def clear_caches() -> None:
    """Forget the memoised slugs and keys (a process that only parses pages, chunk by
    chunk, keeps its memory flat this way)."""
    slugify.cache_clear()
    _key.cache_clear()


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
    decoded = unquote(name)
    for text in (name, decoded):
        path = text.replace("\\", "/").strip()
        if path.startswith("/") or re.match(r"^[A-Za-z]:", path):
            raise UnsafePathError(
                f"{name!r} is an absolute path; name pages relative to the vault root."
            )
        parts = [p.strip() for p in path.split("/")]
        if ".." in parts or any(p.startswith("..") and p.strip(".") == "" for p in parts):
            raise UnsafePathError(f"{name!r} leaves the vault; '..' is not allowed in names.")
        if any(p.startswith(".") and p not in (".",) for p in parts if p):
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
        seg = "".join(c for c in raw.strip() if c not in _FORBIDDEN_FILE_CHARS and c.isprintable())
        seg = seg.strip().rstrip(".")
        if raw.strip() in ("", "."):
            continue
        if seg.startswith("."):  # "\b.x" or "<.x" once cleaned: a hidden file, never indexed
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


@dataclass(frozen=True, slots=True)
class Resolution:
    """Where a key leads: `slug` is None when nothing matches; `candidates` lists every
    match when there were several (the link is then ambiguous)."""

    slug: str | None
    candidates: tuple[str, ...] = ()

    @property
    def ambiguous(self) -> bool:
        return len(self.candidates) > 1


class SlugIndex:
    """The set of real page slugs, indexed by last segment for suffix resolution.

    The trigram index behind `close_names` is built on the first call that needs it
    (most processes never misspell a name) and kept in step from then on; a lock keeps
    that build whole when another thread changes the set.
    """

    def __init__(self, slugs: Iterable[str] = ()) -> None:
        self._slugs: set[str] = set()
        self._by_last: dict[str, set[str]] = {}
        # trigram -> the last segments holding it, shortest first (see `close_names`);
        # tuples, which the cycle collector stops looking into (lists of some two million
        # names at 100k pages made each full collection walk them all)
        self._by_gram: dict[str, tuple[str, ...]] | None = None
        self._lock = threading.Lock()
        self.update(slugs)

    def add(self, slug: str) -> None:
        with self._lock:
            self._add(slug)

    def update(self, slugs: Iterable[str]) -> None:
        """Add many slugs."""
        with self._lock:
            for slug in slugs:
                self._add(slug)

    def _add(self, slug: str) -> None:
        slug = sys.intern(slug)  # one copy of each slug, shared with the graph
        self._slugs.add(slug)
        last = slug.rpartition("/")[2]
        bucket = self._by_last.get(last)
        if bucket is not None:
            bucket.add(slug)
            return
        self._by_last[last] = {slug}
        if self._by_gram is not None:
            grams = self._by_gram
            for gram in _trigrams(last):
                names = grams.get(gram, ())
                at = bisect.bisect_right(names, len(last), key=len)
                grams[gram] = (*names[:at], last, *names[at:])

    def remove(self, slug: str) -> None:
        with self._lock:
            self._slugs.discard(slug)
            last = slug.rpartition("/")[2]
            bucket = self._by_last.get(last)
            if bucket is None or slug not in bucket:
                return
            bucket.discard(slug)
            if bucket:
                return
            del self._by_last[last]
            if self._by_gram is not None:
                grams = self._by_gram
                for gram in _trigrams(last):
                    names = grams[gram]
                    at = names.index(last, bisect.bisect_left(names, len(last), key=len))
                    if len(names) == 1:
                        del grams[gram]
                    else:
                        grams[gram] = names[:at] + names[at + 1 :]

    def close_names(self, word: str, count: int) -> list[tuple[float, str]]:
        """Last segments spelled like `word`, as (similarity, name), closest first: of
        the names long enough and short enough to be rated at least `CLOSE_CUTOFF`, the
        `CLOSE_POOL` sharing the most trigrams with it, those `closest` rates so high.
        Each trigram's names are kept shortest first, so only the lengths that can
        match are counted: a short word looks at a small part of the index."""
        shortest, longest = _comparable_lengths(len(word), CLOSE_CUTOFF)
        with self._lock:
            if self._by_gram is None:
                self._by_gram = _gram_index(self._by_last)
            grams = self._by_gram
            # chain: the counting loop stays in C (a generator costs a Python step per name)
            tally = Counter(
                chain.from_iterable(
                    _lengths_between(grams.get(gram), shortest, longest) for gram in _trigrams(word)
                )
            )
        pool = (name for name, _ in tally.most_common(CLOSE_POOL))
        return closest(word, pool, count, CLOSE_CUTOFF)

    def named(self, last: str) -> list[str]:
        """The slugs whose last segment is `last`, sorted."""
        return sorted(self._by_last.get(last, ()))

    def clear(self) -> None:
        with self._lock:
            self._slugs.clear()
            self._by_last.clear()
            self._by_gram = None

    def __contains__(self, slug: object) -> bool:
        return slug in self._slugs

    def __iter__(self) -> Iterator[str]:
        return iter(self._slugs)

    def __len__(self) -> int:
        return len(self._slugs)

    def matches(self, key: Key) -> list[str]:
        """Every slug the key could mean, sorted: the exact slug alone, else suffix matches."""
        return self._matches(key.path, key.exact)

    def _matches(self, path: str, exact: bool) -> list[str]:
        if path in self._slugs:
            return [path]
        if exact:
            return []
        bucket = self._by_last.get(path.rpartition("/")[2])
        if not bucket:
            return []
        tail = "/" + path
        if len(bucket) == 1:  # most names are unique: no generator, no sort
            (only,) = bucket
            return [only] if only.endswith(tail) else []
        return sorted(s for s in bucket if s.endswith(tail))

    def resolve(self, key: Key, source_slug: str | None = None) -> Resolution:
        """SPEC §3: exact slug; unique suffix; else own folder, shortest, first — ambiguous."""
        found = self._matches(key.path, key.exact)
        if not found:
            return Resolution(None)
        if len(found) == 1:
            return Resolution(found[0])
        chosen = pick_candidate(found, source_slug)
        return Resolution(chosen, tuple(found))

    def link_target(self, path: str, exact: bool, source_slug: str) -> tuple[str, bool]:
        """Where a link from `source_slug` with the key (`path`, `exact`) leads, as
        `resolve` decides, and whether it was ambiguous; a key that matches no page
        leads to its own path (a placeholder). No objects made: links are many."""
        found = self._matches(path, exact)
        if len(found) == 1:
            return found[0], False
        if not found:
            return path, False
        return pick_candidate(found, source_slug), True


def closest(
    word: str, names: Iterable[str], count: int, cutoff: float = CLOSE_CUTOFF
) -> list[tuple[float, str]]:
    """The `count` names most like `word`, as (similarity, name) pairs, best first, those
    at least `cutoff`. Similarity is 2·L / (len(word) + len(name)), L being the length
    of their longest common subsequence: 1.0 for the same name, and each letter typed
    wrong, missing or extra costs about one letter's share. (difflib's ratio has the
    same form with a greedy L; this L is exact, and found about seven times faster.)"""
    size = len(word)
    letters = _letter_bits(word)
    rated: list[tuple[float, str]] = []
    for name in names:
        total = size + len(name)
        if not name or not _may_reach(size, len(name), cutoff):
            continue
        similarity = 2 * _common_length(letters, size, name) / total
        if similarity >= cutoff:
            rated.append((similarity, name))
    return heapq.nlargest(count, rated)


def _letter_bits(word: str) -> dict[str, int]:
    """For each letter of `word`, a mask with bit i set where word[i] is that letter."""
    bits: dict[str, int] = {}
    for i, letter in enumerate(word):
        bits[letter] = bits.get(letter, 0) | 1 << i
    return bits


def _common_length(letters: dict[str, int], size: int, other: str) -> int:
    """The length of the longest common subsequence of a word of `size` letters (given as
    `_letter_bits`) and `other`, by the bit-parallel method of Allison and Dix (1986):
    bit i of `row` is cleared once the word's letter i is matched; a few integer
    operations per letter of `other`, however long the word."""
    everything = (1 << size) - 1
    row = everything
    for letter in other:
        matched = row & letters.get(letter, 0)
        row = (row + matched) | (row - matched)
    return size - (row & everything).bit_count()


def _may_reach(size: int, length: int, cutoff: float) -> bool:
    """Whether words of `size` and `length` letters can be `cutoff` alike: their common
    subsequence is at most the shorter one."""
    return 2 * min(size, length) >= cutoff * (size + length)


def _comparable_lengths(size: int, cutoff: float) -> tuple[int, int]:
    """The least and the greatest length of a name that `_may_reach` a word of `size`
    letters at a `cutoff` above 0 (the bounds solved for, then settled on the exact
    test)."""
    shortest = max(math.ceil(cutoff * size / (2 - cutoff)), 1)
    while shortest > 1 and _may_reach(size, shortest - 1, cutoff):
        shortest -= 1
    while shortest <= size and not _may_reach(size, shortest, cutoff):
        shortest += 1
    longest = max(math.floor((2 - cutoff) * size / cutoff), size)
    while _may_reach(size, longest + 1, cutoff):
        longest += 1
    while longest > size and not _may_reach(size, longest, cutoff):
        longest -= 1
    return shortest, longest


def _lengths_between(names: tuple[str, ...] | None, shortest: int, longest: int) -> tuple[str, ...]:
    """The names, kept shortest first, from `shortest` to `longest` letters long."""
    if not names:
        return ()
    low = bisect.bisect_left(names, shortest, key=len)
    return names[low : bisect.bisect_right(names, longest, low, key=len)]


def _gram_index(names: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """Trigram -> the names holding it, shortest first (the names are taken shortest
    first, so each list is made in that order)."""
    index: defaultdict[str, list[str]] = defaultdict(list)
    for name in sorted(names, key=len):
        for gram in _trigrams(name):
            index[gram].append(name)
    return {gram: tuple(holding) for gram, holding in index.items()}


def _trigrams(word: str) -> set[str]:
    padded = f"  {word} "
    return {padded[i : i + 3] for i in range(len(padded) - 2)}


def pick_candidate(candidates: list[str], source_slug: str | None) -> str:
    """The deterministic tie-break among several matches."""
    if source_slug is not None:
        folder = parent(source_slug)
        local = [c for c in candidates if parent(c) == folder]
        if local:
            return min(local)
    return min(candidates, key=lambda s: (s.count("/"), len(s), s))
