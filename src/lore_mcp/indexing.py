"""Keeping the index and the graph equal to the files.

`apply` is the one place where pages enter and leave the index: it writes page rows,
FTS text and links, re-resolves the links a change can affect, keeps placeholders in
step, and updates the in-memory graph. `sync` compares the files on disk with the index
and applies the difference, in batches when there is much of it, so the text of every
page is never held at once; `refresh` brings this process up to date with what other
processes committed. Callers hold the state's lock.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from lore_mcp.files import Parsed, Stamp, inside, scan_files
from lore_mcp.index import FileStamp, NewLink, PageRow
from lore_mcp.models import SyncReport
from lore_mcp.pagereader import read_pages
from lore_mcp.slugs import is_hidden, slug_from_path, suffixes
from lore_mcp.state import LORE_DIR, AppState

log = logging.getLogger(__name__)

# Parsed pages applied at a time by a pass over the files. A pass with more pages to
# read announces them first (`_expect`), so links to later batches resolve at once, and
# settles placeholders once at the end (`_settle`), so no batch redoes that work.
APPLY_BATCH = 500

Progress = Callable[[int, int], None]


@dataclass(slots=True)
class Applied:
    """What `apply` changed among placeholders."""

    created: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


# -- apply ------------------------------------------------------------------------------


def link_rows(state: AppState, parsed: Parsed) -> list[NewLink]:
    """The page's edges, resolved."""
    source = parsed.row.slug
    lead = state.pages.link_target
    return [
        NewLink(source, e.target, e.line, e.context, e.key, e.exact, *lead(e.key, e.exact, source))
        for e in parsed.edges
    ]


def placeholder_title(target: str) -> str:
    """A placeholder's title: the last segment of the link target as written."""
    text = target.strip().replace("\\", "/").rstrip("/")
    name = text.rsplit("/", 1)[-1]
    return name[:-3] if name.lower().endswith(".md") else name


def apply(
    state: AppState,
    upserts: Iterable[Parsed],
    removals: Iterable[str],
    unsettled: set[str] | None = None,
    *,
    linkless: bool = False,
) -> Applied:
    """Put pages into the index and graph and take others out, in one transaction.

    With `unsettled` (a pass applied in batches), placeholders are left as they are: the
    slugs whose placeholder status may change are added to the set instead, for
    `_settle` to handle once, after the last batch. `linkless` says that none of these
    pages has links in the index yet (a first index), so there are none to delete.
    """
    upserts = list(upserts)
    upserted = {p.row.slug for p in upserts}
    removed = set(removals) - upserted
    index, graph = state.index, state.graph
    state.generation += 1
    candidates = set(removed)  # slugs whose placeholder status may change
    with index.write():
        for slug in removed | upserted:
            candidates.update(graph.linked_from(slug))
        index.delete_pages(sorted(removed))
        if not linkless:
            index.delete_links_from(sorted(removed | upserted))
        appeared_or_gone = set(removed)
        for slug in removed:
            state.pages.remove(slug)
        for slug in upserted:
            if slug not in state.pages:
                appeared_or_gone.add(slug)
                state.pages.add(slug)
            state.placeholders.remove(slug)
        # Only other pages' links are in the table now: resolve those again first.
        touched = _reresolve(state, appeared_or_gone, candidates)
        rows = [row for parsed in upserts for row in link_rows(state, parsed)]
        candidates.update(row.resolved for row in rows)
        index.upsert_pages([(parsed.row, parsed.body) for parsed in upserts])
        index.add_links(rows)
        touched |= removed | upserted
        if unsettled is None:
            applied = _settle_placeholders(state, candidates)
            _update_graph(state, upserts, candidates, applied, touched, upserted_links=rows)
        else:
            unsettled |= candidates
            applied = Applied()
            _update_graph(state, upserts, set(), applied, touched, upserted_links=rows)
        index.record_changes(sorted(touched | candidates))
    return applied


def _settle(state: AppState, slugs: set[str]) -> None:
    """Settle the placeholders (and their nodes) that batches applied with `unsettled`
    left for later."""
    state.generation += 1
    with state.index.write():
        applied = _settle_placeholders(state, slugs)
        _update_graph(state, [], slugs, applied, set())
        state.index.record_changes(sorted(slugs))


def _expect(state: AppState, slugs: Iterable[str], unsettled: set[str]) -> set[str]:
    """Let links resolve to pages that the next batches will bring, as if they were
    there already, so each link resolves once, as in one `apply` of every page; returns
    the slugs that were not pages yet. A page that does not come must be removed with
    `apply`. Placeholders are left to `_settle`, like the batches'."""
    new = {slug for slug in slugs if slug not in state.pages}
    if new:
        state.generation += 1
        with state.index.write():
            state.pages.update(new)
            touched = _reresolve(state, new, unsettled)
            _update_graph(state, [], set(), Applied(), touched)
            state.index.record_changes(sorted(touched))
    return new


def _reresolve(state: AppState, appeared_or_gone: set[str], candidates: set[str]) -> set[str]:
    """Resolve again every link whose target could now mean something else."""
    keys = sorted({k for slug in appeared_or_gone for k in suffixes(slug)})
    updates: list[tuple[int, str, bool]] = []
    sources: set[str] = set()
    for link in state.index.links_with_keys(keys):
        resolved, ambiguous = state.pages.link_target(link.key, link.exact, link.source)
        if (resolved, ambiguous) != (link.resolved, link.ambiguous):
            updates.append((link.id, resolved, ambiguous))
            candidates.update((resolved, link.resolved))
            sources.add(link.source)
    state.index.set_resolutions(updates)
    return sources


def _settle_placeholders(state: AppState, candidates: set[str]) -> Applied:
    """A placeholder exists exactly where links lead and no page is; its title comes
    from the first link to it (by source slug, then line)."""
    applied = Applied()
    missing = sorted(c for c in candidates if c not in state.pages)
    first_targets = state.index.first_targets(missing)
    existing = {row.slug: row for row in state.index.get_pages(missing)}
    rows: list[PageRow] = []
    for slug in missing:
        target = first_targets.get(slug)
        if target is None:
            if slug in state.placeholders:
                state.placeholders.remove(slug)
                applied.removed.append(slug)
            continue
        row = PageRow(slug, placeholder_title(target), None)
        if existing.get(slug) != row:
            rows.append(row)
        if slug not in state.placeholders:
            state.placeholders.add(slug)
            applied.created.append(slug)
    state.index.delete_pages(applied.removed)
    state.index.upsert_pages([(row, None) for row in rows])
    return applied


def _update_graph(
    state: AppState,
    upserts: list[Parsed],
    affected: set[str],
    applied: Applied,
    touched: set[str],
    *,
    upserted_links: Sequence[NewLink] = (),
) -> None:
    """Mirror the change in the graph: nodes that went, nodes that came, edges of the
    pages whose links changed (`upserted_links` are those of `upserts`, just written;
    the others' are read back from the index)."""
    graph = state.graph
    for slug in affected | set(applied.removed):
        if slug not in state.placeholders and slug not in state.pages:
            graph.remove_node(slug)
    for parsed in upserts:
        graph.set_node(parsed.row.slug, parsed.row.title, placeholder=False)
    maybe = sorted(s for s in affected | set(applied.created) if s in state.placeholders)
    for row in state.index.get_pages(maybe):
        graph.set_node(row.slug, row.title, placeholder=True)
    others = sorted(touched.difference(parsed.row.slug for parsed in upserts))
    edges = [(link.source, link.resolved) for link in upserted_links]
    graph.replace_out_edges(touched, edges + state.index.edges(others))


# -- whole-vault passes -------------------------------------------------------------------


def load(state: AppState) -> None:
    """Rebuild the in-memory slug sets and graph from the index."""
    state.graph.clear()
    state.pages.clear()
    state.placeholders.clear()
    nodes = state.index.titles()
    state.pages.update(slug for slug, _, placeholder in nodes if not placeholder)
    state.placeholders.update(slug for slug, _, placeholder in nodes if placeholder)
    for slug, title, placeholder in nodes:
        state.graph.set_node(slug, title, placeholder)
    state.graph.add_edges(state.index.link_pairs())
    state.data_version = state.index.data_version()
    state.needs_load = False


def refresh(state: AppState) -> None:
    """Take in what other processes committed since this one last looked."""
    if state.needs_load:
        load(state)
        return
    version = state.index.data_version()
    if version == state.data_version:
        return
    state.data_version = version
    changed = state.index.changes_since_seen()
    if changed is None:
        load(state)
        return
    if not changed:
        return
    rows = {r.slug: r for r in state.index.get_pages(changed)}
    for slug in changed:
        row = rows.get(slug)
        state.pages.remove(slug)
        state.placeholders.remove(slug)
        if row is None:
            state.graph.remove_node(slug)
            continue
        (state.placeholders if row.is_placeholder else state.pages).add(slug)
        state.graph.set_node(slug, row.title, row.is_placeholder)
    state.graph.replace_out_edges(changed, state.index.edges(changed))


def sync(
    state: AppState,
    scope: Iterable[str] | None = None,
    progress: Progress | None = None,
    batch_size: int = APPLY_BATCH,
) -> SyncReport:
    """Bring the index in line with the files: parse what changed, drop what is gone.

    With `scope` (vault-relative files or folders), only those paths are looked at.
    Parsed pages are applied `batch_size` at a time, so a first index never holds the
    text of every page at once.
    """
    started = time.perf_counter()
    generation = state.generation
    try:
        return _sync(state, scope, progress, batch_size, started)
    except BaseException:
        if state.generation != generation:
            # Pages went into the graph that the caller's rollback takes out of the index.
            state.needs_load = True
        raise


def _sync(
    state: AppState,
    scope: Iterable[str] | None,
    progress: Progress | None,
    batch_size: int,
    started: float,
) -> SyncReport:
    plan = _plan(state, scope)
    # With many files, a worker process starts reading them now.
    with read_pages(state.root, sorted(plan.todo), spool_dir=state.index.path.parent) as pages:
        counts = _read_and_apply(state, pages, plan, progress=progress, batch_size=batch_size)
    return SyncReport(
        pages=len(state.pages),
        placeholders=len(state.placeholders),
        links=state.index.count_links(),
        added=counts.added,
        updated=counts.updated,
        removed=counts.removed,
        unchanged=plan.unchanged + counts.unchanged,
        skipped=plan.skipped,
        seconds=round(time.perf_counter() - started, 3),
    )


@dataclass(slots=True)
class _Plan:
    """What a pass has to do, decided before it reads a page."""

    todo: dict[str, str]  # path -> slug of the files to read
    known: dict[str, FileStamp]  # the index rows at those paths
    removals: set[str]  # slugs whose files are gone
    skipped: list[str]  # files not indexed, and why
    unchanged: int  # files found unchanged by their stamps


def _plan(state: AppState, scope: Iterable[str] | None) -> _Plan:
    """Compare the files (all, or those under `scope`) with the index. What is looked
    at only to decide is dropped on return, before the pass reads and applies pages."""
    if scope is None:
        every, files, in_scope = _scan_all(state)
        named, holders = _named(state, files, in_scope, every.get)
        unchanged = len(every) - len(files)
    else:
        files, in_scope = _scan_scope(state, sorted(set(scope)))
        named, holders = _named(state, files, in_scope, partial(_stamp, state.root))
        unchanged = 0
    known = in_scope | holders  # the index rows at every path in `files`
    winners, skipped = _winners(state, named, full=scope is None)
    removals = {r.slug for r in in_scope.values() if r.slug not in winners}
    todo: dict[str, str] = {}
    for slug, rel in winners.items():
        row, st = known.get(rel), files[rel]
        if row is not None and row.slug == slug and (row.size, row.mtime_ns) == st:
            unchanged += 1
        else:
            todo[rel] = slug
    known = {rel: known[rel] for rel in todo if rel in known}
    return _Plan(todo, known, removals, skipped, unchanged)


@dataclass(slots=True)
class _Counts:
    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0


def _read_and_apply(
    state: AppState,
    pages: Iterable[tuple[str, Parsed | None]],
    plan: _Plan,
    *,
    progress: Progress | None,
    batch_size: int,
) -> _Counts:
    """Apply the files of `plan.todo` as `pages` brings them, those whose content
    changed, `batch_size` at a time; then take out the plan's removals and the pages that
    did not read."""
    todo, known, removals = plan.todo, plan.known, set(plan.removals)
    counts = _Counts()
    unsettled: set[str] | None = None
    expected: set[str] = set()
    applied: set[str] = set()
    # A first index of many pages loads the links table without its indexes (built once
    # at the end, before placeholders settle). Until then nothing looks links up, but for
    # a page that was announced and then failed to read (a full scan, still correct).
    first = len(todo) > batch_size and state.index.in_transaction and not state.index.count_pages()
    with state.index.links_unindexed() if first else nullcontext():
        if len(todo) > batch_size:
            unsettled = set()
            expected = _expect(state, todo.values(), unsettled)
        batch: list[Parsed] = []
        for done, (rel, page) in enumerate(pages, 1):
            old = known.get(rel)
            if page is None:
                removals.add(todo[rel])
            elif old is not None and old.slug == page.row.slug and old.hash == page.row.hash:
                with state.index.write():
                    state.index.touch_page(old.slug, page.row.size, page.row.mtime_ns)
                counts.unchanged += 1
            else:
                batch.append(page)
                applied.add(page.row.slug)
                if old is None:
                    counts.added += 1
                else:
                    counts.updated += 1
            if len(batch) >= batch_size:
                apply(state, batch, (), unsettled, linkless=first)
                batch = []
            if progress is not None:
                progress(done, len(todo))
            if done % 2000 == 0:
                log.info("indexing: read %d of %d changed files", done, len(todo))
        removals = {slug for slug in removals if slug in state.pages}  # expected ones too
        if batch or removals:
            apply(state, batch, removals, unsettled, linkless=first)
    if unsettled:
        _settle(state, unsettled)
    counts.removed = len(removals - applied - expected)
    return counts


def _scan_all(
    state: AppState,
) -> tuple[dict[str, Stamp], dict[str, Stamp], dict[str, FileStamp]]:
    """Every page file; those of them a pass over the whole vault has to look at; and
    the index rows at the paths it has to look at. A file whose path, size and mtime are
    those of its row is passed over: it is a page, unchanged. The rest are new, changed,
    gone, or not indexed (passed over for a slug that another file holds, or a name with
    no letters). One set operation finds them: an unchanged page costs no index row, no
    slug and no comparison of its own."""
    every = scan_files(state.root)
    on_disk = {(rel, size, mtime_ns) for rel, (size, mtime_ns) in every.items()}
    differing = sorted({rel for rel, _, _ in on_disk.symmetric_difference(state.index.stamps())})
    files = {rel: every[rel] for rel in differing if rel in every}
    return every, files, state.index.files_at(differing)


def _scan_scope(state: AppState, scope: list[str]) -> tuple[dict[str, Stamp], dict[str, FileStamp]]:
    """The files under the given paths, and the index rows that lived there."""
    files: dict[str, Stamp] = {}
    for rel in scope:
        path = state.root / rel
        if not inside(state.root, path):
            continue
        if path.is_dir():
            files.update(scan_files(state.root, rel))
        elif path.is_file() and rel.lower().endswith(".md"):
            files[rel] = Stamp.of(path.stat())
    in_scope = state.index.files_at(scope)
    for rel in scope:
        in_scope.update(state.index.files_under(rel))
    return files, in_scope


def _stamp(root: Path, rel: str) -> Stamp | None:
    path = root / rel
    return Stamp.of(path.stat()) if path.is_file() else None


def _named(
    state: AppState,
    files: dict[str, Stamp],
    in_scope: dict[str, FileStamp],
    stamp_of: Callable[[str], Stamp | None],
) -> tuple[dict[str, str], dict[str, FileStamp]]:
    """Each file's slug, by path, and the index rows of the indexed files that hold one
    of these slugs or one of `in_scope`'s. Those files, and the ones passed over for such
    a slug, come along, into `files` too, so collisions settle as in a pass over every
    file."""
    named = {rel: slug_from_path(rel) for rel in files}
    wanted = set(named.values()).union(row.slug for row in in_scope.values())
    indexed = state.index.files_of(sorted(wanted))
    passed_over = [path for path, slug in state.index.shadowed() if slug in wanted]
    for rel in [*indexed, *passed_over]:
        if rel not in files and (stamp := stamp_of(rel)) is not None:
            files[rel], named[rel] = stamp, slug_from_path(rel)
    return named, indexed


def _winners(
    state: AppState, named: dict[str, str], full: bool
) -> tuple[dict[str, str], list[str]]:
    """One file per slug (the path that sorts first) of the files given as path -> slug;
    the others are recorded as shadowed."""
    by_slug: dict[str, list[str]] = defaultdict(list)
    skipped: list[str] = []
    for rel, slug in sorted(named.items()):
        if not slug:
            skipped.append(f"{rel}: the name has no letters or digits")
            continue
        by_slug[slug].append(rel)
    with state.index.write():
        for path, _ in state.index.shadowed():
            if full or path in named:
                state.index.unshadow(path)
        for slug, paths in by_slug.items():
            for loser in paths[1:]:
                log.warning(
                    "%s has the same slug %r as %s; it is not indexed", loser, slug, paths[0]
                )
                state.index.set_shadowed(loser, slug)
                skipped.append(f"{loser}: slug {slug!r} is taken by {paths[0]}")
    return {slug: paths[0] for slug, paths in by_slug.items()}, skipped


def ignored(rel_path: str) -> bool:
    """Paths that are never part of the vault: dot-files and dot-folders (`.lore/` too)."""
    return is_hidden(rel_path) or rel_path.split("/", 1)[0] == LORE_DIR
