"""The vault's history: the bytes of every version of a page that a save replaced, a
delete removed or a rename rewrote, kept in `.lore/history/<page path>/`.

The history is durable data, apart from the index cache: deleting `.lore/cache/`
loses nothing. Each version is a file of its own, made durable before the page
changes, named by when it was kept and by which tool and door. Where it can, the
history takes the replaced file itself (a second name for it, a hard link) instead of
copying its bytes: the page then gets a new file, so the kept one never changes. Per
page, the last `HISTORY_KEEP_VERSIONS` versions are kept, and every version younger
than `HISTORY_KEEP_DAYS` days, whichever keeps more.

The history follows a page through renames: a rename moves the versions of the page's
old path to its new one (`folder_of`, carried out by the rename's `journal`), so the
history of `Final.md` holds what `Draft.md` kept before `Draft` became `Final`.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from lore_mcp.config import HISTORY_DIR, HISTORY_KEEP_DAYS, HISTORY_KEEP_VERSIONS, LORE_DIR
from lore_mcp.slugs import Key, path_key, slug_from_path
from lore_mcp.vault_ops.files import atomic_write, fsync_dir
from lore_mcp.vault_ops.pagefile import content_hash
from lore_mcp.vault_ops.paths import entry_path

log = logging.getLogger(__name__)

_STAMP = "%Y%m%dT%H%M%S.%fZ"


@dataclass(frozen=True, slots=True)
class Version:
    """One kept version of a page file; `number` 1 is the newest."""

    number: int
    path: str  # the page file it was, vault-relative
    kept: str  # where its bytes are, vault-relative
    time: datetime
    tool: str
    door: str
    size: int

    def read(self, root: Path) -> bytes:
        return (root / self.kept).read_bytes()

    def hash(self, root: Path) -> str:
        return content_hash(self.read(root))


def folder_of(rel: str) -> str:
    """Where the versions of the page file `rel` are kept, vault-relative."""
    return f"{LORE_DIR}/{HISTORY_DIR}/{rel}"


def _folder(root: Path, rel: str) -> Path:
    return root / folder_of(rel)


def keep(root: Path, rel: str, data: bytes, tool: str, door: str) -> str:
    """Keep `data`, the bytes of the page file `rel` about to change; where they went
    (vault-relative). The write that keeps it takes it back if it fails before its
    commit point (see `journal`)."""

    folder = _folder(root, rel)
    now, name = _new_name(folder, tool, door)
    if not _link(entry_path(root, rel), folder / name, data):
        atomic_write(folder / name, data)
    _prune(folder, now)
    return (folder / name).relative_to(root).as_posix()


def keep_copy(root: Path, rel: str, copy: Path, tool: str, door: str) -> str:
    """Keep the file `copy`, a copy lore made of a version of the page file `rel` that
    an outside program has since replaced, as a version: moved in, made durable (its
    bytes copied when it is on another file system); where it went, vault-relative."""
    folder = _folder(root, rel)
    now, name = _new_name(folder, tool, door)
    folder.mkdir(parents=True, exist_ok=True)
    try:
        copy.replace(folder / name)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        atomic_write(folder / name, copy.read_bytes())
    else:
        try:  # the copy was written unsynced: it was only a copy then
            with (folder / name).open("rb") as handle:
                os.fsync(handle.fileno())
        except OSError as exc:
            log.warning("could not make %s durable: %s", folder / name, exc)
        fsync_dir(folder)
    _prune(folder, now)
    return (folder / name).relative_to(root).as_posix()


def _new_name(folder: Path, tool: str, door: str) -> tuple[datetime, str]:
    """A name for a version kept now in `folder` by `tool` through `door`, and its time."""
    now = datetime.now(UTC)
    while True:
        name = f"{now.strftime(_STAMP)}.{tool}.{door}.md"
        if not (folder / name).exists():
            return now, name
        now += timedelta(microseconds=1)


def _link(page: Path | None, kept: Path, data: bytes) -> bool:
    """Give the page file a second name in the history, when it holds exactly `data`,
    has no other name and is a file of the vault (`page` is None when its folder leads
    out; a symlink is not linked); False when it cannot (the bytes are then copied: the
    caller read them at the page's real path). A file swapped in since is caught by
    comparing the linked bytes with `data`."""
    if page is None:
        return False
    try:
        found = os.lstat(page)
        if not stat.S_ISREG(found.st_mode) or found.st_nlink != 1:
            return False
        kept.parent.mkdir(parents=True, exist_ok=True)
        os.link(page, kept)
    except OSError:
        return False
    try:
        with kept.open("rb") as handle:
            if handle.read() == data:  # not changed since it was read
                os.fsync(handle.fileno())  # another program may have written it unsynced
                fsync_dir(kept.parent)
                return True
    except OSError:
        pass
    kept.unlink(missing_ok=True)
    return False


def _parse(name: str) -> tuple[datetime, str, str] | None:
    """When a version file was kept, by which tool and door; None for another file."""
    parts = name.split(".")
    if len(parts) != 5:
        return None
    try:
        when = datetime.strptime(f"{parts[0]}.{parts[1]}", _STAMP).replace(tzinfo=UTC)
    except ValueError:
        return None
    return when, parts[2], parts[3]


def versions(root: Path, rel: str) -> list[Version]:
    """The kept versions of the page file `rel`, newest first."""
    folder = _folder(root, rel)
    found: list[tuple[datetime, str, str, Path]] = []
    try:
        entries = list(folder.iterdir())
    except OSError:
        return []
    for entry in entries:
        if (parsed := _parse(entry.name)) is not None and entry.is_file():
            found.append((*parsed, entry))
    found.sort(reverse=True)
    return [
        Version(n, rel, path.relative_to(root).as_posix(), when, tool, door, path.stat().st_size)
        for n, (when, tool, door, path) in enumerate(found, 1)
    ]


def count(root: Path, rel: str | None, key: str) -> int:
    """How many versions are kept of the page file `rel`; for a placeholder (`rel` None,
    `key` its link key), of the deleted page file that key names."""
    if rel is None:
        rel = find(root, Key(key, False, slug_from_path(key)))
    return 0 if rel is None else len(versions(root, rel))


def find(root: Path, key: Key) -> str | None:
    """The page file with kept versions at the path `key` names, or whose path ends
    with it; else whose slug is, or ends with, its slug form: where the history of a
    deleted page is, asked for by name."""
    kept = page_paths(root)
    for form, wanted in ((path_key, key.path), (slug_from_path, key.fold)):
        for rel in kept:
            found = form(rel)
            if wanted and (found == wanted or (not key.exact and found.endswith("/" + wanted))):
                return rel
    return None


def _prune(folder: Path, now: datetime) -> None:
    """Remove the versions beyond the last `HISTORY_KEEP_VERSIONS` that are older than
    `HISTORY_KEEP_DAYS` days. The names sort as the times they hold."""
    try:
        names = sorted((entry.name for entry in folder.iterdir()), reverse=True)
    except OSError:
        return
    if len(names) <= HISTORY_KEEP_VERSIONS:
        return
    oldest = now - timedelta(days=HISTORY_KEEP_DAYS)
    kept = [(name, parsed[0]) for name in names if (parsed := _parse(name)) is not None]
    for name, when in kept[HISTORY_KEEP_VERSIONS:]:
        if when < oldest:
            try:
                (folder / name).unlink()
            except OSError as exc:
                log.warning("could not prune %s: %s", folder / name, exc)


def page_paths(root: Path) -> list[str]:
    """Every page file that has kept versions, vault-relative, sorted. (A walk that
    takes folders from the directory listing: read_page of a placeholder asks, so no
    version file is looked at one by one.)"""
    base = root / LORE_DIR / HISTORY_DIR
    found = [
        Path(folder, name).relative_to(base).as_posix()
        for folder, names, _ in os.walk(base)
        for name in names
        if name.lower().endswith(".md")
    ]
    return sorted(found)


def size(root: Path) -> tuple[int, int]:
    """How many versions the history holds, and their bytes."""
    base = root / LORE_DIR / HISTORY_DIR
    files = [path for path in base.rglob("*") if path.is_file()] if base.is_dir() else []
    return len(files), sum(path.stat().st_size for path in files)
