"""Names of pages and where links lead: pure functions and in-memory sets, no I/O.

A page is its file: its key is its vault-relative path as on disk (`notes/My Page.md`).
Links and names are compared with paths as Obsidian compares them: without `.md`,
ignoring case, Unicode-normalised (NFC). A slug (`notes/my-page`: lowercased, spaces and
`_` made `-`, the characters link syntax or file systems reserve dropped) is a handle
for a page whose slug no other file shares, and the loosest way a read may find a page;
it is never an identity. A placeholder (a link target with no file) is keyed by its
target's path form, lowercased (`notes/my idea`).
"""

from __future__ import annotations

import heapq
import re
import unicodedata
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from urllib.parse import unquote

from rapidfuzz import fuzz, process

from lore_mcp.config import MAX_NAME_CHARS, MAX_SEGMENT_CHARS
from lore_mcp.errors import InvalidNameError, UnsafePathError

CLOSE_CUTOFF = 60  # the least similarity (0-100) of a close spelling
# Reserved by link syntax (`[ ] # ^ |`) or by file systems: never in a slug.
RESERVED = frozenset('/\\:*?"<>|#^[]')
# What Obsidian refuses in a new file name (a folder separator aside).
NOT_IN_NEW_NAMES = frozenset('\\:*?"<>|#^[]')
# The names Windows keeps for devices, in any case and with any extension (`nul.txt`):
# such a file cannot be made or opened there, so no new page or folder is so named.
WINDOWS_DEVICES = frozenset(
    ["con", "prn", "aux", "nul"]
    + [f"{port}{n}" for port in ("com", "lpt") for n in "0123456789¹²³"]
)
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
    """A letter, a digit, or a symbol such as an emoji: what a slug needs at least one of."""
    return char.isalnum() or unicodedata.category(char) == "So"


def strip_md(path: str) -> str:
    """The path without its `.md`."""
    return path[:-3] if path.lower().endswith(".md") else path


@lru_cache(maxsize=65536)
def slug_from_path(rel_path: str) -> str:
    """`notes/My Page.md` → `notes/my-page`. Segments that fold to nothing are dropped."""
    path = strip_md(rel_path.replace("\\", "/"))
    return "/".join([s for s in map(slugify, path.split("/")) if s])


@lru_cache(maxsize=65536)
def path_key(rel_path: str) -> str:
    """How paths are compared, as Obsidian compares them: `Notes/My Page.md` →
    `notes/my page`."""
    return unicodedata.normalize("NFC", strip_md(rel_path)).lower()


def title_from_path(rel_path: str) -> str:
    """The file's stem: `notes/My Page.md` → `My Page`."""
    return strip_md(rel_path.replace("\\", "/").rsplit("/", 1)[-1])


def parent(path: str) -> str:
    """The folder part of a path or key (`a/b/c.md` → `a/b`, `c.md` → ``)."""
    return path.rpartition("/")[0]


def suffixes(path: str) -> list[str]:
    """Every segment-aligned tail of a path: `a/b/c` → [`a/b/c`, `b/c`, `c`]."""
    parts = path.split("/")
    return ["/".join(parts[i:]) for i in range(len(parts))]


def is_hidden(rel_path: str) -> bool:
    """True when any segment of the path is a dot-file or dot-folder."""
    return any(part.startswith(".") for part in rel_path.replace("\\", "/").split("/") if part)


@dataclass(frozen=True, slots=True)
class Key:
    """A link target or a name, ready to compare with paths: `path` as `path_key` gives
    it, `exact` when it may only mean that path (relative or rooted), and `fold`, its
    slug form, for the loose match Obsidian does not make."""

    path: str
    exact: bool
    fold: str
    # the path as written, for the tie between files only case tells apart
    text: str = field(default="", compare=False)


def target_key(target: str, source: str | None = None) -> Key | None:
    """A link target (alias and fragment already removed) as a key.

    `./x` and `../x` are resolved against the folder of the page `source` and `/x`
    against the vault root; those are exact. `None` when nothing page-like remains
    (an empty target, `..` above the root)."""
    text = target.strip().replace("\\", "/")
    relative = source is not None and text.startswith(("./", "../"))
    return _key(text, parent(source) if relative and source is not None else None)


@lru_cache(maxsize=65536)
def _key(text: str, folder: str | None) -> Key | None:
    while text.lower().endswith(".md"):  # so that no placeholder's key is a page's path
        text = text[:-3]
    exact = folder is not None or text.startswith("/")
    parts = [p for p in (folder or "").split("/") if p]
    for raw in text.split("/"):
        if raw.strip() == "..":
            if not exact or not parts:
                return None
            parts.pop()
        elif raw.strip() not in ("", "."):
            parts.append(raw)
    if not parts:
        return None
    written = "/".join(parts)
    return Key(path_key(written), exact, slug_from_path(written), written)


def forget_cached() -> None:
    """Empty the caches of slugs, path keys and link keys: a pass over many files leaves
    them full (at 100k pages, tens of MB) of names it will not look up again soon."""
    for cached in (slugify, slug_from_path, path_key, _key):
        cached.cache_clear()


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
    """A page name as a tool got it, parsed once. `text` is the name with `/` for `\\`
    and without `./`, `/` and `.md`; `explicit` when it is a path (a folder part, a
    leading `./` or `/`, or a trailing `.md`); `key` compares it with paths."""

    given: str
    text: str
    explicit: bool
    key: Key

    @property
    def is_title(self) -> bool:
        """A bare name, which may mean a page of that title in any folder."""
        return not self.explicit


def parse_name(name: str) -> Name:
    """A page name typed by a caller (a path, a title or a slug), checked and keyed."""
    check_name(name)
    text = name.strip().replace("\\", "/")
    explicit = text.startswith(("./", "/")) or "/" in text or text.lower().endswith(".md")
    text = strip_md(text.removeprefix("./").lstrip("/"))
    parts = [part for part in text.split("/") if part.strip() not in ("", ".")]
    if not parts:
        raise InvalidNameError(
            f"{name!r} does not name a page. Use a name such as 'Project Notes' or "
            "'notes/Project Notes'."
        )
    text = "/".join(parts)
    return Name(name, text, explicit, Key(path_key(text), explicit, slug_from_path(text)))


def file_name(text: str) -> str:
    """`text` made safe as a new file or folder name: what Obsidian refuses and control
    characters go (`Q: Why?` → `Q Why`), as do spaces and dots at the ends."""
    kept = "".join(c for c in text if c not in RESERVED and unicodedata.category(c) != "Cc")
    return " ".join(kept.split()).strip().rstrip(". ").strip()


def _check_portable(name: Name, parts: list[str], at: int) -> None:
    """Refuse a part of a new name that not every file system holds well: one with a
    control character (a line break, a tab), or a Windows device name (`CON`, `nul.txt`);
    the error suggests the name with that part changed."""
    segment = parts[at].strip()

    def instead(safe: str) -> str:
        return "/".join([*parts[:at], safe, *parts[at + 1 :]])

    if any(unicodedata.category(char) == "Cc" for char in segment):
        spaced = "".join(" " if unicodedata.category(c) == "Cc" else c for c in segment)
        safe = " ".join(spaced.split()).lstrip(".").strip()
        hint = f", such as {instead(safe)!r}" if slugify(safe) else ""
        raise InvalidNameError(
            f"{name.given!r} cannot be a new page: {segment!r} holds a control character "
            f"(a line break, a tab…), which file names do not hold well. Choose a name "
            f"without one{hint}."
        )
    stem = segment.split(".", 1)[0].rstrip(" ")
    if stem.lower() in WINDOWS_DEVICES:
        safe = instead(f"{stem} page{segment[len(stem) :]}")
        raise InvalidNameError(
            f"{name.given!r} cannot be a new page: Windows keeps the name {stem!r} for a "
            "device (with any extension, in any case), so the file could not be opened "
            f"there. Choose another name, such as {safe!r}."
        )


def new_file_path(name: Name) -> str:
    """The vault-relative file a new page named `name` gets: `a/My Page` → `a/My Page.md`.
    Each part must be a file name Obsidian accepts, on every system a vault may be synced
    to: no control characters, no Windows device name (`CON`, `nul.txt`). The error
    suggests a name that is. (Existing files with any name are pages all the same.)"""
    parts: list[str] = []
    given = name.text.split("/")
    for at, raw in enumerate(given):
        segment = raw.strip()
        bad = sorted({char for char in segment if char in NOT_IN_NEW_NAMES})
        if bad:
            safe = file_name(segment).lstrip(".").strip()
            hint = f" such as {safe!r}" if safe else ""
            raise InvalidNameError(
                f"{name.given!r} cannot be a new page: Obsidian does not allow "
                f"{' '.join(bad)} in file names. Choose a name without them{hint}."
            )
        if segment.startswith("."):
            raise UnsafePathError(
                f"{name.given!r} would make the hidden file or folder {segment!r}; those are "
                "not part of the vault. Start the name with a letter or digit."
            )
        if len(segment) > MAX_SEGMENT_CHARS:
            raise InvalidNameError(
                f"The part {segment[:40]!r}… is longer than {MAX_SEGMENT_CHARS} characters."
            )
        _check_portable(name, given, at)
        if not slugify(segment):
            raise InvalidNameError(
                f"{raw!r} in {name.given!r} has no letters or digits; every new folder and "
                "page name needs some."
            )
        parts.append(segment)
    return "/".join(parts) + ".md"


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


@dataclass(frozen=True, slots=True)
class Resolution:
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
