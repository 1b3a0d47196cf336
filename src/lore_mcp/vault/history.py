"""The vault's history: the bytes of every version of a page that a save replaced, a
delete removed or a rename rewrote, kept in `.lore/history/<page path>/`.

The history is durable data, apart from the index cache: deleting `.lore/cache/`
loses nothing. Each version is a file of its own, written atomically before the page
changes, named by when it was kept and by which tool and door. Per page, the last
`HISTORY_KEEP_VERSIONS` versions are kept, and every version younger than
`HISTORY_KEEP_DAYS` days, whichever keeps more.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from lore_mcp.config import HISTORY_DIR, HISTORY_KEEP_DAYS, HISTORY_KEEP_VERSIONS, LORE_DIR
from lore_mcp.vault.files import atomic_write, content_hash

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


def _folder(root: Path, rel: str) -> Path:
    return root / LORE_DIR / HISTORY_DIR / rel


def keep(root: Path, rel: str, data: bytes, tool: str, door: str) -> str:
    """Keep `data`, the bytes of the page file `rel` about to change; where they went
    (vault-relative)."""
    folder = _folder(root, rel)
    now = datetime.now(UTC)
    while True:
        name = f"{now.strftime(_STAMP)}.{tool}.{door}.md"
        if not (folder / name).exists():
            break
        now += timedelta(microseconds=1)
    atomic_write(folder / name, data)
    _prune(root, rel, now)
    return (folder / name).relative_to(root).as_posix()


def versions(root: Path, rel: str) -> list[Version]:
    """The kept versions of the page file `rel`, newest first."""
    folder = _folder(root, rel)
    found: list[tuple[datetime, str, str, Path]] = []
    try:
        entries = list(folder.iterdir())
    except OSError:
        return []
    for entry in entries:
        parts = entry.name.split(".")
        if len(parts) != 5 or not entry.is_file():
            continue
        try:
            when = datetime.strptime(f"{parts[0]}.{parts[1]}", _STAMP).replace(tzinfo=UTC)
        except ValueError:
            continue
        found.append((when, parts[2], parts[3], entry))
    found.sort(reverse=True)
    return [
        Version(n, rel, path.relative_to(root).as_posix(), when, tool, door, path.stat().st_size)
        for n, (when, tool, door, path) in enumerate(found, 1)
    ]


def _prune(root: Path, rel: str, now: datetime) -> None:
    oldest = now - timedelta(days=HISTORY_KEEP_DAYS)
    for version in versions(root, rel)[HISTORY_KEEP_VERSIONS:]:
        if version.time < oldest:
            try:
                (root / version.kept).unlink()
            except OSError as exc:
                log.warning("could not prune %s: %s", version.kept, exc)


def page_paths(root: Path) -> list[str]:
    """Every page file that has kept versions, vault-relative, sorted."""
    base = root / LORE_DIR / HISTORY_DIR
    if not base.is_dir():
        return []
    return sorted(
        folder.relative_to(base).as_posix() for folder in base.rglob("*.md") if folder.is_dir()
    )


def size(root: Path) -> tuple[int, int]:
    """How many versions the history holds, and their bytes."""
    base = root / LORE_DIR / HISTORY_DIR
    files = [path for path in base.rglob("*") if path.is_file()] if base.is_dir() else []
    return len(files), sum(path.stat().st_size for path in files)
