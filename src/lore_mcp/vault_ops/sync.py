"""Keeping the index equal to the files: `sync` compares the files on disk with the
index and applies the difference (see `apply`). Callers hold the vault's lock and a
write transaction.
"""

from __future__ import annotations

import logging
import stat
import time
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

from lore_mcp.config import LARGE_PASS_FILES, PARSE_AHEAD_BYTES
from lore_mcp.index import FileStamp
from lore_mcp.models import SyncReport
from lore_mcp.vault_ops import pagefile
from lore_mcp.vault_ops.apply import Applied, apply
from lore_mcp.vault_ops.core import AppState
from lore_mcp.vault_ops.files import Stamp, scan_files
from lore_mcp.vault_ops.outside import Change, record, remember
from lore_mcp.vault_ops.pagefile import OtherFiles, Parsed, same_bytes
from lore_mcp.vault_ops.paths import real_path
from lore_mcp.vault_ops.readers import in_workers, read_many

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]


def sync(
    vault: AppState,
    scope: Iterable[str] | None = None,
    progress: Progress | None = None,
    *,
    outside: bool = False,
    ours: Collection[str] = (),
    ahead: Ahead | None = None,
) -> SyncReport:
    """Bring the index in line with the files: parse what changed, drop what is gone.
    With `scope` (vault-relative files or folders), only those paths are looked at;
    `ahead` holds pages parsed before the lock was taken (see `Ahead`). With `outside`,
    what changed was changed outside lore (the watcher, the periodic check, a start-up
    pass) and goes on the record (see `outside.record`), but for the files at `ours`,
    which lore changed itself (a rename it finished).
    When it fails, the caller's transaction rolls back, and the graph and slug sets
    (changed already) are marked to be loaded again."""
    started = time.perf_counter()
    done = _sync(vault, scope, progress, ahead)
    if outside and not done.cold:
        changes = [change for change in done.changes if change.path not in ours]
        record(vault, changes, done.applied.created, done.applied.removed)
    return SyncReport(
        pages=len(vault.pages),
        placeholders=len(vault.placeholders),
        links=vault.index.links.count(),
        added=done.counts["added"],
        updated=done.counts["updated"],
        removed=done.counts["removed"],
        unchanged=done.counts["unchanged"],
        skipped=done.skipped,
        seconds=round(time.perf_counter() - started, 3),
    )


def sync_files(vault: AppState, paths: Iterable[str]) -> Applied:
    """Take in the files (or folders) a write just changed, copying what they hold now
    for their history (see `outside.remember`); the placeholders that made and removed.
    Everything is written to the index before this returns, so that the write finds any
    damage before it records itself as done."""
    done = _sync(vault, paths, None, None)
    vault.index.flush()
    remember(vault, done.changes)
    return done.applied


@dataclass(slots=True)
class _Done:
    """What a pass did: the placeholders it made and removed, how many files it added,
    updated, removed and found unchanged, and the files it passed over (with why); the
    page files it found changed, and whether it started from an empty index (`cold`)."""

    applied: Applied
    counts: dict[str, int]
    skipped: list[str]
    changes: list[Change]
    cold: bool


def _sync(
    vault: AppState, scope: Iterable[str] | None, progress: Progress | None, ahead: Ahead | None
) -> _Done:
    generation = vault.generation
    try:
        return _sync_unguarded(vault, scope, progress, ahead)
    except BaseException:
        if vault.generation != generation:
            vault.stale = True
        raise


def _sync_unguarded(
    vault: AppState, scope: Iterable[str] | None, progress: Progress | None, ahead: Ahead | None
) -> _Done:
    plan = _plan(vault, None if scope is None else sorted(set(scope)))
    counts: dict[str, int] = defaultdict(int)
    vanished: list[str] = []
    changes: list[Change] = []

    def pages() -> Iterator[Parsed]:
        for done, (rel, page) in enumerate(
            read_many(
                vault.root,
                plan.todo,
                vault.others,
                vault.readers,
                ahead=_usable(vault, ahead),
                stamps=plan.stamps,
            ),
            1,
        ):
            old = plan.known.get(rel)
            if page is None:
                vanished.append(rel)
                if old is not None:  # it was indexed: a page is gone
                    counts["removed"] += 1
                    changes.append(Change(rel, old.hash, None))
            elif old is not None and old.hash == page.row.hash:
                row = page.row
                vault.index.pages.touch(rel, row.size, row.mtime_ns, row.inode, row.ctime_ns)
                counts["unchanged"] += 1
            else:
                counts["updated" if old is not None else "added"] += 1
                changes.append(Change(rel, None if old is None else old.hash, page.row.hash))
                yield page
            if progress is not None:
                progress(done, len(plan.todo))

    with vault.index.large_cache() if len(plan.todo) >= LARGE_PASS_FILES else nullcontext():
        applied = apply(
            vault,
            pages(),
            plan.removals,
            coming=plan.todo,
            filling=plan.cold,
            # Worker processes keep the second core busy already.
            fill_thread=not in_workers(len(plan.todo), vault.readers),
        )
    if vanished:
        more = apply(vault, [], vanished)
        applied.created += more.created
        applied.removed += more.removed
    counts["removed"] += len(plan.removals)
    counts["unchanged"] += plan.unchanged
    changes += [Change(rel, digest, None) for rel, digest in sorted(plan.removals.items())]
    return _Done(applied, counts, [], changes, plan.cold)


@dataclass(slots=True)
class _Plan:
    """What a pass has to do, decided before it reads a page."""

    todo: list[str]  # the files to read, sorted
    stamps: dict[str, Stamp]  # their stamps, as the pass over the folders found them
    known: dict[str, FileStamp]  # the index rows at those paths
    removals: dict[str, str]  # indexed pages whose files are gone, with their hashes
    unchanged: int  # files found unchanged by their stamps (or their hashes)
    cold: bool  # a pass over every file, and the index held none


def _plan(vault: AppState, scope: list[str] | None) -> _Plan:
    """Compare the files (all, or those under `scope`) with the index: by their stamps,
    and for a file whose stamp says only that it may have changed (its inode or ctime is
    new, its size and mtime are not), by the hash of its bytes; an unchanged one is
    stamped anew, so that the next pass finds it by stat alone."""
    if scope is None:
        others: set[str] = set()
        files = scan_files(vault.root, others=others, ignores=vault.ignores)
        vault.others = OtherFiles()
        for rel in others:
            vault.others.add(rel)
        indexed = vault.index.pages.stamps()
    else:
        files, indexed = _scan_scope(vault, scope)
    gone = {rel: row.hash for rel, row in indexed.items() if rel not in files}
    plan = _Plan([], {}, {}, gone, 0, cold=scope is None and not indexed)
    for rel, stamp in sorted(files.items()):
        row = indexed.get(rel)
        seen = "changed" if row is None else stamp.compare(row)
        if seen == "renewed" and row is not None and (now := same_bytes(vault.root, rel, row.hash)):
            vault.index.pages.touch(rel, *now)
            seen = "same"
        if seen == "same":
            plan.unchanged += 1
        else:
            plan.todo.append(rel)
            plan.stamps[rel] = stamp
            if row is not None:
                plan.known[rel] = row
    return plan


def _scan_scope(vault: AppState, scope: list[str]) -> tuple[dict[str, Stamp], dict[str, FileStamp]]:
    """The files under the given paths, and the index rows that lived there. A path a
    symlink leads out of the vault from holds nothing."""
    files: dict[str, Stamp] = {}
    for rel in scope:
        for gone in vault.others.under(rel):
            vault.others.discard(gone)
        path = real_path(vault.root, rel)
        if path is None or vault.ignores.ignored(rel, path.is_dir()):
            continue  # a symlink out, or left out by an ignore file: nothing is there
        if path.is_dir():
            others: set[str] = set()
            files.update(scan_files(vault.root, rel, others=others, ignores=vault.ignores))

            for other in others:
                vault.others.add(other)
        elif rel.lower().endswith(".md"):
            if (stamp := _stamp(vault.root, rel)) is not None:
                files[rel] = stamp
        elif path.is_file():
            vault.others.add(rel)
    in_scope = vault.index.pages.files_at(scope)
    for rel in scope:
        in_scope.update(vault.index.pages.files_under(rel))
    return files, in_scope


def _stamp(root: Path, rel: str) -> Stamp | None:
    """The stamp of page path `rel` as it is now: None when it is not a regular file, or
    a symlink on the way leads out of the vault (a path the index holds is checked as a
    new one is: a checkout may have made it such a symlink since)."""
    path = real_path(root, rel)
    try:
        st = None if path is None else path.stat()
    except OSError:
        return None
    return Stamp.of(st) if st is not None and stat.S_ISREG(st.st_mode) else None


def forget(vault: AppState, rel_path: str) -> None:
    """Take a file that vanished mid-operation out of the index, in a transaction of its
    own: a change made outside."""
    with vault.index.write():
        sync(vault, scope=[rel_path], outside=True)


# -- big files, parsed before the write lock --------------------------------------------


@dataclass(frozen=True, slots=True)
class Ahead:
    """Pages parsed before the write lock was taken (a big one costs seconds to parse,
    which the lock must not wait for), and the other files (and their version) they
    were parsed against. In the lock, one is used only if its file still holds the same
    bytes and the other files are as they were; else the page is parsed again there."""

    pages: dict[str, Parsed]
    others: OtherFiles
    others_version: int


def parse_ahead(root: Path, rel_paths: Sequence[str], others: OtherFiles) -> Ahead:
    """Parse the page files among `rel_paths` of `PARSE_AHEAD_BYTES` or more, without
    any lock (see `Ahead`); what cannot be read now is left to the pass in the lock."""
    version = others.version
    found: dict[str, Parsed] = {}
    for rel in rel_paths:
        path = real_path(root, rel) if rel.lower().endswith(".md") else None
        try:
            if path is None or path.stat().st_size < PARSE_AHEAD_BYTES:
                continue
            found[rel] = pagefile.parse_page_file(root, rel, others)
        except (OSError, pagefile.Unreadable):
            continue
    return Ahead(found, others, version)


def _usable(vault: AppState, ahead: Ahead | None) -> dict[str, Parsed]:
    """The pages parsed ahead that still hold: the other files are as they were."""
    if ahead is None or (vault.others, vault.others.version) != (
        ahead.others,
        ahead.others_version,
    ):
        return {}
    return ahead.pages
