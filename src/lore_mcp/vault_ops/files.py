"""Page files on disk: finding them (`scan_files`) and writing them safely. Reading and
parsing one is `pagefile`."""

from __future__ import annotations

import logging
import os
import stat
import tempfile
import time
from pathlib import Path
from typing import Literal, NamedTuple

from lore_mcp.config import (
    JOURNAL_FILE,
    LORE_DIR,
)
from lore_mcp.errors import UnsafePathError, VaultError
from lore_mcp.index import FileStamp
from lore_mcp.slugs import is_hidden, path_key
from lore_mcp.vault_ops.ignore import Ignores, leaves_out
from lore_mcp.vault_ops.paths import (
    collides,
    entry_path,
    inside,
    is_text,
    on_disk,
    shown,
)

log = logging.getLogger(__name__)

TEMP_PREFIX = ".lore-tmp-"
STALE_TEMP_SECONDS = 3600


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
