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
from lore_mcp.config import MAX_CONTENT_BYTES, MAX_NAME_CHARS, MAX_QUERY_CHARS, PAGE_ROWS
from lore_mcp.edits import Mode
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
from lore_mcp.vault_ops import AppState
from lore_mcp.vaults import EVERYTHING, Grant, Vaults, VaultSpec

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

    @property
    def vault(self) -> AppState:
        """The default vault (opened now if it was not yet)."""
        return self.vaults.get()


Ctx = Context[Served, Any]

Name = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_NAME_CHARS,
        description="The page: a slug ('concepts/link-resolution'), a title "
        "('Link Resolution') or a path ('concepts/Link Resolution.md'); case-insensitive",
    ),
]
NewName = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_NAME_CHARS,
        description="The new title ('New Title', same folder) or 'folder/New Title' to move it",
    ),
]
# Characters here; the engine checks the real limit, 1 MiB of UTF-8 bytes.
Content = Annotated[
    str | None,
    Field(
        max_length=MAX_CONTENT_BYTES,
        description="replace: the page's complete Markdown (at most 1 MiB of UTF-8); append, "
        "prepend: the text to add; edit: the text that takes old_text's place; section: the "
        "section's new body; restore: leave it out (the version is the content)",
    ),
]
SaveMode = Annotated[
    Literal[Mode, "restore"],
    Field(
        description="replace (the whole page), append (at the end), prepend (after the "
        "frontmatter), edit (replace old_text), section (replace the body under heading), "
        "restore (put back kept version `version`)"
    ),
]
OldText = Annotated[
    str | None,
    Field(
        min_length=1,
        max_length=MAX_CONTENT_BYTES,
        description="edit: the exact text to replace; it must occur once in the page",
    ),
]
Heading = Annotated[
    str | None,
    Field(
        min_length=1,
        max_length=MAX_NAME_CHARS,
        description="section: the section's heading, '## Decisions' or 'Decisions'",
    ),
]
Folder = Annotated[
    str, Field(max_length=MAX_NAME_CHARS, description="Only pages under this folder; empty for all")
]
Centre = Annotated[
    str | None,
    Field(max_length=MAX_NAME_CHARS, description="Centre page; leave out for the vault's shape"),
]
Depth = Annotated[int, Field(ge=1, le=3, description="How many links from the centre (1-3)")]
Offset = Annotated[int, Field(ge=0, description="Rows to skip: 0, or a result's next_offset")]
LineOffset = Annotated[
    int,
    Field(
        ge=0,
        description="Skip this many lines: 0 reads from the top; a page read in parts "
        "gives the offset that reads on (next_offset)",
    ),
]
Column = Annotated[
    int,
    Field(
        ge=0,
        description="Then skip this many characters of that line (next_column reads on)",
    ),
]
Query = Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS)]
ExpectedHash = Annotated[
    str | None,
    Field(
        max_length=80,
        description="The page's hash as read_page gave it: the write fails, changing "
        "nothing, if the page has changed since (another agent wrote it). '' means the "
        "page must not exist yet: the write only creates it",
    ),
]
Version = Annotated[
    int | None,
    Field(
        ge=1,
        description="A kept version, 1 the newest (read_page's kept_versions says how many): "
        "read_page reads it instead of the page; save_page with mode='restore' puts it "
        "back (1 by default, which undoes the last change)",
    ),
]


VaultName = Annotated[str, Field(max_length=64, description="Which vault; empty: the default")]


def _limit(what: str) -> Any:
    return Field(ge=1, le=100, description=f"At most this many {what} (1-100)")


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


GRANT_SCOPE_KEY = "lore.grant"  # where the HTTP door's bearer check leaves a token's grant


def _grant(ctx: Ctx) -> Grant:
    """What the caller may reach. On stdio (and in memory) the parent process owns the
    pipes: everything. Over HTTP, what the bearer check found the token may reach (see
    `http.BearerAuth`), never anything the request says; a request that came by HTTP
    without it reaches nothing."""
    request = ctx.request_context.request
    scope = getattr(request, "scope", None)
    if isinstance(scope, dict) and isinstance(grant := scope.get(GRANT_SCOPE_KEY), Grant):
        return grant
    if ctx.headers is None:
        return EVERYTHING
    return Grant(label="none", vaults=frozenset(), role="reader")


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
    version: Version = None,
    *,
    vault: VaultName = "",
) -> Annotated[CallToolResult, PageView]:
    """Read one page of the memory vault: its Markdown, the pages that link to it
    (backlinks), the links it holds, and how many earlier versions the history keeps.

    A placeholder (a page that is linked to but not written yet) reads as empty content
    plus who links to it. An unknown name fails with the closest slugs; an ambiguous one
    is resolved like a link and the other candidates are listed. A page too long for one
    result is read in parts (the first says how many): call again with next_offset and
    next_column; joined, the parts are the file exactly. With version=N, reads kept
    version N instead (1 the newest; also of a deleted page), in parts the same way:
    its text, when it was kept and which write replaced it."""
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
    version: Version = None,
    vault: VaultName = "",
) -> Annotated[CallToolResult, SaveResult]:
    """Write a page: create it, change it, fill in a placeholder, or restore a version.

    mode replace (the default) sends the whole page; append and prepend add content at
    its end or start, edit replaces the one occurrence of old_text with content, section
    replaces the body under heading (up to the next heading of its level or higher).
    Prefer them to a replace for a small change to a long page: nothing else is sent or
    can be lost. A bare name changes the page of that name in any folder, else
    replace, append and prepend create it at the top; a path ('notes/Idea', 'Idea.md')
    means exactly that file. Links, search index and graph are updated in the same call;
    the version replaced is kept in the history. mode restore (no content) puts back
    kept version `version` as read_page(version=N) shows it (1, the newest, undoes the
    last change; a deleted page comes back); what it replaces is kept in turn, so a
    restore can be undone too. Only replace is idempotent."""
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
    slug: Name, ctx: Ctx, expected_hash: ExpectedHash = None, vault: VaultName = ""
) -> Annotated[CallToolResult, DeleteResult]:
    """Delete a page. Its last version is kept in the vault's history (`lore restore`
    brings it back). If other pages still link to it, it stays on as a placeholder. The
    name must match one page only."""
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
    vault: VaultName = "",
) -> Annotated[CallToolResult, RenameResult]:
    """Rename or move a page and rewrite every [[link]] that pointed at it, in every
    page (aliases, headings and embeds are kept). Nothing is lost. The name must match
    one page only, and the new name must be free. The result counts what it rewrote and
    names the first pages; get_backlinks of the new name lists all that link to it."""
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
    include_placeholders: Annotated[
        bool, Field(description="Also list placeholders (linked, not written yet)")
    ] = False,
    offset: Offset = 0,
    limit: Annotated[int, _limit("pages")] = 100,
    *,
    sort: Annotated[
        Literal["slug", "modified"],
        Field(description="slug: by slug (default); modified: the latest modified first"),
    ] = "slug",
    vault: VaultName = "",
) -> Annotated[CallToolResult, PageList]:
    """List pages with how many links go out and come in and when each file was last
    modified: by slug, or with sort="modified" the latest first (what changed lately).
    Page on with offset=next_offset."""
    listing = await _call(
        ctx,
        vault,
        lambda v: engine.list_pages(v, folder, include_placeholders, offset, limit, sort=sort),
    )
    return _result(ctx, listing, render.listing)


async def search(
    query: Annotated[Query, Field(description="Words to find; any text is safe to send")],
    ctx: Ctx,
    limit: Annotated[int, _limit("hits")] = 10,
    offset: Annotated[
        int, Field(ge=0, description="Skip this many of the best limit hits: 0, or next_offset")
    ] = 0,
    *,
    vault: VaultName = "",
) -> Annotated[CallToolResult, SearchResults]:
    """Full-text search over every page, best match first. A page matches when it holds
    any word of the query (question words, articles and the like aside); pages holding
    all of them, or holding them in their title or aliases or as a phrase, rank first.
    English words find their other forms (embedding: embed), case and accents never
    matter, "quoted phrases" match exactly, C++, .NET, node.js, v1.10 match as written,
    #tag words keep to pages with that tag, and the last word also matches longer words
    it starts. Each hit has its best passage, matches marked. Any script, CJK included.
    A result cut to fit pages on with the same limit and offset=next_offset."""
    results = await _call(ctx, vault, lambda v: engine.search(v, query, limit, offset))
    return _result(ctx, results, render.hits)


async def search_titles(
    query: Annotated[Query, Field(description="A page name, or part of one")],
    ctx: Ctx,
    limit: Annotated[int, _limit("matches")] = 20,
    offset: Offset = 0,
    *,
    vault: VaultName = "",
) -> Annotated[CallToolResult, TitleMatches]:
    """Find pages by title or slug: exact matches first, then prefixes, substrings and
    close spellings. Use it to learn what a page is called; placeholders are flagged.
    Page on with offset=next_offset."""
    matches = await _call(ctx, vault, lambda v: engine.search_titles(v, query, limit, offset))
    return _result(ctx, matches, render.title_matches)


async def get_backlinks(
    slug: Name,
    ctx: Ctx,
    include_unlinked: Annotated[
        bool, Field(description="Also find pages that mention the title without linking")
    ] = False,
    offset: Offset = 0,
    *,
    vault: VaultName = "",
) -> Annotated[CallToolResult, Backlinks]:
    """The lines in other pages that link to this page, with line numbers; optionally
    also plain-text mentions of its title that are not links yet (after the links).
    Counts cover all rows; page on with offset=next_offset."""
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
    vault: VaultName = "",
) -> Annotated[CallToolResult, GraphResult]:
    """The link graph. With a slug: the pages within `depth` links of it (either
    direction, nearest first) and the links between them. Without: the vault's shape -
    counts, orphan pages (no links in or out), unreferenced pages (nothing links to
    them), the most linked pages and unresolved link targets. Counts cover all rows; page
    on with offset=next_offset (the pages, or the shape's four lists together)."""
    limit = PAGE_ROWS if slug and slug.strip() else None
    graph = await _call(ctx, vault, lambda v: engine.get_graph(v, slug, depth, offset, limit))
    if graph.shape is not None:
        served = ctx.request_context.lifespan_context.vaults
        graph.other_vaults = [n for n in served.reachable(_grant(ctx)) if n != graph.vault]
    return _result(ctx, graph, render.graph)


def _hints(
    title: str, *, read_only: bool = False, destructive: bool = False, idempotent: bool = True
) -> ToolAnnotations:
    return ToolAnnotations(
        title=title,
        read_only_hint=read_only,
        destructive_hint=destructive,
        idempotent_hint=idempotent,
        open_world_hint=False,
    )


TOOLS: list[tuple[Callable[..., Any], ToolAnnotations]] = [
    (read_page, _hints("Read a page", read_only=True)),
    (save_page, _hints("Save a page", destructive=True, idempotent=False)),
    (delete_page, _hints("Delete a page", destructive=True)),
    (rename_page, _hints("Rename a page", idempotent=False)),
    (list_pages, _hints("List pages", read_only=True)),
    (search, _hints("Search page text", read_only=True)),
    (search_titles, _hints("Find pages by title", read_only=True)),
    (get_backlinks, _hints("Show backlinks", read_only=True)),
    (get_graph, _hints("Show the link graph", read_only=True)),
]
