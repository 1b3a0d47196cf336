"""Names of pages: pure functions that fold paths, names and link targets into keys.

A page is its file: its key is its vault-relative path as on disk (`notes/My Page.md`).
Links and names are compared with paths as Obsidian compares them: without `.md`,
ignoring case, Unicode-normalised (NFC). A slug (`notes/my-page`: lowercased, spaces and
`_` made `-`, the characters link syntax or file systems reserve dropped) is a handle
for a page whose slug no other file shares, and the loosest way a read may find a page;
it is never an identity. A placeholder (a link target with no file) is keyed by its
target's path form, lowercased (`notes/my idea`).

Nothing here holds state but the caches `forget_cached` empties; the sets that look
these keys up, and where a link leads among them, are in `pagesets`.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from urllib.parse import unquote

from lore_mcp.config import MAX_NAME_CHARS, MAX_SEGMENT_CHARS
from lore_mcp.errors import InvalidNameError, UnsafePathError

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
# What `slugify` makes of each ASCII character: spaces and `_` a dash, reserved and control
# characters nothing, the others themselves. ASCII has no symbol such as an emoji: only
# a letter or a digit makes an ASCII slug a name.
_ASCII_SLUG = str.maketrans(
    {
        chr(code): "-" if chr(code).isspace() or chr(code) == "_" else None
        for code in range(128)
        if chr(code) in RESERVED
        or chr(code).isspace()
        or chr(code) == "_"
        or unicodedata.category(chr(code)) == "Cc"
    }
)
_ASCII_WORD = re.compile("[0-9a-z]")
_DRIVE = re.compile(r"^(?:[A-Za-z]:[\\/]|[\\/]{2})")  # C:\..., C:/..., \\server\...


@lru_cache(maxsize=65536)
def slugify(segment: str) -> str:
    """One path segment as a slug: `My Page_1` → `my-page-1`, `C++` → `c++`,
    `v1.1.0` → `v1.1.0`, `🚀 Launch` → `🚀-launch`, `Ünïcode Ω` → `ünïcode-ω`."""
    if segment.isascii():  # the same, by one translation instead of a test a character
        slug = _tidied(segment.lower().translate(_ASCII_SLUG))
        return slug if _ASCII_WORD.search(slug) else ""
    return slugify_each(segment)


def slugify_each(segment: str) -> str:
    """`slugify`, a character at a time: for any segment, where `slugify` takes a
    shorter way for ASCII."""
    kept = (
        "-" if char.isspace() or char == "_" else char
        for char in unicodedata.normalize("NFC", segment.lower())
        if char not in RESERVED and (char.isspace() or unicodedata.category(char) != "Cc")
    )
    slug = _tidied("".join(kept))
    return slug if any(_is_word(char) for char in slug) else ""


def _tidied(slug: str) -> str:
    """A slug's runs of dashes made one, without dashes at its ends or a final dot."""
    if "--" in slug:
        slug = _DASH_RUN.sub("-", slug)
    return slug.strip("-").rstrip(".").strip("-")


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
