"""Keeping the index and the graph equal to the files.

`apply` is the one place where pages enter and leave the index: it writes page rows,
text and links, resolves again the links a change can affect, keeps placeholders in
step, and updates the in-memory graph. `sync` compares the files on disk with the index
and applies the difference; `refresh` takes in what other processes committed. Callers
hold the vault's lock and a write transaction (`refresh` needs only the lock).
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from lore_mcp.index import FileStamp, LinkRow, PageRow
from lore_mcp.models import SyncReport
from lore_mcp.slugs import Key, resolve, slug_from_path, suffixes
from lore_mcp.vault.core import Vault
from lore_mcp.vault.files import OtherFiles, Parsed, Stamp, inside, read_many, scan_files

log = logging.getLogger(__name__)

BATCH = 500  # pages written to the index at a time by a pass over many files
RELOAD_OVER = 2000  # a change touching more pages than this loads the graph afresh

Progress = Callable[[int, int], None]


@dataclass(slots=True)
class Applied:
    """The placeholders a change created and removed."""

    created: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


def placeholder_title(target: str) -> str:
    """A placeholder's title: the last segment of the link target as written."""
    name = target.strip().replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    return name[:-3] if name.lower().endswith(".md") else name


# -- apply --------------------------------------------------------------------------------


def apply(
    vault: Vault,
    pages: Iterable[Parsed],
    removals: Iterable[str] = (),
    coming: Iterable[str] = (),
) -> Applied:
    """Put `pages` into the index and graph and take the slugs `removals` out.

    `pages` may be read lazily; `coming` names slugs it may bring, so that links to
    them resolve at once, whichever page comes first. A slug announced and never
    brought is taken out at the end, as a removal."""
    index = vault.index
    vault.generation += 1
    candidates: set[str] = set()  # slugs whose placeholder status may change
    touched: set[str] = set()  # pages whose links changed
    brought: set[str] = set()
    touched |= _remove(vault, set(removals), candidates)
    announced = {slug for slug in coming if slug not in vault.pages}
    vault.pages.update(announced)
    touched |= _reresolve(vault, announced, candidates)
    written: list[PageRow] = []
    for batch in _batches(pages):
        slugs = [page.row.slug for page in batch]
        candidates.update(target for _, target in index.links.edges(slugs))
        index.links.delete_from(slugs)
        new = {slug for slug in slugs if slug not in vault.pages}
        vault.pages.update(new)
        renamed: set[str] = set()  # alias keys that came or went
        for page in batch:
            vault.placeholders.remove(page.row.slug)
            renamed |= vault.aliases.give(page.row.slug, page.aliases)
        touched |= _reresolve(vault, new, candidates, renamed)
        rows = [_resolved(vault, link) for page in batch for link in page.links]
        candidates.update(row.resolved for row in rows)
        index.put_pages(
            [(page.row, page.body) for page in batch],
            aliases={page.row.slug: page.aliases for page in batch},
            tags={page.row.slug: page.tags for page in batch},
        )
        index.links.add(rows)
        brought.update(slugs)
        touched.update(slugs)
        written += [page.row for page in batch]
    touched |= _remove(vault, announced - brought, candidates)
    applied = _settle_placeholders(vault, candidates)
    _update_graph(vault, written, touched, candidates)
    index.record_changes(sorted(touched | candidates))
    return applied


def _batches(pages: Iterable[Parsed]) -> Iterator[list[Parsed]]:
    batch: list[Parsed] = []
    for page in pages:
        batch.append(page)
        if len(batch) >= BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def _resolved(vault: Vault, link: LinkRow) -> LinkRow:
    resolved, ambiguous = resolve(
        vault.pages, vault.aliases, Key(link.key, link.exact), link.source
    )
    return link._replace(resolved=resolved, ambiguous=ambiguous)


def _remove(vault: Vault, slugs: set[str], candidates: set[str]) -> set[str]:
    """Take pages out of the index; the pages whose links now lead elsewhere."""
    slugs = {slug for slug in slugs if slug in vault.pages}
    if not slugs:
        return set()
    ordered = sorted(slugs)
    candidates.update(target for _, target in vault.index.links.edges(ordered))
    candidates |= slugs
    vault.index.delete_pages(ordered)
    vault.index.links.delete_from(ordered)
    renamed: set[str] = set()
    for slug in slugs:
        vault.pages.remove(slug)
        renamed |= vault.aliases.give(slug, [])
    return slugs | _reresolve(vault, slugs, candidates, renamed)


def _reresolve(
    vault: Vault, changed: set[str], candidates: set[str], alias_keys: Iterable[str] = ()
) -> set[str]:
    """Resolve again every link whose target could mean something else now that the
    pages `changed` appeared or went, or the aliases `alias_keys` came or went; the
    pages holding such links."""
    keys = sorted({key for slug in changed for key in suffixes(slug)} | set(alias_keys))
    if not keys:
        return set()
    updates: list[tuple[int, str, bool]] = []
    sources: set[str] = set()
    for link in vault.index.links.with_keys(keys):
        resolved, ambiguous = resolve(
            vault.pages, vault.aliases, Key(link.key, link.exact), link.source
        )
        if (resolved, ambiguous) != (link.resolved, link.ambiguous):
            updates.append((link.id, resolved, ambiguous))
            candidates.update((resolved, link.resolved))
            sources.add(link.source)
    vault.index.links.set_resolutions(updates)
    return sources


def _settle_placeholders(vault: Vault, candidates: set[str]) -> Applied:
    """A placeholder exists exactly where links lead and no page is; its title comes
    from the first link to it (by source slug, then line)."""
    applied = Applied()
    missing = sorted(slug for slug in candidates if slug not in vault.pages)
    first_targets = vault.index.links.first_targets(missing)
    existing = {row.slug: row for row in vault.index.pages.get_many(missing)}
    rows: list[PageRow] = []
    for slug in missing:
        target = first_targets.get(slug)
        if target is None:
            if slug in vault.placeholders:
                vault.placeholders.remove(slug)
                applied.removed.append(slug)
            continue
        row = PageRow(slug, placeholder_title(target), None)
        if existing.get(slug) != row:
            rows.append(row)
        if slug not in vault.placeholders:
            vault.placeholders.add(slug)
            applied.created.append(slug)
    vault.index.delete_pages(applied.removed)
    vault.index.put_pages([(row, None) for row in rows])
    return applied


def _update_graph(
    vault: Vault, written: list[PageRow], touched: set[str], candidates: set[str]
) -> None:
    """Mirror a change in the graph: a large one by loading it afresh from the index."""
    if len(touched) + len(candidates) > RELOAD_OVER:
        load(vault)
        return
    graph = vault.graph
    for slug in touched | candidates:
        if slug not in vault.pages and slug not in vault.placeholders:
            graph.remove_node(slug)
    for row in written:
        graph.set_node(row.slug, row.title, placeholder=False)
    waiting = sorted(slug for slug in candidates if slug in vault.placeholders)
    for row in vault.index.pages.get_many(waiting):
        graph.set_node(row.slug, row.title, placeholder=True)
    sources = sorted(slug for slug in touched if slug in vault.pages)
    graph.replace_out_edges(touched, vault.index.links.edges(sources))


# -- the graph from the index ---------------------------------------------------------------


def load(vault: Vault) -> None:
    """Load the slug sets and the graph afresh from the index."""
    vault.stale = True  # until the load is complete
    vault.graph.clear()
    vault.pages.clear()
    vault.placeholders.clear()
    vault.aliases.clear()
    for slug, title, placeholder in vault.index.pages.titles():
        (vault.placeholders if placeholder else vault.pages).add(slug)
        vault.graph.set_node(slug, title, placeholder)
    by_page: defaultdict[str, list[str]] = defaultdict(list)
    for slug, alias in vault.index.pages.aliases():
        by_page[slug].append(alias)
    for slug, aliases in by_page.items():
        vault.aliases.give(slug, aliases)
    vault.graph.add_edges(vault.index.links.edges())
    vault.data_version = vault.index.data_version()
    vault.stale = False


def refresh(vault: Vault) -> None:
    """Take in what other processes committed since this one last looked."""
    if vault.stale:
        load(vault)
        return
    version = vault.index.data_version()
    if version == vault.data_version:
        return
    vault.data_version = version
    changed = vault.index.changes_since_seen()
    if changed is None:
        load(vault)
        return
    rows = {row.slug: row for row in vault.index.pages.get_many(changed)}
    aliases = vault.index.pages.aliases_of(changed)
    for slug in changed:
        row = rows.get(slug)
        vault.pages.remove(slug)
        vault.placeholders.remove(slug)
        vault.aliases.give(slug, aliases[slug])
        if row is None:
            vault.graph.remove_node(slug)
            continue
        (vault.placeholders if row.is_placeholder else vault.pages).add(slug)
        vault.graph.set_node(slug, row.title, row.is_placeholder)
    vault.graph.replace_out_edges(changed, vault.index.links.edges(changed))


# -- the files ------------------------------------------------------------------------------


def sync(
    vault: Vault, scope: Iterable[str] | None = None, progress: Progress | None = None
) -> SyncReport:
    """Bring the index in line with the files: parse what changed, drop what is gone.
    With `scope` (vault-relative files or folders), only those paths are looked at.
    When it fails, the caller's transaction rolls back, and the graph and slug sets
    (changed already) are marked to be loaded again."""
    return _sync(vault, scope, progress)[0]


def sync_files(vault: Vault, paths: Iterable[str]) -> Applied:
    """Take in the files (or folders) a write just changed; the placeholders that made
    and removed."""
    return _sync(vault, paths, None)[1]


def _sync(
    vault: Vault, scope: Iterable[str] | None, progress: Progress | None
) -> tuple[SyncReport, Applied]:
    generation = vault.generation
    try:
        return _sync_unguarded(vault, scope, progress)
    except BaseException:
        if vault.generation != generation:
            vault.stale = True
        raise


def _sync_unguarded(
    vault: Vault, scope: Iterable[str] | None, progress: Progress | None
) -> tuple[SyncReport, Applied]:
    started = time.perf_counter()
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

    applied = apply(vault, pages(), plan.removals, coming=plan.todo.values())
    if vanished:
        more = apply(vault, [], vanished)
        applied.created += more.created
        applied.removed += more.removed
    report = SyncReport(
        pages=len(vault.pages),
        placeholders=len(vault.placeholders),
        links=vault.index.links.count(),
        added=counts["added"],
        updated=counts["updated"],
        removed=len(plan.removals - set(plan.todo.values())) + counts["removed"],
        unchanged=plan.unchanged + counts["unchanged"],
        skipped=plan.skipped,
        seconds=round(time.perf_counter() - started, 3),
    )
    return report, applied


@dataclass(slots=True)
class _Plan:
    """What a pass has to do, decided before it reads a page."""

    todo: dict[str, str]  # path -> slug of the files to read
    known: dict[str, FileStamp]  # the index rows at those paths
    removals: set[str]  # slugs whose files are gone
    skipped: list[str]  # files not indexed, and why
    unchanged: int  # files found unchanged by their stamps


def _plan(vault: Vault, scope: list[str] | None) -> _Plan:
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


def _scan_scope(vault: Vault, scope: list[str]) -> tuple[dict[str, Stamp], dict[str, FileStamp]]:
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


def _winners(vault: Vault, named: dict[str, str], full: bool) -> tuple[dict[str, str], list[str]]:
    """One file per slug (the path that sorts first) of the files given as path -> slug;
    the others are recorded as shadowed."""
    by_slug: dict[str, list[str]] = defaultdict(list)
    skipped: list[str] = []
    for rel, slug in sorted(named.items()):
        if slug:
            by_slug[slug].append(rel)
        else:
            skipped.append(f"{rel}: the name has no letters or digits")
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


def forget(vault: Vault, rel_path: str) -> None:
    """Take a file that vanished mid-operation out of the index, in a transaction of its own."""
    with vault.index.write():
        sync(vault, scope=[rel_path])
