"""The nine MCP tools, a thin layer over the engine (`lore_mcp.vault_ops`).

Each tool is a typed function: its docstring and type hints are its schema. It runs one
vault operation in a worker thread through `calls.call` and returns the result twice: as
structured content (the tool's output schema) and as a few readable lines for the model
(see `calls.tool_result` and `render`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from lore_mcp import render
from lore_mcp import vault_ops as engine
from lore_mcp.calls import Ctx, call, caller_door, caller_grant, tool_result
from lore_mcp.config import PAGE_ROWS
from lore_mcp.models import (
    Backlinks,
    DeleteResult,
    GraphResult,
    PageList,
    PageView,
    RenameResult,
    SaveResult,
    SearchResults,
    TitleMatches,
)
from lore_mcp.schemas import (
    Centre,
    Column,
    Content,
    Depth,
    ExpectedHash,
    Folder,
    Heading,
    LineOffset,
    Name,
    NewName,
    Offset,
    OldText,
    Query,
    ReadVersion,
    RestoreVersion,
    SaveMode,
    VaultName,
    limit_of,
)

# -- the nine tools -----------------------------------------------------------------------


async def read_page(
    slug: Name,
    ctx: Ctx,
    offset: LineOffset = 0,
    column: Column = 0,
    version: ReadVersion = None,
    *,
    vault: VaultName = None,
) -> Annotated[CallToolResult, PageView]:
    """Read a page: its Markdown, backlinks, links and kept_versions. A placeholder
    (linked, not written yet) reads as empty. An unknown name fails with the closest slugs.
    A long page comes in parts (next_offset, next_column). version=N reads kept version N."""
    view = await call(
        ctx,
        vault,
        lambda v: engine.read_page_or_version(v, slug, offset, column, version),
        quick=True,
    )
    return tool_result(ctx, view, render.page)


async def save_page(
    slug: Name,
    ctx: Ctx,
    content: Content = None,
    *,
    mode: SaveMode = "replace",
    old_text: OldText = None,
    heading: Heading = None,
    expected_hash: ExpectedHash = None,
    version: RestoreVersion = None,
    vault: VaultName = None,
) -> Annotated[CallToolResult, SaveResult]:
    """Write a page. mode replace (default, the only idempotent one) sends it whole;
    append, prepend, edit (old_text becomes content) and section (the body under heading
    becomes content) change part of it; restore puts back kept version `version` (1 undoes
    the last change). A bare name writes that page in any folder, else creates it at the
    top; a path ('notes/Idea') is exactly that file. Links, search and graph update at once."""
    door = caller_door(ctx)
    saved = await call(
        ctx,
        vault,
        lambda v: engine.save_or_restore(
            v,
            slug,
            content,
            mode=mode,
            old_text=old_text,
            heading=heading,
            version=version,
            door=door,
            expected_hash=expected_hash,
        ),
        writes=True,
    )
    return tool_result(ctx, saved, render.saved)


async def delete_page(
    slug: Name, ctx: Ctx, expected_hash: ExpectedHash = None, vault: VaultName = None
) -> Annotated[CallToolResult, DeleteResult]:
    """Delete a page; save_page with mode='restore' can bring it back. A page still
    linked to stays on as a placeholder."""
    door = caller_door(ctx)
    deleted = await call(
        ctx,
        vault,
        lambda v: engine.delete_page(v, slug, door=door, expected_hash=expected_hash),
        writes=True,
    )
    return tool_result(ctx, deleted, render.deleted)


async def rename_page(
    slug: Name,
    new_name: NewName,
    ctx: Ctx,
    expected_hash: ExpectedHash = None,
    vault: VaultName = None,
) -> Annotated[CallToolResult, RenameResult]:
    """Rename or move a page and rewrite every [[link]] to it (aliases, headings and
    embeds kept). The new name must be free."""
    door = caller_door(ctx)
    renamed = await call(
        ctx,
        vault,
        lambda v: engine.rename_page(v, slug, new_name, door=door, expected_hash=expected_hash),
        writes=True,
    )
    return tool_result(ctx, renamed, render.renamed)


async def list_pages(
    ctx: Ctx,
    folder: Folder = "",
    include_placeholders: Annotated[bool, Field(description="Also list placeholders")] = False,
    offset: Offset = 0,
    limit: Annotated[int, limit_of("pages")] = 100,
    *,
    sort: Annotated[
        Literal["slug", "modified"],
        Field(description="By slug, or the latest modified first"),
    ] = "slug",
    vault: VaultName = None,
) -> Annotated[CallToolResult, PageList]:
    """List pages with their links out and in and when each was modified, by slug or
    the latest modified first (what changed lately)."""
    listing = await call(
        ctx,
        vault,
        lambda v: engine.list_pages(v, folder, include_placeholders, offset, limit, sort=sort),
    )
    return tool_result(ctx, listing, render.listing)


async def search(
    query: Annotated[Query, Field(description="Words to find; any text is safe to send")],
    ctx: Ctx,
    limit: Annotated[int, limit_of("hits")] = 10,
    offset: Offset = 0,
    *,
    vault: VaultName = None,
) -> Annotated[CallToolResult, SearchResults]:
    """Full-text search, best first. Pages holding any query word match; all words, a
    phrase, or words in the title or aliases rank higher. Word forms, case and accents do
    not matter; "quoted phrases" match exactly; C++, .NET, v1.10 match as written; #tag
    keeps to tagged pages; the last word matches as a prefix; any script. Each hit has its
    best passage."""
    results = await call(ctx, vault, lambda v: engine.search(v, query, limit, offset), quick=True)
    return tool_result(ctx, results, render.hits)


async def search_titles(
    query: Annotated[Query, Field(description="A page name, or part of one")],
    ctx: Ctx,
    limit: Annotated[int, limit_of("matches")] = 20,
    offset: Offset = 0,
    *,
    vault: VaultName = None,
) -> Annotated[CallToolResult, TitleMatches]:
    """Find pages by title or slug: exact, prefix, substring, then close spellings. Use
    it to learn what a page is called."""
    matches = await call(
        ctx, vault, lambda v: engine.search_titles(v, query, limit, offset), quick=True
    )
    return tool_result(ctx, matches, render.title_matches)


async def get_backlinks(
    slug: Name,
    ctx: Ctx,
    include_unlinked: Annotated[
        bool, Field(description="Also plain mentions of the title")
    ] = False,
    offset: Offset = 0,
    *,
    vault: VaultName = None,
) -> Annotated[CallToolResult, Backlinks]:
    """The lines that link to this page, with line numbers; optionally plain mentions
    of its title that are no links yet."""
    backlinks = await call(
        ctx, vault, lambda v: engine.get_backlinks(v, slug, include_unlinked, offset, PAGE_ROWS)
    )
    return tool_result(ctx, backlinks, render.backlinks)


async def get_graph(
    ctx: Ctx,
    slug: Centre = None,
    depth: Depth = 1,
    offset: Offset = 0,
    *,
    vault: VaultName = None,
) -> Annotated[CallToolResult, GraphResult]:
    """The link graph: with a slug, the pages within `depth` links of it and their links;
    without, the vault's shape (counts, orphans, unreferenced and most linked pages,
    unresolved targets)."""
    limit = PAGE_ROWS if slug and slug.strip() else None
    graph = await call(ctx, vault, lambda v: engine.get_graph(v, slug, depth, offset, limit))
    if graph.shape is not None:
        served = ctx.request_context.lifespan_context.vaults
        graph.other_vaults = [n for n in served.reachable(caller_grant(ctx)) if n != graph.vault]
    return tool_result(ctx, graph, render.graph)


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the server lists it: its function, its title, and its hints."""

    fn: Callable[..., Any]
    title: str
    hints: ToolAnnotations


def _tool(
    fn: Callable[..., Any],
    title: str,
    *,
    read_only: bool = False,
    destructive: bool = False,
    idempotent: bool = True,
) -> ToolSpec:
    """A read-only tool needs no destructive or idempotent hint: the spec ignores them
    then, and every session would pay for them in `tools/list`."""
    if read_only:
        return ToolSpec(fn, title, ToolAnnotations(read_only_hint=True, open_world_hint=False))
    hints = ToolAnnotations(
        read_only_hint=False,
        destructive_hint=destructive,
        idempotent_hint=idempotent,
        open_world_hint=False,
    )
    return ToolSpec(fn, title, hints)


TOOLS: list[ToolSpec] = [
    _tool(read_page, "Read a page", read_only=True),
    _tool(save_page, "Save a page", destructive=True, idempotent=False),
    _tool(delete_page, "Delete a page", destructive=True),
    _tool(rename_page, "Rename a page", idempotent=False),
    _tool(list_pages, "List pages", read_only=True),
    _tool(search, "Search page text", read_only=True),
    _tool(search_titles, "Find pages by title", read_only=True),
    _tool(get_backlinks, "Show backlinks", read_only=True),
    _tool(get_graph, "Show the link graph", read_only=True),
]
