"""Pages into and out of the index and the graph, and the graph loaded from the index.

`apply` is the one place where pages enter and leave the index: it writes page rows,
text and links, resolves again the links a change can affect, keeps placeholders in
step, and updates the in-memory graph. `load` builds the slug sets and the graph afresh
from the index; `refresh` takes in what other processes committed. Callers hold the
vault's lock and a write transaction (`refresh` needs only the lock).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from lore_mcp.index import LinkRow, PageRow
from lore_mcp.slugs import Key, resolve, suffixes
from lore_mcp.vault_ops.core import AppState
from lore_mcp.vault_ops.files import Parsed

BATCH = 500  # pages written to the index at a time by a pass over many files
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


def _resolved(vault: AppState, link: LinkRow) -> LinkRow:
    resolved, ambiguous = resolve(
        vault.pages, vault.aliases, Key(link.key, link.exact), link.source
    )
    return link._replace(resolved=resolved, ambiguous=ambiguous)


def _remove(vault: AppState, slugs: set[str], candidates: set[str]) -> set[str]:
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
    vault: AppState, changed: set[str], candidates: set[str], alias_keys: Iterable[str] = ()
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


def _settle_placeholders(vault: AppState, candidates: set[str]) -> Applied:
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
    vault: AppState, written: list[PageRow], touched: set[str], candidates: set[str]
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


def load(vault: AppState) -> None:
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


def refresh(vault: AppState) -> None:
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
