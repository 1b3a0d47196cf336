"""The nine MCP tools, a thin layer over `vault_ops`.

Each tool validates its arguments (the schema does most of it), runs one vault operation
(a read on the event loop when the vault is free, anything else in a worker thread; see
`_read`), and returns the operation's model twice: as structured content (the tool's
output schema) and as a few readable lines for the model (see `render`). `_call` is the
one place where a `LoreError` becomes an `isError` result.

`build_server(state)` takes a vault opened with `vault_ops.open_vault(root, scan=False)`
and owns it from then on: its lifespan indexes the vault in a background thread (so
`initialize` is answered at once), starts the watcher, and closes the state at exit.
"""

import logging
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Annotated, Any, Concatenate, ParamSpec, TypeVar

import anyio
import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from lore_mcp import __version__, budget, render, vault_ops
from lore_mcp.errors import (
    InvalidArgumentError,
    InvalidNameError,
    LoreError,
    PageNotFoundError,
    UnsafePathError,
)
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
from lore_mcp.slugs import MAX_NAME_CHARS
from lore_mcp.state import MAX_CONTENT_BYTES, AppState

log = logging.getLogger(__name__)

T = TypeVar("T")
P = ParamSpec("P")
R = TypeVar("R", bound=Budgeted)
Ctx = Context[AppState, Any]

INTERNAL_ERROR = "Internal error; the server logged the details and is still running."
PAGE_TEMPLATE = "lore://page/{+slug}"
READ_ONLY_GUIDE = (
    "This server is read-only: it cannot save, delete or rename pages. To recall: search "
    "(full text) or search_titles (names), then read_page; get_graph and get_backlinks "
    "show how pages connect; list_pages browses by folder."
)
GUIDE = (
    "Pages are Markdown files joined by [[wiki links]]. Name a page by slug, title or path "
    "('concepts/link-resolution', 'Link Resolution'); a bare name finds it in any folder. "
    "To recall: search (full text) or search_titles (names), then read_page, which also "
    "shows backlinks and links; get_graph without a slug gives the vault's shape, "
    "get_backlinks and get_graph with a slug show how a page connects. To remember: "
    "save_page writes a whole page (read it first, then send the full new content); a "
    "[[link]] to a page that does not exist yet becomes a placeholder that save_page can "
    "fill later. rename_page moves a page and fixes every link to it; delete_page moves "
    "the file to .lore/trash/. list_pages browses by folder."
)

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
    str,
    Field(
        max_length=MAX_CONTENT_BYTES,
        description="The page's complete Markdown (at most 1 MiB of UTF-8); replaces the file",
    ),
]
Folder = Annotated[
    str,
    Field(max_length=MAX_NAME_CHARS, description="Only pages under this folder; empty for all"),
]
Centre = Annotated[
    str | None,
    Field(max_length=MAX_NAME_CHARS, description="Centre page; leave out for the vault's shape"),
]
Depth = Annotated[int, Field(ge=1, le=3, description="How many links from the centre (1-3)")]
Offset = Annotated[int, Field(ge=0, description="Skip this many pages (for paging)")]
LineOffset = Annotated[
    int,
    Field(
        ge=0,
        description="Skip this many lines: 0 reads from the top; a result cut to fit the "
        "size limit gives the offset that reads on (next_offset)",
    ),
]
Query = Annotated[str, Field(min_length=1, max_length=vault_ops.MAX_QUERY_CHARS)]


def _limit(what: str) -> Any:
    return Field(ge=1, le=100, description=f"At most this many {what} (1-100)")


# -- the boundary -------------------------------------------------------------------------


async def _read(
    ctx: Ctx, read: Callable[Concatenate[AppState, P], T], *args: P.args, **kwargs: P.kwargs
) -> T:
    """Run a read of the vault, on the event loop when it can start at once (which is
    nearly always): the hop to a worker thread and back costs more than most reads do,
    about 0.3 ms of a 3 ms read_page over stdio. Otherwise it waits in a thread, as
    writes always do: they fsync, and may wait for another process's write lock."""
    state = _state(ctx)
    return await _call(lambda: read(state, *args, **kwargs), read_from=state)


async def _call(operation: Callable[[], T], read_from: AppState | None = None) -> T:
    """Run a vault operation in a worker thread (see `_read` for `read_from`); failures
    become isError results."""
    # A cancelled call (or stdin closing) lets go of the thread at once instead of waiting
    # for the first index pass; the operation itself still finishes under the state's lock.
    try:
        if read_from is not None:
            with vault_ops.reads_at_once(read_from) as at_once:
                if at_once:
                    return operation()
        return await anyio.to_thread.run_sync(operation, abandon_on_cancel=True)
    except LoreError as exc:
        raise ToolError(str(exc)) from exc
    except Exception as exc:
        log.exception("unexpected failure in a vault operation")
        raise ToolError(INTERNAL_ERROR) from exc


def _state(ctx: Ctx) -> AppState:
    return ctx.request_context.lifespan_context


def _result(ctx: Ctx, model: R, draw: Callable[[R], str]) -> CallToolResult:
    """Readable text for the model, the model's fields as structured content; both
    within the vault's result size limit (an oversized result is shrunk by `budget`)."""

    def text(result: R) -> str:
        return render.noted(draw(result), result)

    fitted, drawn = budget.fit(model, text, _state(ctx).max_result_chars)
    return CallToolResult(
        content=[TextContent(type="text", text=drawn)],
        structured_content=fitted.model_dump(mode="json"),
    )


# -- the nine tools -----------------------------------------------------------------------


async def read_page(
    slug: Name, ctx: Ctx, offset: LineOffset = 0
) -> Annotated[CallToolResult, PageView]:
    """Read one page of the memory vault: its Markdown, the pages that link to it
    (backlinks) and the links it holds.

    A placeholder (a page that is linked to but not written yet) reads as empty content
    plus who links to it. An unknown name fails with the closest slugs; an ambiguous one
    is resolved like a link and the other candidates are listed. A page too long for one
    result is cut at a heading or line break; call again with the offset it gives."""
    view = await _read(ctx, vault_ops.read_page, slug, offset)
    return _result(ctx, view, render.page)


async def save_page(
    slug: Name, content: Content, ctx: Ctx
) -> Annotated[CallToolResult, SaveResult]:
    """Write a whole page: create it, overwrite it, or fill in a placeholder.

    The file is created at the slug's path (folders included) when the page is new.
    Links, search index and graph are updated in the same call, so later calls see the
    new state. Overwriting needs a name that matches one page only. To edit, read the
    page first and send the full new content."""
    saved = await _call(lambda: vault_ops.save_page(_state(ctx), slug, content, door="mcp"))
    return _result(ctx, saved, render.saved)


async def delete_page(slug: Name, ctx: Ctx) -> Annotated[CallToolResult, DeleteResult]:
    """Delete a page. The file is moved to .lore/trash/ in the vault (recoverable by
    hand). If other pages still link to it, it stays on as a placeholder. The name must
    match one page only."""
    deleted = await _call(lambda: vault_ops.delete_page(_state(ctx), slug, door="mcp"))
    return _result(ctx, deleted, render.deleted)


async def rename_page(
    slug: Name, new_name: NewName, ctx: Ctx
) -> Annotated[CallToolResult, RenameResult]:
    """Rename or move a page and rewrite every [[link]] that pointed at it, in every
    page (aliases, headings and embeds are kept). Nothing is lost. The name must match
    one page only, and the new name must be free."""
    renamed = await _call(lambda: vault_ops.rename_page(_state(ctx), slug, new_name, door="mcp"))
    return _result(ctx, renamed, render.renamed)


async def list_pages(
    ctx: Ctx,
    folder: Folder = "",
    include_placeholders: Annotated[
        bool, Field(description="Also list placeholders (linked, not written yet)")
    ] = False,
    offset: Offset = 0,
    limit: Annotated[int, _limit("pages")] = 100,
) -> Annotated[CallToolResult, PageList]:
    """List pages sorted by slug, with how many links go out and come in. Page through
    long listings with offset (the result says the next offset)."""
    listing = await _read(ctx, vault_ops.list_pages, folder, include_placeholders, offset, limit)
    return _result(ctx, listing, render.listing)


async def search(
    query: Annotated[Query, Field(description="Words to find; any text is safe to send")],
    ctx: Ctx,
    limit: Annotated[int, _limit("hits")] = 10,
) -> Annotated[CallToolResult, SearchResults]:
    """Full-text search over every page, best match first (title matches weigh more),
    the last word matched as a prefix, each hit with a snippet. Works for any script,
    CJK included."""
    results = await _read(ctx, vault_ops.search, query, limit)
    return _result(ctx, results, render.hits)


async def search_titles(
    query: Annotated[Query, Field(description="A page name, or part of one")],
    ctx: Ctx,
    limit: Annotated[int, _limit("matches")] = 20,
) -> Annotated[CallToolResult, TitleMatches]:
    """Find pages by title or slug: exact matches first, then prefixes, substrings and
    close spellings. Use it to learn what a page is called; placeholders are flagged."""
    matches = await _read(ctx, vault_ops.search_titles, query, limit)
    return _result(ctx, matches, render.title_matches)


async def get_backlinks(
    slug: Name,
    ctx: Ctx,
    include_unlinked: Annotated[
        bool, Field(description="Also find pages that mention the title without linking")
    ] = False,
) -> Annotated[CallToolResult, Backlinks]:
    """The lines in other pages that link to this page, with line numbers; optionally
    also plain-text mentions of its title that are not links yet."""
    backlinks = await _read(ctx, vault_ops.get_backlinks, slug, include_unlinked)
    return _result(ctx, backlinks, render.backlinks)


async def get_graph(
    ctx: Ctx,
    slug: Centre = None,
    depth: Depth = 1,
) -> Annotated[CallToolResult, GraphResult]:
    """The link graph. With a slug: the pages within `depth` links of it (either
    direction) and the links between them. Without: the vault's shape - counts, orphan
    pages, the most linked pages and unresolved link targets."""
    graph = await _read(ctx, vault_ops.get_graph, slug, depth)
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
    (save_page, _hints("Save a page", destructive=True)),
    (delete_page, _hints("Delete a page", destructive=True)),
    (rename_page, _hints("Rename a page", idempotent=False)),
    (list_pages, _hints("List pages", read_only=True)),
    (search, _hints("Search page text", read_only=True)),
    (search_titles, _hints("Find pages by title", read_only=True)),
    (get_backlinks, _hints("Show backlinks", read_only=True)),
    (get_graph, _hints("Show the link graph", read_only=True)),
]


# -- the server and its lifespan ----------------------------------------------------------


def _tool(fn: Callable[..., Any], hints: ToolAnnotations) -> Tool:
    """The tool for `fn`, its output schema written out in full (see `inline_refs`)."""
    tool = Tool.from_function(fn, title=hints.title, annotations=hints)
    schema = tool.fn_metadata.output_schema
    if schema is not None:
        tool.fn_metadata.output_schema = inline_refs(schema)
    return tool


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with every `{"$ref": "#/$defs/X"}` replaced by X itself, and no `$defs`.

    Clients validate every structured result against the output schema; resolving a
    reference per list item is most of that work (jsonschema spends about a third less
    time on a read_page result without them). The models are not recursive; a schema
    that is comes back unchanged."""
    definitions: dict[str, Any] = schema.get("$defs", {})

    def expand(node: Any, seen: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [expand(item, seen) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref.removeprefix("#/$defs/")
            if name in seen or name not in definitions:
                raise _Recursive
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            return {**expand(definitions[name], (*seen, name)), **siblings}
        return {k: expand(v, seen) for k, v in node.items() if k != "$defs"}

    try:
        flat: dict[str, Any] = expand(schema, ())
    except _Recursive:
        return schema
    return flat


class _Recursive(Exception):
    """A `$ref` that cannot be written out in full."""


def build_server(
    state: AppState,
    *,
    watch: bool = False,
    max_result_chars: int = budget.DEFAULT_MAX_RESULT_CHARS,
    after_index: Callable[[], object] | None = None,
) -> MCPServer[AppState]:
    """An MCP server over `state`, which it owns from now on: while it serves, the vault
    is indexed in the background and, with `watch`, watched; at exit the state is closed.
    `after_index` is called in the indexing thread once the vault is indexed (at once if
    it already was; not at all if the server stops first).

    Tool results keep to `max_result_chars` characters. A state opened read-only gets
    no write tools at all. Pages are also resources, `lore://page/{slug}`."""
    if max_result_chars < budget.MIN_RESULT_CHARS:
        state.close()
        raise InvalidArgumentError(
            f"The result size limit must be at least {budget.MIN_RESULT_CHARS} characters; "
            f"{max_result_chars} was asked for."
        )
    state.max_result_chars = max_result_chars
    server: MCPServer[AppState] = MCPServer(
        "lore-mcp",
        title="lore-mcp",
        version=__version__,
        instructions=instructions(state),
        lifespan=_lifespan(state, watch, after_index),
        tools=[
            _tool(fn, hints) for fn, hints in TOOLS if hints.read_only_hint or not state.read_only
        ],
    )
    server.resource(
        PAGE_TEMPLATE,
        name="page",
        title="A vault page",
        description="A page's Markdown as it is on disk. The slug may hold folders "
        "(lore://page/concepts/slugs); a title or a bare name works too.",
        mime_type="text/markdown",
    )(_page_reader(state))
    return server


def _page_reader(state: AppState) -> Callable[[str], str]:
    def page(slug: str) -> str:
        try:
            view = vault_ops.read_page(state, slug)
        except (PageNotFoundError, InvalidNameError, UnsafePathError) as exc:
            raise ResourceNotFoundError(str(exc)) from exc
        except LoreError as exc:
            raise ResourceError(str(exc)) from exc
        if view.is_placeholder:
            raise ResourceNotFoundError(
                f"{view.slug!r} is a placeholder: pages link to it, but it has no file yet."
            )
        return view.content

    return page


def instructions(state: AppState) -> str:
    """Which vault, how many pages (as far as the index already knows), and the tools."""
    pages = len(state.pages) if state.ready.is_set() else state.index.count_pages()
    if state.ready.is_set():
        size = f"{pages} pages"
    elif pages:
        size = f"{pages} pages at its last index; a refresh is running"
    else:
        size = "being indexed now; the first calls wait for it"
    guide = READ_ONLY_GUIDE if state.read_only else GUIDE
    return f"This is the memory vault {state.root.name!r} ({size}). {guide}"


class _Stopped(Exception):
    """The server is shutting down, so the index pass gives up (its transaction rolls back)."""


def _lifespan(
    state: AppState, watch: bool, after_index: Callable[[], object] | None
) -> Callable[[MCPServer[AppState]], AbstractAsyncContextManager[AppState]]:
    @asynccontextmanager
    async def lifespan(_: MCPServer[AppState]) -> AsyncIterator[AppState]:
        stop = threading.Event()
        worker = threading.Thread(
            target=_prepare,
            args=(state, watch, stop, after_index),
            name="lore-index",
            daemon=True,
        )
        worker.start()
        try:
            yield state
        finally:
            stop.set()
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(_shut_down, state, worker)

    return lifespan


def _prepare(
    state: AppState,
    watch: bool,
    stop: threading.Event,
    after_index: Callable[[], object] | None,
) -> None:
    """Start the watcher, then bring the index up to date (calls wait for `state.ready`),
    then call `after_index`."""
    if watch:
        _start_watcher(state)
    if not state.ready.is_set():

        def check_stop(done: int, total: int) -> None:
            if stop.is_set():
                raise _Stopped

        try:
            vault_ops.index_vault(state, progress=check_stop)
        except _Stopped:
            log.info("indexing stopped: the server is shutting down")
            return
        except Exception:
            log.exception("indexing %s failed; serving what the index already holds", state.root)
    if after_index is not None:
        after_index()


def _start_watcher(state: AppState) -> None:
    from lore_mcp.watcher import start_watcher  # watchdog loads only when watching

    try:
        start_watcher(state)
    except Exception:
        log.exception("file watching is off: the watcher failed to start")


def _shut_down(state: AppState, worker: threading.Thread) -> None:
    worker.join()
    state.close()
    log.info("closed the vault %s", state.root)
