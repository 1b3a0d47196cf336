"""The nine MCP tools, a thin layer over the engine (`lore_mcp.vault_ops`).

Each tool is a typed function: its docstring and type hints are its schema. It runs one
vault operation in a worker thread and returns the result twice: as structured content
(the tool's output schema) and as a few readable lines for the model (see `render`).
`_call` is the one place where a `LoreError` becomes an `isError` result, and where a
call's `vault` argument becomes the vault it reaches (as far as the caller's `Grant`
lets it: see `vaults`).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, TypeVar

import anyio.to_thread
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from lore_mcp import audit, budget, render
from lore_mcp import vault_ops as engine
from lore_mcp.config import PAGE_ROWS
from lore_mcp.errors import LoreError
from lore_mcp.models import (
    Backlinks,
    Budgeted,
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
from lore_mcp.vault_ops import AppState
from lore_mcp.vaults import Grant, Vaults, VaultSpec, grant_of

log = logging.getLogger(__name__)

PROGRESS_EVERY_S = 0.5  # how often a call waiting for the first index pass says how far

T = TypeVar("T")
R = TypeVar("R", bound=Budgeted)

INTERNAL_ERROR = "Internal error; the server logged the details and is still running."


@dataclass
class Served:
    """What every tool call can reach: the vaults, the result size limit, and the id the
    audit log gives a stdio session (one process serves one)."""

    vaults: Vaults
    max_result_chars: int
    stdio_session: str = field(default_factory=lambda: uuid.uuid4().hex)


Ctx = Context[Served, Any]

# -- the boundary -------------------------------------------------------------------------


async def _call(
    ctx: Ctx, name: str | None, operation: Callable[[AppState], R], *, writes: bool = False
) -> R:
    """Run a vault operation on the vault `name` (None: the default) in a worker thread;
    its failures become isError results, and its result names the vault. A cancelled
    call lets go of the thread at once (the operation still finishes, under the
    vault's lock)."""
    vaults = ctx.request_context.lifespan_context.vaults
    try:
        spec = _reached(vaults, _grant(ctx), name, writes)
        vault = vaults.opened(spec.name)
        if vault is None:  # opening it reads the disk: not on the event loop
            vault = await anyio.to_thread.run_sync(vaults.get, spec.name)
    except LoreError as exc:
        raise ToolError(str(exc)) from exc
    await _wait_for_index(ctx, vault)
    try:
        result = await anyio.to_thread.run_sync(operation, vault, abandon_on_cancel=True)
    except LoreError as exc:
        raise ToolError(str(exc)) from exc
    except Exception as exc:
        log.exception("unexpected failure in a vault operation")
        raise ToolError(INTERNAL_ERROR) from exc
    result.vault = spec.name
    return result


def _reached(vaults: Vaults, grant: Grant, name: str | None, writes: bool) -> VaultSpec:
    """The vault a call reaches, or why it may not: a vault the grant does not reach is
    unknown; a write needs a writer grant and a vault that is not read-only."""
    spec = vaults.spec(name, grant)
    if writes and grant.role != "writer":
        raise LoreError(
            "This token may only read: save_page, delete_page and rename_page are "
            "refused. Ask for a token with role=writer to change pages."
        )
    if writes and spec.read_only:
        writable = [n for n in vaults.reachable(grant) if not vaults.spec(n).read_only]
        also = f" The vaults that take writes: {', '.join(writable)}." if writable else ""
        raise LoreError(f"The vault {spec.name!r} is read-only; nothing was changed.{also}")
    return spec


def _grant(ctx: Ctx) -> Grant:
    """What the caller may reach (see `vaults.grant_of`)."""
    return grant_of(ctx.request_context.request)


async def _wait_for_index(ctx: Ctx, vault: AppState) -> None:
    """While the first index pass runs, wait for it, telling a client that sent a
    progress token how far it is (files read, of how many), so the wait is not silent."""
    told = -1
    while not vault.ready.is_set():
        done, total = vault.indexed
        if done > told:
            told = done
            said = f"{done:,} of {total:,} files read" if total else "looking at the files"
            await ctx.report_progress(done, total or None, f"indexing the vault: {said}")
        await anyio.to_thread.run_sync(vault.ready.wait, PROGRESS_EVERY_S, abandon_on_cancel=True)


def _door(ctx: Ctx) -> audit.Door:
    """Who writes, for the audit log: the MCP door, the session (Mcp-Session-Id over
    HTTP; the process's own id on stdio) and the client as its initialize named it."""
    headers = ctx.headers  # None on stdio
    if headers is None:
        session: str | None = ctx.request_context.lifespan_context.stdio_session
    else:
        session = headers.get("mcp-session-id")
    params = ctx.session.client_params
    info = params.client_info if params is not None else None
    return audit.Door(
        "mcp",
        session=session,
        client_name=info.name if info is not None else None,
        client_version=info.version if info is not None else None,
        token=_grant(ctx).label,
    )


def _result(ctx: Ctx, model: R, draw: Callable[[R], str]) -> CallToolResult:
    """Readable text for the model, the model's fields as structured content; both
    within the result size limit (an oversized result is shrunk by `budget`)."""
    limit = ctx.request_context.lifespan_context.max_result_chars
    fitted, drawn = budget.fit(model, lambda result: render.noted(draw(result), result), limit)
    return CallToolResult(
        content=[TextContent(type="text", text=drawn)],
        structured_content=fitted.model_dump(mode="json"),
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
    view = await _call(
        ctx, vault, lambda v: engine.read_page_or_version(v, slug, offset, column, version)
    )
    return _result(ctx, view, render.page)


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
    door = _door(ctx)
    saved = await _call(
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
    return _result(ctx, saved, render.saved)


async def delete_page(
    slug: Name, ctx: Ctx, expected_hash: ExpectedHash = None, vault: VaultName = None
) -> Annotated[CallToolResult, DeleteResult]:
    """Delete a page; save_page with mode='restore' can bring it back. A page still
    linked to stays on as a placeholder."""
    door = _door(ctx)
    deleted = await _call(
        ctx,
        vault,
        lambda v: engine.delete_page(v, slug, door=door, expected_hash=expected_hash),
        writes=True,
    )
    return _result(ctx, deleted, render.deleted)


async def rename_page(
    slug: Name,
    new_name: NewName,
    ctx: Ctx,
    expected_hash: ExpectedHash = None,
    vault: VaultName = None,
) -> Annotated[CallToolResult, RenameResult]:
    """Rename or move a page and rewrite every [[link]] to it (aliases, headings and
    embeds kept). The new name must be free."""
    door = _door(ctx)
    renamed = await _call(
        ctx,
        vault,
        lambda v: engine.rename_page(v, slug, new_name, door=door, expected_hash=expected_hash),
        writes=True,
    )
    return _result(ctx, renamed, render.renamed)


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
    listing = await _call(
        ctx,
        vault,
        lambda v: engine.list_pages(v, folder, include_placeholders, offset, limit, sort=sort),
    )
    return _result(ctx, listing, render.listing)


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
    results = await _call(ctx, vault, lambda v: engine.search(v, query, limit, offset))
    return _result(ctx, results, render.hits)


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
    matches = await _call(ctx, vault, lambda v: engine.search_titles(v, query, limit, offset))
    return _result(ctx, matches, render.title_matches)


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
    backlinks = await _call(
        ctx, vault, lambda v: engine.get_backlinks(v, slug, include_unlinked, offset, PAGE_ROWS)
    )
    return _result(ctx, backlinks, render.backlinks)


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
    graph = await _call(ctx, vault, lambda v: engine.get_graph(v, slug, depth, offset, limit))
    if graph.shape is not None:
        served = ctx.request_context.lifespan_context.vaults
        graph.other_vaults = [n for n in served.reachable(_grant(ctx)) if n != graph.vault]
    return _result(ctx, graph, render.graph)


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
