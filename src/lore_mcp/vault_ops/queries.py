"""Listing, searching and the link graph: the read-only questions about a vault."""

from __future__ import annotations

from datetime import UTC, datetime
from itertools import groupby
from typing import Literal

from lore_mcp import mentions
from lore_mcp.config import MAX_QUERY_CHARS
from lore_mcp.errors import InvalidArgumentError, LoreError
from lore_mcp.graph import Node
from lore_mcp.index import finder
from lore_mcp.models import (
    Backlink,
    Backlinks,
    GraphEdge,
    GraphNode,
    GraphResult,
    LinkedCount,
    Neighbourhood,
    PageList,
    PageSummary,
    SearchHit,
    SearchResults,
    TitleMatch,
    TitleMatches,
    VaultShape,
)
from lore_mcp.slugs import parse_name, slug_from_path
from lore_mcp.vault_ops import names
from lore_mcp.vault_ops.core import AppState
from lore_mcp.vault_ops.open import reading
from lore_mcp.vault_ops.read import read_text

MAX_MENTION_PAGES = 200
MAX_CLOSE_NAMES = 100  # close spellings search_titles lists when nothing else matches
SHAPE_ROWS = 25  # rows of each of the vault shape's lists, unless asked for more


def list_pages(
    vault: AppState,
    folder: str = "",
    include_placeholders: bool = False,
    offset: int = 0,
    limit: int = 100,
    *,
    sort: Literal["slug", "modified"] = "slug",
) -> PageList:
    """Pages, optionally under one folder, a page of them at a time: by slug, or by
    modification time (the latest first), each with when its file was last modified."""
    with reading(vault):
        prefix = _folder(folder)
        table = vault.index.pages
        if prefix:
            total = table.count_under(prefix, include_placeholders)
        else:  # the whole vault: the counts are at hand
            total = len(vault.pages) + (len(vault.placeholders) if include_placeholders else 0)
        rows = table.listing(prefix, include_placeholders, offset, limit, sort == "modified")
        return PageList(
            sort=sort,
            pages=[_summary(vault, slug, mtime_ns) for slug, mtime_ns in rows],
            total=total,
            offset=offset,
            next_offset=offset + limit if offset + limit < total else None,
        )


def _folder(folder: str) -> str:
    """The slug prefix of a folder's pages, with a `/`; empty for the whole vault."""
    if not folder.strip().strip("/\\"):
        return ""
    return parse_name(folder).key.fold + "/"


def _node(vault: AppState, key: str) -> Node:
    """The graph's node of a key the index gave; one another process committed since
    this one took in its changes is read from the index (its links are not known yet)."""
    node = vault.graph.node(key)
    if node is not None:
        return node
    row = vault.index.pages.get(key)
    return Node(key, row.title if row else key, row.is_placeholder if row else False)


def _summary(vault: AppState, key: str, mtime_ns: int) -> PageSummary:
    node = _node(vault, key)
    return PageSummary(
        slug=vault.handle(key),
        title=node.title,
        is_placeholder=node.is_placeholder,
        links_out=vault.graph.out_degree(key),
        links_in=vault.graph.in_degree(key),
        modified=None if node.is_placeholder else iso_time(mtime_ns),
    )


def iso_time(ns: int) -> str:
    """A file time as ISO 8601 in UTC, to the second: 2025-06-01T14:30:05Z."""
    when = datetime.fromtimestamp(ns / 1e9, tz=UTC).isoformat(timespec="seconds")
    return when.replace("+00:00", "Z")


def _check_query(query: str) -> None:
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidArgumentError(f"Queries are limited to {MAX_QUERY_CHARS} characters.")


def search(vault: AppState, query: str, limit: int = 10, offset: int = 0) -> SearchResults:
    """Full-text search (see `lore_mcp.index.finder`): the best `limit` pages for a
    query, best first, less the first `offset` of them. `#tag` words find the pages
    with that tag: alone they list them, beside other words they filter.

    The ranking depends on how many hits are asked for, so `offset` skips into the best
    `limit` rather than going past them: paging on with the same `limit` reaches each of
    them once."""
    _check_query(query)
    found = _best(vault, query, limit)
    start = min(offset, len(found.hits))
    return found.model_copy(
        update={"hits": found.hits[start:], "total": len(found.hits), "offset": offset}
    )


def _best(vault: AppState, query: str, limit: int) -> SearchResults:
    with reading(vault):
        tags = [word for word in query.split() if word.startswith("#") and len(word) > 1]
        words = " ".join(word for word in query.split() if word not in tags)
        tagged: set[str] | None = None
        for tag in tags:
            holding = set(vault.index.pages.tagged(tag))
            tagged = holding if tagged is None else tagged & holding
        if tagged is not None and not words.strip():
            hits = [
                SearchHit(slug=vault.handle(s), title=vault.graph.title(s), snippet="", score=1.0)
                for s in sorted(tagged)[:limit]
            ]
            return SearchResults(query=query, hits=hits)
        table = vault.index.search
        wanted = limit if tagged is None else max(limit, 200)
        found = finder.search(table, table.stemmer, words, wanted, len(vault.pages))
        hits = [
            SearchHit(
                slug=vault.handle(r.key), title=r.title, snippet=r.snippet, score=round(r.score, 4)
            )
            for r in found
            if tagged is None or r.key in tagged
        ]
        return SearchResults(query=query, hits=hits[:limit])


def search_titles(vault: AppState, query: str, limit: int = 20, offset: int = 0) -> TitleMatches:
    """Pages by title or slug: exact, then prefix, then substring, then (when nothing
    else matches) close spellings; `limit` of them from `offset`, and how many in all."""
    _check_query(query)
    with reading(vault):
        text = query.strip().lower()
        wanted = slug_from_path(text)
        if not wanted and not text:
            return TitleMatches(query=query, matches=[], offset=offset)
        table = vault.index.pages
        keys = [k for k in dict.fromkeys((wanted, text)) if k]  # the slug form and the title form
        kinds: dict[str, str] = {}
        for kind, lookup in (
            ("exact", table.named),
            ("prefix", table.named_starting),
            ("substring", table.named_containing),
        ):
            found = {page for key in keys for page in lookup(key, len(vault.graph))}
            for page in sorted(found - set(kinds), key=lambda p: (vault.handle(p), p)):
                kinds[page] = kind
        if not kinds and wanted:
            close = names.suggest(vault, parse_name(wanted), MAX_CLOSE_NAMES, substrings=False)
            kinds = dict.fromkeys((names.find(vault, h).key for h in close), "fuzzy")
        start, end, next_offset = _window(len(kinds), offset, limit)
        return TitleMatches(
            query=query,
            matches=[_title_match(vault, s, k) for s, k in list(kinds.items())[start:end]],
            total=len(kinds),
            offset=offset,
            next_offset=next_offset,
        )


def _title_match(vault: AppState, key: str, kind: str) -> TitleMatch:
    node = _node(vault, key)
    return TitleMatch(
        slug=vault.handle(key),
        title=node.title,
        is_placeholder=node.is_placeholder,
        match=kind,  # type: ignore[arg-type]
    )


def get_backlinks(
    vault: AppState,
    name: str,
    include_unlinked: bool = False,
    offset: int = 0,
    limit: int | None = None,
) -> Backlinks:
    """Lines in other pages that link here (one row per line, with how many links to
    the page it holds); optionally lines that mention the title without linking. The
    rows are one list, the links then the mentions, of which `limit` rows from `offset`
    are shown (all with None); the counts are of the whole list."""
    with reading(vault):
        slug = names.find(vault, name).key
        title = vault.graph.title(slug)
        lines = [
            (source, line, first.context, 1 + len(rest))
            for (source, line), (first, *rest) in groupby(
                vault.index.links.to_page(slug), key=lambda k: (k.source, k.line)
            )
        ]
        names_of = [title, *vault.index.pages.aliases_of([slug])[slug]]
        unlinked = _mentions(vault, slug, names_of) if include_unlinked else None
        start, end, next_offset = _window(len(lines) + len(unlinked or []), offset, limit)
        linked = [
            Backlink(slug=vault.handle(s), title=vault.graph.title(s), line=n, text=t, links=k)
            for s, n, t, k in lines[start:end]
        ]
        return Backlinks(
            slug=vault.handle(slug),
            title=title,
            linked=linked,
            unlinked=None
            if unlinked is None
            else unlinked[max(0, start - len(lines)) : max(0, end - len(lines))],
            offset=offset,
            next_offset=next_offset,
            total=len(lines),
            linking_pages=len({source for source, *_ in lines}),
            links=sum(count for *_, count in lines),
            unlinked_total=None if unlinked is None else len(unlinked),
        )


def _window(count: int, offset: int, limit: int | None) -> tuple[int, int, int | None]:
    """The rows a page of a list of `count` rows shows, from `offset`, at most `limit`
    of them (all with None): start, end, and the offset of the next page (None at the end)."""
    start = min(offset, count)
    end = count if limit is None else min(count, start + limit)
    return start, end, end if end < count else None


def _mentions(vault: AppState, slug: str, names_of: list[str]) -> list[Backlink]:
    """Lines in other pages that name the page (by title or alias) without linking."""
    found: list[Backlink] = []
    sources = {
        s for name in names_of for s in vault.index.search.pages_matching(name, MAX_MENTION_PAGES)
    }
    for source in sorted(sources):
        row = vault.index.pages.get(source)
        if source == slug or row is None or row.path is None:
            continue
        try:
            text = read_text(vault, row.path)
        except LoreError:
            continue
        found += [
            Backlink(
                slug=vault.handle(source),
                title=row.title,
                line=line,
                text=line_text.strip(),
                links=0,
            )
            for line, line_text in mentions.find_mentions(text, *names_of)
        ]
    return found


def get_graph(
    vault: AppState,
    name: str | None = None,
    depth: int = 1,
    offset: int = 0,
    limit: int | None = None,
) -> GraphResult:
    """A page's neighbourhood to `depth` (1-3), or without a name, the vault's shape:
    `limit` rows from `offset` of the neighbourhood's nodes (all of them with None), or
    of each of the shape's lists (`SHAPE_ROWS` with None)."""
    if not 1 <= depth <= 3:
        raise InvalidArgumentError("depth must be 1, 2 or 3.")
    with reading(vault):
        if name is None or not name.strip():
            return _shape(vault, offset, SHAPE_ROWS if limit is None else limit)
        slug = names.find(vault, name).key
        seen, edges = vault.graph.neighbourhood(slug, depth)
        order = sorted(seen.items(), key=lambda kv: (kv[1], kv[0]))
        start, end, next_offset = _window(len(order), offset, limit)
        nodes = []
        for node_slug, hops in order[start:end]:
            node = vault.graph.node(node_slug)
            nodes.append(
                GraphNode(
                    slug=vault.handle(node_slug),
                    title=node.title if node else node_slug,
                    is_placeholder=bool(node and node.is_placeholder),
                    depth=hops,
                )
            )
        place = {node_slug: i for i, (node_slug, _) in enumerate(order)}
        return GraphResult(
            neighbourhood=Neighbourhood(
                center=vault.handle(slug),
                depth=depth,
                nodes=nodes,
                edges=[  # each link once: with the page of nodes that holds its later end
                    GraphEdge(source=vault.handle(a), target=vault.handle(b))
                    for a, b in edges
                    if start <= max(place[a], place[b]) < end
                ],
                node_count=len(order),
                edge_count=len(edges),
            ),
            offset=offset,
            next_offset=next_offset,
        )


def _shape(vault: AppState, offset: int, limit: int) -> GraphResult:
    graph = vault.graph
    orphans = sorted(vault.handles(graph.orphans()))
    unreferenced = sorted(vault.handles(graph.unreferenced()))
    most_linked = graph.most_linked(len(graph), placeholders=False)
    unresolved = graph.most_linked(len(graph), placeholders=True)
    longest = max(len(orphans), len(unreferenced), len(most_linked), len(unresolved))
    start, end, next_offset = _window(longest, offset, limit)

    def counted(pairs: list[tuple[str, int]]) -> list[LinkedCount]:
        return [
            LinkedCount(slug=vault.handle(s), title=graph.title(s), count=n)
            for s, n in pairs[start:end]
        ]

    shape = VaultShape(
        pages=len(vault.pages),
        placeholders=len(vault.placeholders),
        links=graph.edge_count(),
        orphans=orphans[start:end],
        orphan_count=len(orphans),
        unreferenced=unreferenced[start:end],
        unreferenced_count=len(unreferenced),
        most_linked=counted(most_linked),
        most_linked_count=len(most_linked),
        unresolved=counted(unresolved),
        unresolved_count=len(unresolved),
    )
    return GraphResult(shape=shape, offset=offset, next_offset=next_offset)
