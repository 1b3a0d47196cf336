"""Page paths and the files they are: names the file system gives that are not UTF-8,
and symlinks that lead out of the vault.

A page path is text (it goes into SQLite, JSON and links). On Linux a file name is bytes,
and Python gives bytes that are not UTF-8 as lone surrogates, which neither SQLite nor
JSON can carry. `shown` writes each such byte as a percent-escape (`caf\\xe9.md` is
`caf%E9.md`) and, in such a name only, `%` as `%25`, so the name maps back to its bytes
(`on_disk`). A name that is valid UTF-8 is never changed. Should a file be named as
another's escaped name shows, the one whose name is valid UTF-8 keeps it (`collides`).

Every read, write, stamp and history link goes through `real_path` or `entry_path`,
resolved at the time of use: a page that a checkout later turns into a symlink out of the
vault is no longer a page, and nothing is read from or written through it.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote_to_bytes

_ESCAPED = range(0xDC80, 0xDD00)  # the surrogates `surrogateescape` makes of bytes 0x80-0xFF


def shown(name: str) -> str:
    """A file name (or a path of them) as the file system gives it, as a page path: in
    each name that is not UTF-8, each byte that does not decode as `%XX`, and then `%` as
    `%25`. A name that is valid UTF-8 is unchanged."""
    if name.isascii() or not any(0xD800 <= ord(c) < 0xE000 for c in name):
        return name
    return "/".join(_shown(segment) for segment in name.split("/"))


def _shown(name: str) -> str:
    if not any(ord(c) in _ESCAPED for c in name):
        return name
    return "".join(
        f"%{ord(c) - 0xDC00:02X}" if ord(c) in _ESCAPED else "%25" if c == "%" else c for c in name
    )


def is_text(name: str) -> bool:
    """Whether `name` can be stored as text (no lone surrogate `shown` left in it: on a
    file system whose names are UTF-16, such as Windows', a name can hold one)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def collides(name: str, siblings: set[str] | frozenset[str]) -> bool:
    """Whether the file `name` (as the file system gives it) shows as the name of another
    file among `siblings` (the names in its folder), which is valid UTF-8 and keeps it."""
    show = shown(name)
    return show != name and show in siblings


def on_disk(root: Path, rel: str) -> Path:
    """The path of page path `rel` under `root`: each segment that `shown` escaped turned
    back into its bytes, when a file of those bytes exists and none of the name as written
    (a page made by a tool is named as written)."""
    if "%" not in rel:
        return root / rel
    path = root
    for segment in rel.split("/"):
        path /= _segment(path, segment)
    return path


def on_disk_str(root: Path, rel: str) -> str:
    """`on_disk` as a string, joined without pathlib where no segment is escaped (a
    pass over the folders opens every page file by it: pathlib took 4 % of a first index)."""
    return os.path.join(root, rel) if "%" not in rel else str(on_disk(root, rel))


def _segment(folder: Path, segment: str) -> str:
    if "%" not in segment or os.path.lexists(folder / segment):
        return segment
    raw = os.fsdecode(unquote_to_bytes(segment))
    if shown(raw) == segment and os.path.lexists(folder / raw):
        return raw
    return segment


def inside(root: Path, path: Path) -> bool:
    """True when `path`, with symlinks followed, stays inside `root` (already resolved)."""
    try:
        return path.resolve().is_relative_to(root)
    except (OSError, RuntimeError):  # a symlink loop
        return False


def real_path(root: Path, rel: str) -> Path | None:
    """The file page path `rel` is, every symlink on the way followed, when it is inside
    `root` (resolved); None when a symlink leads out (or round in a loop). For reading."""
    try:
        path = on_disk(root, rel).resolve()
    except (OSError, RuntimeError):
        return None
    return path if path.is_relative_to(root) else None


def entry_path(root: Path, rel: str) -> Path | None:
    """Where page path `rel` is as a folder entry: its folder with symlinks followed, when
    that is inside `root`, then its own name, not followed (a symlink there is itself
    replaced, moved or removed). None when the folder leads out. For writing."""
    path = on_disk(root, rel)
    try:
        folder = path.parent.resolve()
    except (OSError, RuntimeError):
        return None
    return folder / path.name if folder.is_relative_to(root) else None
