"""Listing, searching and the link graph: the read-only questions about a vault."""

from __future__ import annotations

from datetime import UTC, datetime
from itertools import groupby
from typing import Literal

from lore_mcp import mentions
from lore_mcp.config import MAX_QUERY_CHARS
from lore_mcp.errors import InvalidArgumentError, LoreError
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
from lore_mcp.vault_ops.pages import read_text

MAX_MENTION_PAGES = 200
SHAPE_LIST_LIMIT = 50


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


def _summary(vault: AppState, key: str, mtime_ns: int) -> PageSummary:
    node = vault.graph.node(key)
    assert node is not None, key
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


def search(vault: AppState, query: str, limit: int = 10) -> SearchResults:
    """Full-text search, best first (see `lore_mcp.index.finder`). `#tag` words find
    the pages with that tag: alone they list them, beside other words they filter."""
    _check_query(query)
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


def search_titles(vault: AppState, query: str, limit: int = 20) -> TitleMatches:
    """Pages by title or slug: exact, then prefix, then substring, then close spellings."""
    _check_query(query)
    with reading(vault):
        text = query.strip().lower()
        wanted = slug_from_path(text)
        if not wanted and not text:
            return TitleMatches(query=query, matches=[])
        table = vault.index.pages
        keys = [k for k in dict.fromkeys((wanted, text)) if k]  # the slug form and the title form
        kinds: dict[str, str] = {}
        for kind, lookup in (
            ("exact", table.named),
            ("prefix", table.named_starting),
            ("substring", table.named_containing),
        ):
            found = {page for key in keys for page in lookup(key, limit)}
            for page in sorted(found - set(kinds), key=lambda p: (vault.handle(p), p)):
                kinds[page] = kind
            if len(kinds) >= limit:
                break
        matches = [_title_match(vault, s, k) for s, k in list(kinds.items())[:limit]]
        if not matches and wanted:
            close = names.suggest(vault, parse_name(wanted), limit, substrings=False)
            matches = [_title_match(vault, names.find(vault, h).key, "fuzzy") for h in close]
        return TitleMatches(query=query, matches=matches)


def _title_match(vault: AppState, key: str, kind: str) -> TitleMatch:
    node = vault.graph.node(key)
    assert node is not None, key
    return TitleMatch(
        slug=vault.handle(key),
        title=node.title,
        is_placeholder=node.is_placeholder,
        match=kind,  # type: ignore[arg-type]
    )


def get_backlinks(vault: AppState, name: str, include_unlinked: bool = False) -> Backlinks:
    """Lines in other pages that link here (one row per line, with how many links to
    the page it holds); optionally lines that mention the title without linking."""
    with reading(vault):
        slug = names.find(vault, name).key
        title = vault.graph.title(slug)
        linked = [
            Backlink(
                slug=vault.handle(source),
                title=vault.graph.title(source),
                line=line,
                text=first.context,
                links=1 + len(rest),
            )
            for (source, line), (first, *rest) in groupby(
                vault.index.links.to_page(slug), key=lambda k: (k.source, k.line)
            )
        ]
        names_of = [title, *vault.index.pages.aliases_of([slug])[slug]]
        unlinked = _mentions(vault, slug, names_of) if include_unlinked else None
        return Backlinks(slug=vault.handle(slug), title=title, linked=linked, unlinked=unlinked)


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


def get_graph(vault: AppState, name: str | None = None, depth: int = 1) -> GraphResult:
    """A page's neighbourhood to `depth` (1-3), or without a name, the vault's shape."""
    if not 1 <= depth <= 3:
        raise InvalidArgumentError("depth must be 1, 2 or 3.")
    with reading(vault):
        if name is None or not name.strip():
            return GraphResult(shape=_shape(vault))
        slug = names.find(vault, name).key
        seen, edges = vault.graph.neighbourhood(slug, depth)
        nodes = []
        for node_slug, hops in sorted(seen.items(), key=lambda kv: (kv[1], kv[0])):
            node = vault.graph.node(node_slug)
            nodes.append(
                GraphNode(
                    slug=vault.handle(node_slug),
                    title=node.title if node else node_slug,
                    is_placeholder=bool(node and node.is_placeholder),
                    depth=hops,
                )
            )
        return GraphResult(
            neighbourhood=Neighbourhood(
                center=vault.handle(slug),
                depth=depth,
                nodes=nodes,
                edges=[GraphEdge(source=vault.handle(a), target=vault.handle(b)) for a, b in edges],
            )
        )


def _shape(vault: AppState) -> VaultShape:
    graph = vault.graph
    orphans = graph.orphans()
    unreferenced = graph.unreferenced()

    def counted(pairs: list[tuple[str, int]]) -> list[LinkedCount]:
        return [LinkedCount(slug=vault.handle(s), title=graph.title(s), count=n) for s, n in pairs]

    return VaultShape(
        pages=len(vault.pages),
        placeholders=len(vault.placeholders),
        links=graph.edge_count(),
        orphans=sorted(vault.handles(orphans))[:SHAPE_LIST_LIMIT],
        orphan_count=len(orphans),
        unreferenced=sorted(vault.handles(unreferenced))[:SHAPE_LIST_LIMIT],
        unreferenced_count=len(unreferenced),
        most_linked=counted(graph.most_linked(10, placeholders=False)),
        unresolved=counted(graph.most_linked(SHAPE_LIST_LIMIT, placeholders=True)),
    )
