"""Pages into and out of the index and the graph, and the graph loaded from the index.

`apply` is the one place where pages enter and leave the index: it writes page rows,
text and links, resolves again the links a change can affect, keeps placeholders in
step, and updates the in-memory graph. Pages are keyed by their path, placeholders by
their link key. `load` builds the page sets and the graph afresh from the index;
`refresh` takes in what other processes committed. Callers hold the vault's lock and a
write transaction (`refresh` needs only the lock).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from contextlib import nullcontext
from dataclasses import dataclass, field

from lore_mcp.index import LinkRow, PageRow
from lore_mcp.pagesets import Resolution, resolve
from lore_mcp.slugs import Key, forget_cached, path_key, slug_from_path, suffixes
from lore_mcp.vault_ops.core import AppState
from lore_mcp.vault_ops.pagefile import Parsed, link_key

# Pages written to the index at a time by a pass over many files: a power of two, as
# many as a statement of `index.batch.insert_at_once` holds (a page's search text in one).
BATCH = 512
RELOAD_OVER = 2000  # a change touching more pages than this loads the graph afresh


@dataclass(slots=True)
class Applied:
    """The placeholders a change created and removed."""

    created: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


def placeholder_title(target: str) -> str:
    """A placeholder's title: the last segment of the link target as written."""
    name = target.strip().replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    return name[:-3] if name.lower().endswith(".md") else name


def apply(
    vault: AppState,
    pages: Iterable[Parsed],
    removals: Iterable[str] = (),
    coming: Iterable[str] = (),
    *,
    filling: bool = False,
    fill_thread: bool = True,
) -> Applied:
    """Put `pages` into the index and graph and take the pages at the paths `removals`
    out.

    `pages` may be read lazily; `coming` names the paths it may bring, so that links to
    them resolve at once, whichever page comes first. A path announced and never
    brought is taken out at the end, as a removal. `filling` says the index is empty and
    `coming` is every page: some of its indexes are made once, at the end, and its
    pages are written by a thread of their own unless `fill_thread` is false (see
    `Index.filling`)."""
    index = vault.index
    vault.generation += 1
    candidates: set[str] = set()  # keys whose placeholder status may change
    touched: set[str] = set()  # pages whose links changed
    brought: set[str] = set()
    touched |= _remove(vault, set(removals), candidates)
    announced = {path for path in coming if path not in vault.pages}
    vault.pages.update(announced)
    touched |= _reresolve(vault, announced, candidates)
    with index.filling(thread=fill_thread) if filling else nullcontext():
        written = _put(
            vault,
            pages,
            announced=announced,
            candidates=candidates,
            touched=touched,
            brought=brought,
        )
        if len(touched) > RELOAD_OVER:
            forget_cached()
    touched |= _remove(vault, announced - brought, candidates)
    applied = _settle_placeholders(vault, candidates)
    _update_graph(vault, written, touched, candidates)
    index.changes.record(sorted(touched | candidates))
    return applied


# A link target as written (path key, text, exact, slug form) -> where it led.
_Known = dict[tuple[str, str, bool, str], Resolution]


def _put(
    vault: AppState,
    pages: Iterable[Parsed],
    *,
    announced: set[str],
    candidates: set[str],
    touched: set[str],
    brought: set[str],
) -> list[PageRow]:
    """The pages into the index, a batch at a time; their rows, unless there are more than
    `RELOAD_OVER` (the graph is then loaded afresh; at 100k pages the rows are 35 MB)."""
    index = vault.index
    written: list[PageRow] = []
    known: _Known = {}  # where targets led, while the pages stay the same (see `_resolved`)
    for batch in _batches(pages):
        paths = [page.row.key for page in batch]
        if not index.fresh:  # in a first index, no page has links yet
            candidates.update(target for _, target in index.links.edges(paths))
            index.links.delete_from(paths)
        new = {path for path in paths if path not in vault.pages}
        if new:
            known.clear()
        vault.pages.update(new)
        # A page is there again: no write by that name is one to a page renamed away.
        index.forget_moves([path_key(p) for p in paths if p in new or p in announced])
        for page in batch:
            vault.aliases.give(page.row.key, page.aliases)
        touched.update(_reresolve(vault, new, candidates))
        rows = [
            _resolved(vault, link, key, known)
            for page in batch
            for link, key in zip(page.links, page.keys, strict=True)
        ]
        candidates.update(row.resolved for row in rows)
        index.put_pages(
            [(page.row, page.search) for page in batch],
            aliases={page.row.key: page.aliases for page in batch},
            tags={page.row.key: page.tags for page in batch},
            links=rows,
        )
        brought.update(paths)
        touched.update(paths)
        if len(touched) <= RELOAD_OVER:  # beyond that the graph is loaded afresh instead
            written += [page.row for page in batch]
    return written


def _batches(pages: Iterable[Parsed]) -> Iterator[list[Parsed]]:
    batch: list[Parsed] = []
    for page in pages:
        batch.append(page)
        if len(batch) >= BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def _resolved(vault: AppState, link: LinkRow, key: Key, known: _Known) -> LinkRow:
    """The link, resolved. `known` keeps where each target (as written) led while the
    pages stay the same, but for a tie the linking page's folder breaks: many links
    share a target."""
    spelled = (key.path, key.text, key.exact, key.fold)
    found = known.get(spelled)
    if found is None:
        found = resolve(vault.pages, key, link.source)
        if not found.ambiguous:
            known[spelled] = found
    # Made whole: `_replace` takes twice as long, which at 50,000 links a pass shows.
    source, target, line, context, path, exact, fold = link[:7]
    resolved, ambiguous, loose = found.target, found.ambiguous, found.loose
    return LinkRow(
        source, target, line, context, path, exact, fold, resolved, ambiguous, loose, link.id
    )


def _remove(vault: AppState, paths: set[str], candidates: set[str]) -> set[str]:
    """Take pages out of the index; the pages whose links now lead elsewhere."""
    paths = {path for path in paths if path in vault.pages}
    if not paths:
        return set()
    ordered = sorted(paths)
    candidates.update(target for _, target in vault.index.links.edges(ordered))
    candidates |= paths
    vault.index.delete_pages(ordered)
    vault.index.links.delete_from(ordered)
    for path in paths:
        vault.pages.remove(path)
        vault.aliases.give(path, [])
    return paths | _reresolve(vault, paths, candidates)


def _reresolve(vault: AppState, changed: set[str], candidates: set[str]) -> set[str]:
    """Resolve again every link whose target could mean something else now that the
    pages `changed` appeared or went (a link names a page by a tail of its path, or
    loosely by a tail of its slug); the pages holding such links."""
    if not changed or vault.index.links.empty():  # as before a first index: no link yet
        return set()
    keys = sorted({key for path in changed for key in suffixes(path_key(path))})
    folds = sorted({fold for path in changed for fold in suffixes(slug_from_path(path)) if fold})
    updates: list[tuple[int, str, bool, bool]] = []
    sources: set[str] = set()
    for link in vault.index.links.with_keys(keys, folds):
        found = resolve(vault.pages, link_key(link), link.source)
        if (found.target, found.ambiguous, found.loose) != (
            link.resolved,
            link.ambiguous,
            link.loose,
        ):
            updates.append((link.id, found.target, found.ambiguous, found.loose))
            candidates.update((found.target, link.resolved))
            sources.add(link.source)
    vault.index.links.set_resolutions(updates)
    return sources


def _settle_placeholders(vault: AppState, candidates: set[str]) -> Applied:
    """A placeholder exists exactly where links lead and no page is; its title comes
    from the first link to it (by source path, then line)."""
    applied = Applied()
    missing = sorted(key for key in candidates if key not in vault.pages)
    first_targets = vault.index.links.first_targets(missing)
    existing = {row.key: row for row in vault.index.pages.get_many(missing)}
    rows: list[PageRow] = []
    for key in missing:
        target = first_targets.get(key)
        if target is None:
            if key in vault.placeholders:
                vault.placeholders.remove(key)
                applied.removed.append(key)
            continue
        row = PageRow(key, placeholder_title(target), None)
        if existing.get(key) != row:
            rows.append(row)
        if key not in vault.placeholders:
            vault.placeholders.add(key)
            applied.created.append(key)
    vault.index.delete_pages(applied.removed)
    vault.index.put_pages([(row, None) for row in rows])
    return applied


def _update_graph(
    vault: AppState, written: list[PageRow], touched: set[str], candidates: set[str]
) -> None:
    """Mirror a change in the graph: a large one by loading it afresh from the index."""
    if len(touched) + len(candidates) > RELOAD_OVER:
        _load_graph(vault)
        return
    graph = vault.graph
    for key in touched | candidates:
        if key not in vault.pages and key not in vault.placeholders:
            graph.remove_node(key)
    for row in written:
        graph.set_node(row.key, row.title, placeholder=False)
    waiting = sorted(key for key in candidates if key in vault.placeholders)
    for row in vault.index.pages.get_many(waiting):
        graph.set_node(row.key, row.title, placeholder=True)
    sources = sorted(key for key in touched if key in vault.pages)
    graph.replace_out_edges(touched, vault.index.links.edges(sources))


# -- the graph from the index ---------------------------------------------------------------


def load(vault: AppState) -> None:
    """Load the page sets and the graph afresh from the index."""
    vault.stale = True  # until the load is complete
    vault.pages.clear()
    vault.placeholders.clear()
    vault.aliases.clear()
    for key, _, placeholder in _load_graph(vault):
        (vault.placeholders if placeholder else vault.pages).add(key)
    by_page: defaultdict[str, list[str]] = defaultdict(list)
    for key, alias in vault.index.pages.aliases():
        by_page[key].append(alias)
    for key, aliases in by_page.items():
        vault.aliases.give(key, aliases)
    vault.data_version = vault.index.data_version()
    vault.stale = False


def _load_graph(vault: AppState) -> list[tuple[str, str, bool]]:
    """The graph afresh from the index (a change that already keeps the page sets in
    step needs no more); every node as (key, title, is a placeholder)."""
    vault.graph.clear()
    nodes = vault.index.pages.titles()
    for key, title, placeholder in nodes:
        vault.graph.set_node(key, title, placeholder)
    vault.graph.add_edges(vault.index.links.edges())
    return nodes


def refresh(vault: AppState) -> None:
    """Take in what other processes committed since this one last looked."""
    if vault.stale:
        load(vault)
        return
    version = vault.index.data_version()
    if version == vault.data_version:
        return
    vault.data_version = version
    changed = vault.index.changes.since_seen()
    if changed is None:
        load(vault)
        return
    rows = {row.key: row for row in vault.index.pages.get_many(changed)}
    aliases = vault.index.pages.aliases_of(changed)
    for key in changed:
        row = rows.get(key)
        vault.pages.remove(key)
        vault.placeholders.remove(key)
        vault.aliases.give(key, aliases[key])
        if row is None:
            vault.graph.remove_node(key)
            continue
        (vault.placeholders if row.is_placeholder else vault.pages).add(key)
        vault.graph.set_node(key, row.title, row.is_placeholder)
    vault.graph.replace_out_edges(changed, vault.index.links.edges(changed))
