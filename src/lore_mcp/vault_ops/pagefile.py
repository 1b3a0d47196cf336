"""One page file read and parsed, ready for the index: its row, text, links, aliases,
tags and search text (`parse`), read safely from the vault (`read_page_file`)."""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import stat
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

from lore_mcp import frontmatter, links
from lore_mcp.config import MAX_CONTEXT_CHARS, MAX_FILE_BYTES, MAX_PAGE_LINKS
from lore_mcp.index import LinkRow, PageRow, SearchText, search_text
from lore_mcp.slugs import Key, target_key, title_from_path
from lore_mcp.vault_ops.files import Stamp
from lore_mcp.vault_ops.paths import on_disk_str, real_path

log = logging.getLogger(__name__)

# A page is opened at its real path: not through a symlink put there since it was resolved,
# and without blocking on a FIFO that an outside program named `x.md`.
_READ_FLAGS = os.O_RDONLY | sum(
    getattr(os, flag, 0) for flag in ("O_NOFOLLOW", "O_NONBLOCK", "O_BINARY")
)


@dataclass(slots=True)
class Parsed:
    """A page file read and parsed, ready to go into the index: its row, its text, and
    its links (not resolved yet: where they lead depends on the other pages)."""

    row: PageRow
    body: str  # the text without its frontmatter
    links: list[LinkRow]
    aliases: list[str]
    tags: list[str]
    search: SearchText  # the text as the search tables hold it
    # Each link's key, as it resolves by: made here, so that in a large pass the reader
    # processes make it (made again where the pass writes, once the caches of keys were
    # full, it took 5 % of that process's time in a first index of 100k pages).
    keys: list[Key]


class OtherFiles:
    """The files of the vault that are not pages, by path and by name (lowercased): a
    link to one of them is an attachment, whatever its extension."""

    def __init__(self) -> None:
        self._paths: set[str] = set()
        self._names: Counter[str] = Counter()
        self.version = 0  # counts changes: a page parsed against other ones is parsed again

    def add(self, rel: str) -> None:
        if (key := rel.lower()) not in self._paths:
            self._paths.add(key)
            self._names[key.rpartition("/")[2]] += 1
            self.version += 1

    def discard(self, rel: str) -> None:
        if (key := rel.lower()) in self._paths:
            self._paths.remove(key)
            self._names[key.rpartition("/")[2]] -= 1
            self.version += 1

    def under(self, folder: str) -> list[str]:
        prefix = folder.lower() + "/"
        return [path for path in self._paths if path == folder.lower() or path.startswith(prefix)]

    def holds(self, target: str) -> bool:
        """Whether a link target names one of these files (by its path or its name)."""
        if not self._paths:
            return False
        key = target.replace("\\", "/").strip().lstrip("./").lower()
        return key in self._paths or self._names[key.rpartition("/")[2]] > 0


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def same_bytes(root: Path, rel_path: str, digest: str) -> Stamp | None:
    """The stamp of page file `rel_path` now, if its bytes still hash to `digest`; None
    when they do not, or it cannot be read."""
    path = real_path(root, rel_path)
    try:
        st, data = (None, None) if path is None else read_regular(path, MAX_FILE_BYTES)
    except OSError:
        return None
    if st is None or data is None or content_hash(data) != digest:
        return None
    return Stamp.of(st)


def decode(data: bytes) -> tuple[str, bool]:
    """The text of a page file; invalid UTF-8 is replaced and reported, never rewritten."""
    try:
        return data.decode("utf-8"), False
    except UnicodeDecodeError:
        return data.decode("utf-8", errors="replace"), True


def parse(
    rel_path: str,
    data: bytes,
    size: int,
    mtime_ns: int,
    others: OtherFiles | None = None,
    *,
    inode: int = 0,
    ctime_ns: int = 0,
) -> Parsed:
    """A page file's row (with the stamp it was read at), text, links, aliases and tags."""
    text, bad = decode(data)
    text = text.removeprefix("\ufeff")
    title = title_from_path(rel_path)
    row = PageRow(
        rel_path, title, rel_path, size, mtime_ns, content_hash(data), bad, inode, ctime_ns
    )
    properties = frontmatter.split(text)
    found = links.scan(text)
    edges, keys = page_links(rel_path, found, others, limit=MAX_PAGE_LINKS + 1)
    if len(edges) > MAX_PAGE_LINKS:  # what one page may cost the index
        log.warning("%s: links after its %d-th are not indexed", rel_path, MAX_PAGE_LINKS)
        del edges[MAX_PAGE_LINKS:], keys[MAX_PAGE_LINKS:]
    body = text[properties.end :]
    return Parsed(
        row,
        body,
        edges,
        properties.aliases,
        list(dict.fromkeys(tag for tag in [*properties.tags, *found.tags])),
        search_text(title, properties.aliases, body),
        keys,
    )


def link_key(link: LinkRow) -> Key:
    """The key a stored link resolves by (its spelling kept, for a tie only case breaks)."""
    return target_key(link.target, link.source) or Key(link.key, link.exact, link.fold)


def page_links(
    source: str, page: links.Scan, others: OtherFiles | None, limit: int | None = None
) -> tuple[list[LinkRow], list[Key]]:
    """The links of the page `source` (its path) that can be graph edges, in order: not
    to a heading of the same page, not to an attachment, with a page-like target; the
    first `limit` of them, with the key each resolves by (`link_key`)."""
    found: list[LinkRow] = []
    keys: list[Key] = []
    contexts: dict[int, str] = {}  # each line's text is cut once, however many links it holds
    for link in page.links:
        if link.is_same_page or link.is_attachment or (others and others.holds(link.target)):
            continue
        key = target_key(link.target, source)
        if key is None:
            continue
        if limit is not None and len(found) >= limit:
            break
        context = contexts.get(link.line)
        if context is None:
            context = contexts[link.line] = page.line_at(link.start).strip()[:MAX_CONTEXT_CHARS]
        found.append(
            LinkRow(source, link.target, link.line, context, key.path, key.exact, key.fold, "")
        )
        keys.append(key)
    return found, keys


class Unreadable(Exception):
    """A page file that cannot go into the index, and why."""


@dataclass(frozen=True, slots=True)
class Seen:
    """A page file as a pass over the folders found it inside the vault (`scan_files`):
    its stamp, and the device of the vault's root."""

    stamp: Stamp
    device: int


def read_page_file(
    root: Path,
    rel_path: str,
    others: OtherFiles | None = None,
    ahead: Parsed | None = None,
    seen: Seen | None = None,
) -> Parsed | None:
    """Read and parse one page file (unless `ahead` is that file's content parsed
    already); None (logged, and said by `unreadable`) if it is gone, unreadable, too
    large, leads out of the vault or cannot be parsed: one file never stops a pass
    over the others. With `seen`, a file that is still the one found there is read
    without resolving its path again (see `_read_seen`)."""
    try:
        return _read_page_file(root, rel_path, others, ahead, seen)
    except Unreadable as exc:
        log.warning("skipping %s: %s", rel_path, exc)
        return None


def parse_page_file(root: Path, rel_path: str, others: OtherFiles | None) -> Parsed:
    """`read_page_file`, raising `Unreadable` (and logging nothing) where it gives None."""
    return _read_page_file(root, rel_path, others, None, None)


def unreadable(root: Path, rel_path: str) -> str | None:
    """Why the page file cannot be indexed, as `read_page_file` logged it; None if it can."""
    try:
        _read_page_file(root, rel_path, None, None, None)
    except Unreadable as exc:
        return str(exc)
    return None


def _read_page_file(
    root: Path, rel_path: str, others: OtherFiles | None, ahead: Parsed | None, seen: Seen | None
) -> Parsed:
    found = _read_seen(root, rel_path, seen) if seen is not None else None
    if found is None:
        path = real_path(root, rel_path)
        if path is None:
            raise Unreadable("a symbolic link on its path leads outside the vault")
        try:
            found = read_regular(path, MAX_FILE_BYTES)
        except OSError as exc:
            raise Unreadable(exc.strerror or str(exc)) from exc
    st, data = found
    if data is None:
        raise Unreadable(f"{st.st_size} bytes is over the {MAX_FILE_BYTES} byte limit")
    if ahead is not None and ahead.row.hash == content_hash(data):
        row = replace(
            ahead.row,
            size=st.st_size,
            mtime_ns=st.st_mtime_ns,
            inode=st.st_ino,
            ctime_ns=st.st_ctime_ns,
        )
        return replace(ahead, row=row)

    try:
        return parse(
            rel_path,
            data,
            st.st_size,
            st.st_mtime_ns,
            others,
            inode=st.st_ino,
            ctime_ns=st.st_ctime_ns,
        )
    except Exception as exc:  # a parser's bug must cost this page only, not the pass
        raise Unreadable(f"it could not be parsed ({type(exc).__name__}: {exc})") from exc


def _read_seen(root: Path, rel_path: str, seen: Seen) -> tuple[os.stat_result, bytes | None] | None:
    """The stat and bytes of the file at `rel_path` when it is the very file a pass
    found there a moment ago (same device, inode and ctime: no other file, inside the
    vault or out, can be), opened without following a symlink in its own place; None
    when that cannot be told, and the path must be resolved (`real_path`) first. The
    pass found it in real folders inside the vault, so no symlink put on its way since
    can lead the read anywhere else: that would open another file."""
    if not seen.stamp.inode:
        return None
    found = (seen.device, seen.stamp.inode, seen.stamp.ctime_ns)
    try:
        return read_regular(on_disk_str(root, rel_path), MAX_FILE_BYTES, expect=found)
    except OSError:
        return None


def read_regular(
    path: Path | str, limit: int | None = None, *, expect: tuple[int, int, int] | None = None
) -> tuple[os.stat_result, bytes | None]:
    """The stat and bytes of the regular file at `path` (a real path: a symlink put there
    since is not followed, and a FIFO or device does not block); None for the bytes when
    it is over `limit`. OSError when it is not there, or not a regular file, or (with
    `expect`) not the file of that device, inode and ctime, whose bytes are then not read."""
    fd = os.open(path, _READ_FLAGS)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        if expect is not None and (st.st_dev, st.st_ino, st.st_ctime_ns) != expect:
            raise OSError(errno.ESTALE, "not the file found there")
        if limit is not None and st.st_size > limit:
            return st, None
        # Up to the end, even if the file grew since fstat (unbuffered): one read when it
        # gives the size fstat said, as it does unless the file changed meanwhile.
        first = os.read(fd, st.st_size + 1)
        if len(first) == st.st_size:
            return st, first
        parts = [first]
        while parts[-1]:
            parts.append(os.read(fd, max(st.st_size, 65536)))
        return st, b"".join(parts)
    finally:
        os.close(fd)
