"""Page files on disk: finding them, reading and parsing them, writing them safely.

Reading many files is the bulk of a cold index; `read_pages` spreads it over worker
processes when there is enough of it to pay for their start-up.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path

from lore_mcp import links as linkparse
from lore_mcp.errors import VaultError
from lore_mcp.index import PageRow
from lore_mcp.slugs import slug_from_path, title_from_path

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 20 * 1024 * 1024
PARALLEL_MIN_FILES = 1500
# On two cores the workers' start-up and the pickling of results ate most of the gain
# (10k pages: 5.9 s read alone, 5.1 s with two workers) and doubled peak memory.
PARALLEL_MIN_CPUS = 4
TEMP_PREFIX = ".lore-tmp-"
STALE_TEMP_SECONDS = 3600
_CHUNK_FILES = 250


@dataclass(slots=True)
class Parsed:
    """A page file read and parsed, ready to be applied."""

    row: PageRow
    body: str
    links: list[linkparse.Link]


def content_hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def decode(data: bytes) -> tuple[str, bool]:
    """The text of a page file; invalid UTF-8 is replaced and reported, never rewritten."""
    try:
        return data.decode("utf-8"), False
    except UnicodeDecodeError:
        return data.decode("utf-8", errors="replace"), True


def parse(rel_path: str, data: bytes, size: int, mtime_ns: int) -> Parsed:
    text, bad = decode(data)
    if text.startswith("\ufeff"):
        text = text[1:]
    row = PageRow(
        slug_from_path(rel_path),
        title_from_path(rel_path),
        rel_path,
        size,
        mtime_ns,
        content_hash(data),
        bad,
    )
    return Parsed(row, text, linkparse.extract_links(text))


def read_page_file(root: Path | str, rel_path: str) -> Parsed | None:
    """Read and parse one page file (already known to lie inside the vault); None if it
    is gone, unreadable or too large."""
    path = os.path.join(root, rel_path)
    try:
        with open(path, "rb") as handle:
            st = os.fstat(handle.fileno())
            if st.st_size > MAX_FILE_BYTES:
                log.warning(
                    "skipping %s: %d bytes is over the %d byte limit",
                    rel_path,
                    st.st_size,
                    MAX_FILE_BYTES,
                )
                return None
            data = handle.read()
    except OSError as exc:
        log.warning("skipping %s: %s", rel_path, exc)
        return None
    return parse(rel_path, data, st.st_size, st.st_mtime_ns)


def inside(root: Path, path: Path) -> bool:
    """True when `path`, with symlinks followed, stays inside `root` (already resolved)."""
    try:
        return path.resolve().is_relative_to(root)
    except OSError:
        return False


def scan_files(root: Path, under: str = "") -> dict[str, os.stat_result]:
    """Every page file under the root (or its folder `under`): `.md`, outside
    dot-folders, not a symlink leading outside the root. Folder symlinks are not
    followed."""
    found: dict[str, os.stat_result] = {}
    real_root = root.resolve()
    pending = [(os.path.join(root, under) if under else str(root), under)]
    while pending:
        folder, rel_folder = pending.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError as exc:
            log.warning("skipping folder %s: %s", rel_folder or ".", exc)
            continue
        for entry in entries:
            if entry.name.startswith(TEMP_PREFIX):
                _remove_if_stale(entry)
            if entry.name.startswith("."):
                continue
            rel = f"{rel_folder}/{entry.name}" if rel_folder else entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    pending.append((entry.path, rel))
                elif entry.name.lower().endswith(".md"):
                    if entry.is_symlink() and not inside(real_root, Path(entry.path)):
                        log.warning("skipping %s: symlink leads outside the vault", rel)
                        continue
                    found[rel] = entry.stat()
            except OSError as exc:
                log.warning("skipping %s: %s", rel, exc)
    return found


def _read_chunk(root: str, rel_paths: Sequence[str]) -> list[tuple[str, Parsed | None]]:
    return [(rel, read_page_file(root, rel)) for rel in rel_paths]


def read_pages(
    root: Path, rel_paths: Sequence[str], workers: int | None = None
) -> Iterator[tuple[str, Parsed | None]]:
    """Read and parse many page files, in order. `workers` processes share the work
    (by default: when there are many files and at least PARALLEL_MIN_CPUS CPUs); if they
    cannot run, the rest is read here."""
    if workers is None:
        cpus = os.cpu_count() or 1
        many = len(rel_paths) >= PARALLEL_MIN_FILES and cpus >= PARALLEL_MIN_CPUS
        workers = min(cpus, 8) if many else 0
    done = 0
    if workers > 1:
        chunks = [rel_paths[i : i + _CHUNK_FILES] for i in range(0, len(rel_paths), _CHUNK_FILES)]
        try:
            # spawn: the server has threads running, and fork would copy their locks.
            with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
                for results in pool.map(_read_chunk, [str(root)] * len(chunks), chunks):
                    yield from results
                    done += len(results)
        except (BrokenProcessPool, OSError) as exc:
            log.warning("reading pages in worker processes failed (%s); reading them here", exc)
    for rel in rel_paths[done:]:
        yield rel, read_page_file(root, rel)


def _remove_if_stale(entry: os.DirEntry[str]) -> None:
    """A temp file of ours left by a write that was killed: gone once surely abandoned."""
    try:
        if time.time() - entry.stat(follow_symlinks=False).st_mtime > STALE_TEMP_SECONDS:
            Path(entry.path).unlink()
            log.info("removed %s, left behind by an interrupted write", entry.path)
    except OSError:
        pass


def atomic_write(path: Path, data: bytes) -> None:
    """Write via a hidden temp file, fsync, and rename: the old or the new content,
    never a torn file."""
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
        mode = path.stat().st_mode & 0o7777 if path.exists() else 0o644
        Path(tmp).chmod(mode)
        Path(tmp).replace(path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
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
