"""Page files on disk: finding them, reading and parsing them, writing them safely."""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import stat
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal, NamedTuple

from lore_mcp import frontmatter, links
from lore_mcp.config import (
    JOURNAL_FILE,
    LORE_DIR,
    MAX_CONTEXT_CHARS,
    MAX_FILE_BYTES,
    MAX_PAGE_LINKS,
)
from lore_mcp.errors import UnsafePathError, VaultError
from lore_mcp.index import FileStamp, LinkRow, PageRow, SearchText, search_text
from lore_mcp.slugs import is_hidden, path_key, target_key, title_from_path
from lore_mcp.vault_ops.ignore import Ignores, leaves_out
from lore_mcp.vault_ops.paths import (
    collides,
    entry_path,
    inside,
    is_text,
    on_disk,
    real_path,
    shown,
)

log = logging.getLogger(__name__)

TEMP_PREFIX = ".lore-tmp-"
STALE_TEMP_SECONDS = 3600
# A page is opened at its real path: not through a symlink put there since it was resolved,
# and without blocking on a FIFO that an outside program named `x.md`.
_READ_FLAGS = os.O_RDONLY | sum(
    getattr(os, flag, 0) for flag in ("O_NOFOLLOW", "O_NONBLOCK", "O_BINARY")
)


class Stamp(NamedTuple):
    """What a pass over the files compares with the index: a file's size and mtime, and
    its inode and ctime, which tell an edit that kept size and mtime (`cp -p`, `rsync
    -t`): writing the bytes, or putting another file in its place, changes them."""

    size: int
    mtime_ns: int
    inode: int
    ctime_ns: int

    @classmethod
    def of(cls, st: os.stat_result) -> Stamp:
        return cls(st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)

    def compare(self, row: FileStamp) -> Literal["same", "renewed", "changed"]:
        """`changed` when the size or mtime is not the indexed one; else `renewed` when
        the inode (where both are known: a directory listing on Windows gives none) or
        the ctime is not, so the bytes may have changed and only their hash can tell."""
        if (self.size, self.mtime_ns) != (row.size, row.mtime_ns):
            return "changed"
        other_inode = self.inode not in (row.inode, 0) and row.inode != 0
        return "renewed" if other_inode or self.ctime_ns != row.ctime_ns else "same"


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
    edges = page_links(rel_path, found, others, limit=MAX_PAGE_LINKS + 1)
    if len(edges) > MAX_PAGE_LINKS:  # what one page may cost the index
        log.warning("%s: links after its %d-th are not indexed", rel_path, MAX_PAGE_LINKS)
        del edges[MAX_PAGE_LINKS:]
    body = text[properties.end :]
    return Parsed(
        row,
        body,
        edges,
        properties.aliases,
        list(dict.fromkeys(tag for tag in [*properties.tags, *found.tags])),
        search_text(title, properties.aliases, body),
    )


def page_links(
    source: str, page: links.Scan, others: OtherFiles | None, limit: int | None = None
) -> list[LinkRow]:
    """The links of the page `source` (its path) that can be graph edges, in order: not
    to a heading of the same page, not to an attachment, with a page-like target; the
    first `limit` of them."""
    found: list[LinkRow] = []
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
            context = contexts[link.line] = page.line_text(link.line).strip()[:MAX_CONTEXT_CHARS]
        found.append(
            LinkRow(source, link.target, link.line, context, key.path, key.exact, key.fold, "")
        )
    return found


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
        return read_regular(on_disk(root, rel_path), MAX_FILE_BYTES, expect=found)
    except OSError:
        return None


def read_regular(
    path: Path, limit: int | None = None, *, expect: tuple[int, int, int] | None = None
) -> tuple[os.stat_result, bytes | None]:
    """The stat and bytes of the regular file at `path` (a real path: a symlink put there
    since is not followed, and a FIFO or device does not block); None for the bytes when
    it is over `limit`. OSError when it is not there, or not a regular file, or (with
    `expect`) not the file of that device, inode and ctime, whose bytes are then not read."""
    fd = os.open(path, _READ_FLAGS)
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        if expect is not None and (st.st_dev, st.st_ino, st.st_ctime_ns) != expect:
            raise OSError(errno.ESTALE, "not the file found there")

        if limit is not None and st.st_size > limit:
            return st, None
        return st, handle.read()


def spelled_on_disk(root: Path, rel: str) -> str:
    """`rel` with each folder spelled as the existing folder of that name is, ignoring
    case: a new page in `projects/` lands in `Projects/` when that is there."""
    *folders, name = rel.split("/")
    spelled: list[str] = []
    for segment in folders:
        here = on_disk(root, "/".join(spelled))
        if on_disk(root, "/".join([*spelled, segment])).is_dir():
            spelled.append(segment)
            continue
        try:
            names = sorted(
                shown(e.name) for e in os.scandir(here) if e.is_dir(follow_symlinks=False)
            )
        except OSError:
            names = []
        same = (n for n in names if not n.startswith(".") and path_key(n) == path_key(segment))
        spelled.append(next(same, segment))
    return "/".join([*spelled, name])


def ignored(rel_path: str) -> bool:
    """Paths that are never part of the vault: dot-files and dot-folders (`.lore/` too)."""
    return is_hidden(rel_path) or rel_path.split("/", 1)[0] == LORE_DIR


def scan_files(
    root: Path,
    under: str = "",
    others: set[str] | None = None,
    *,
    warn: bool = True,
    skipped: dict[str, str] | None = None,
    ignores: Ignores | None = None,
    ignored: list[str] | None = None,
) -> dict[str, Stamp]:
    """Every page file under the root (or its folder `under`), by page path (see
    `paths.shown`): a regular `.md` file, outside dot-folders, not a symlink leading
    outside the root; the other files go to `others`. Folder symlinks are not followed.
    Temp files left by a killed write are removed once surely abandoned (not while a
    write's journal is there: they may hold the bytes it is to put in place). What is skipped
    is logged (unless `warn` is false: a check that runs every minute would repeat it)
    and put in `skipped` with why. What the vault's ignore files leave out (`ignores`,
    see `ignore`) is not looked into, and goes to `ignored` (files and whole folders)."""
    say = log.warning if warn else log.debug

    def skip(rel: str, why: str) -> None:
        say("skipping %s: %s", rel, why)
        if skipped is not None:
            skipped[rel] = why

    found: dict[str, Stamp] = {}
    real_root = root.resolve()
    rules = ignores or Ignores(root)
    unfinished = (root / LORE_DIR / JOURNAL_FILE).exists()
    pending = [(on_disk(root, under) if under else root, under, rules.above(under))]
    while pending:
        folder, rel_folder, chain = pending.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError as exc:
            say("skipping folder %s: %s", rel_folder or ".", exc)
            continue
        names = frozenset(entry.name for entry in entries)
        chain = rules.below(chain, rel_folder, names)
        for entry in entries:
            if _hidden(entry, sweep=not unfinished):
                continue
            name = shown(entry.name)
            rel = f"{rel_folder}/{name}" if rel_folder else name
            if not is_text(name):
                skip(rel, "its name is not valid Unicode")
                continue
            if collides(entry.name, names):
                skip(rel, f"another file in its folder is named {name!r}")
                continue
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
                if chain and leaves_out(chain, rel, is_dir):
                    if ignored is not None:
                        ignored.append(rel)
                    continue
                if is_dir:
                    pending.append((Path(entry.path), rel, chain))
                elif entry.name.lower().endswith(".md"):
                    if entry.is_symlink() and not inside(real_root, Path(entry.path)):
                        skip(rel, "a symbolic link that leads outside the vault")
                    elif not stat.S_ISREG((st := entry.stat()).st_mode):
                        skip(rel, "not a regular file")
                    else:
                        found[rel] = Stamp.of(st)
                elif others is not None:
                    others.add(rel)
            except OSError as exc:
                skip(rel, exc.strerror or str(exc))
    return found


def _hidden(entry: os.DirEntry[str], *, sweep: bool) -> bool:
    """Whether the entry is a dot-file or dot-folder (no part of the vault); with
    `sweep`, a temp file a killed write left is removed once surely abandoned."""
    if sweep and entry.name.startswith(TEMP_PREFIX):
        _remove_if_stale(entry)
    return entry.name.startswith(".")


def _remove_if_stale(entry: os.DirEntry[str]) -> None:
    try:
        if time.time() - entry.stat(follow_symlinks=False).st_mtime > STALE_TEMP_SECONDS:
            Path(entry.path).unlink()
            log.info("removed %s, left behind by an interrupted write", entry.path)
    except OSError:
        pass


def page_entry(root: Path, rel: str) -> Path:
    """Where a write, move or delete of page path `rel` acts (see `paths.entry_path`);
    UnsafePathError when a folder on its path is a symlink leading out of the vault."""
    path = entry_path(root, rel)
    if path is None:
        raise UnsafePathError(
            f"{rel!r} would be written outside the vault (a folder on its path is a "
            "symbolic link that leads out). Choose a name in another folder."
        )
    return path


def atomic_write(path: Path, data: bytes) -> None:
    """Write via a hidden temp file, fsync, and rename: the old or the new content,
    never a torn file."""
    temp = prepare(path, data)[0]
    try:
        put_in_place(temp, path)
    except VaultError:
        temp.unlink(missing_ok=True)
        raise


def prepare(path: Path, data: bytes, mode_of: Path | None = None) -> tuple[Path, os.stat_result]:
    """The first half of an atomic write: `data` in a hidden temp file beside `path`
    (its folders made), fsynced, with the mode of the file it is to replace (or of
    `mode_of`, a file that moves there first); the temp file and its stat (which `path`
    has once it is put in place: a rename keeps size and modification time).
    VaultError when it cannot be written, with nothing left."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=TEMP_PREFIX, suffix=".md~")
    except OSError as exc:
        raise VaultError(f"Cannot write {path.name!r}: {exc.strerror or exc}.") from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        like = mode_of or path
        mode = like.stat().st_mode & 0o7777 if like.exists() else 0o644
        Path(tmp).chmod(mode)
        return Path(tmp), Path(tmp).stat()
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise VaultError(f"Cannot write {path.name!r}: {exc.strerror or exc}.") from exc


def put_in_place(temp: Path, path: Path) -> None:
    """The second half: rename the temp file over `path`, and make that durable."""
    try:
        temp.replace(path)
    except OSError as exc:
        raise VaultError(f"Cannot write {path.name!r}: {exc.strerror or exc}.") from exc
    fsync_dir(path.parent)


def fsync_dir(folder: Path) -> None:
    """Make a rename in `folder` durable (where the platform allows)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
