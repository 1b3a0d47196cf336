"""Keeping the index equal to the files: `sync` compares the files on disk with the
index and applies the difference (see `apply`). Callers hold the vault's lock and a
write transaction.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

from lore_mcp.config import LARGE_PASS_FILES
from lore_mcp.index import FileStamp
from lore_mcp.models import SyncReport
from lore_mcp.slugs import slug_from_path
from lore_mcp.vault_ops.apply import Applied, apply
from lore_mcp.vault_ops.core import AppState
from lore_mcp.vault_ops.files import OtherFiles, Parsed, Stamp, inside, read_many, scan_files

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]


def sync(
    vault: AppState, scope: Iterable[str] | None = None, progress: Progress | None = None
) -> SyncReport:
    """Bring the index in line with the files: parse what changed, drop what is gone.
    With `scope` (vault-relative files or folders), only those paths are looked at.
    When it fails, the caller's transaction rolls back, and the graph and slug sets
    (changed already) are marked to be loaded again."""
    started = time.perf_counter()
    done = _sync(vault, scope, progress)
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
    """Take in the files (or folders) a write just changed; the placeholders that made
    and removed. Everything is written to the index before this returns, so that the
    write finds any damage before it records itself as done."""
    applied = _sync(vault, paths, None).applied
    vault.index.flush()
    return applied


@dataclass(slots=True)
class _Done:
    """What a pass did: the placeholders it made and removed, how many files it added,
    updated, removed and found unchanged, and the files it passed over (with why)."""

    applied: Applied
    counts: dict[str, int]
    skipped: list[str]


def _sync(vault: AppState, scope: Iterable[str] | None, progress: Progress | None) -> _Done:
    generation = vault.generation
    try:
        return _sync_unguarded(vault, scope, progress)
    except BaseException:
        if vault.generation != generation:
            vault.stale = True
        raise


def _sync_unguarded(
    vault: AppState, scope: Iterable[str] | None, progress: Progress | None
) -> _Done:
    plan = _plan(vault, None if scope is None else sorted(set(scope)))
    counts: dict[str, int] = defaultdict(int)
    vanished: list[str] = []

    def pages() -> Iterator[Parsed]:
        todo = sorted(plan.todo)
        for done, (rel, page) in enumerate(
            read_many(vault.root, todo, vault.others, vault.readers), 1
        ):
            slug = plan.todo[rel]
            old = plan.known.get(rel)
            if page is None:
                vanished.append(slug)
                if old is not None:  # it was indexed: a page is gone
                    counts["removed"] += 1
            elif old is not None and (old.slug, old.hash) == (slug, page.row.hash):
                vault.index.pages.touch(slug, page.row.size, page.row.mtime_ns)
                counts["unchanged"] += 1
            else:
                counts["updated" if old is not None and old.slug == slug else "added"] += 1
                yield page
            if progress is not None:
                progress(done, len(plan.todo))

    with vault.index.large_cache() if len(plan.todo) >= LARGE_PASS_FILES else nullcontext():
        applied = apply(vault, pages(), plan.removals, coming=plan.todo.values())
    if vanished:
        more = apply(vault, [], vanished)
        applied.created += more.created
        applied.removed += more.removed
    counts["removed"] += len(plan.removals - set(plan.todo.values()))
    counts["unchanged"] += plan.unchanged
    return _Done(applied, counts, plan.skipped)


@dataclass(slots=True)
class _Plan:
    """What a pass has to do, decided before it reads a page."""

    todo: dict[str, str]  # path -> slug of the files to read
    known: dict[str, FileStamp]  # the index rows at those paths
    removals: set[str]  # slugs whose files are gone
    skipped: list[str]  # files not indexed, and why
    unchanged: int  # files found unchanged by their stamps


def _plan(vault: AppState, scope: list[str] | None) -> _Plan:
    """Compare the files (all, or those under `scope`) with the index."""
    table = vault.index.pages
    if scope is None:
        others: set[str] = set()
        files = scan_files(vault.root, others=others)
        vault.others = OtherFiles()
        for rel in others:
            vault.others.add(rel)
        in_scope = table.stamps()
    else:
        files, in_scope = _scan_scope(vault, scope)
    # Files that share a slug with one in scope compete for it, as in a full pass.
    named = {rel: slug_from_path(rel) for rel in files}
    wanted = set(named.values()) | {row.slug for row in in_scope.values()}
    holders = table.files_of(sorted(wanted))
    for rel in [*holders, *(path for path, slug in table.shadowed() if slug in wanted)]:
        if rel not in files and (stamp := _stamp(vault.root, rel)) is not None:
            files[rel], named[rel] = stamp, slug_from_path(rel)
    known = in_scope | holders
    winners, skipped = _winners(vault, named, full=scope is None)
    plan = _Plan({}, {}, {r.slug for r in known.values() if r.slug not in winners}, skipped, 0)
    for slug, rel in winners.items():
        row = known.get(rel)
        if row is not None and row.slug == slug and (row.size, row.mtime_ns) == files[rel]:
            plan.unchanged += 1
        else:
            plan.todo[rel] = slug
            if row is not None:
                plan.known[rel] = row
    return plan


def _scan_scope(vault: AppState, scope: list[str]) -> tuple[dict[str, Stamp], dict[str, FileStamp]]:
    """The files under the given paths, and the index rows that lived there."""
    files: dict[str, Stamp] = {}
    for rel in scope:
        path = vault.root / rel
        for gone in vault.others.under(rel):
            vault.others.discard(gone)
        if not inside(vault.root, path):
            continue
        if path.is_dir():
            others: set[str] = set()
            files.update(scan_files(vault.root, rel, others=others))
            for other in others:
                vault.others.add(other)
        elif path.is_file() and rel.lower().endswith(".md"):
            files[rel] = Stamp.of(path.stat())
        elif path.is_file():
            vault.others.add(rel)
    in_scope = vault.index.pages.files_at(scope)
    for rel in scope:
        in_scope.update(vault.index.pages.files_under(rel))
    return files, in_scope


def _stamp(root: Path, rel: str) -> Stamp | None:
    path = root / rel
    return Stamp.of(path.stat()) if path.is_file() else None


def _winners(
    vault: AppState, named: dict[str, str], full: bool
) -> tuple[dict[str, str], list[str]]:
    """One file per slug (the path that sorts first) of the files given as path -> slug;
    the others are recorded as shadowed."""
    by_slug: dict[str, list[str]] = defaultdict(list)
    skipped: list[str] = []
    for rel, slug in sorted(named.items()):
        if slug:
            by_slug[slug].append(rel)
        else:
            skipped.append(f"{rel}: the name has no letter, digit or symbol")
    table = vault.index.pages
    for path, _ in table.shadowed():
        if full or path in named:
            table.unshadow(path)
    for slug, paths in by_slug.items():
        for loser in paths[1:]:
            log.warning("%s has the same slug %r as %s; it is not indexed", loser, slug, paths[0])
            table.set_shadowed(loser, slug)
            skipped.append(f"{loser}: slug {slug!r} is taken by {paths[0]}")
    return {slug: paths[0] for slug, paths in by_slug.items()}, skipped


def forget(vault: AppState, rel_path: str) -> None:
    """Take a file that vanished mid-operation out of the index, in a transaction of its own."""
    with vault.index.write():
        sync(vault, scope=[rel_path])
