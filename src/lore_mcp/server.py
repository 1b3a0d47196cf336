"""The MCP server: the nine tools (see `tools`), pages as resources, and a lifespan.

`build_server(vaults)` takes the vaults to serve (`vaults.Vaults`, or one vault opened
with `vault_ops.open_vault(root, scan=False)`) and owns them from then on: its lifespan
indexes the default vault in a background thread (so `initialize` is answered at once)
and starts its watcher; another vault opens on the first call that names it; at exit
every vault opened is closed. `run_stdio` serves it on stdin and stdout with the SDK's
transport.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import os
import signal
import sys
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any
from urllib.parse import quote

import anyio
import anyio.to_thread
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    CallToolResult,
    Completion,
    CompletionArgument,
    GetPromptResult,
    InputRequiredResult,
    JSONRPCNotification,
    JSONRPCRequest,
    PromptReference,
    ResourceTemplateReference,
    jsonrpc_message_adapter,
)
from mcp.types import Tool as MCPTool
from pydantic import ValidationError

from lore_mcp import __version__, jsonrpc, schemas
from lore_mcp import vault_ops as engine
from lore_mcp.calls import Served
from lore_mcp.config import DEFAULT_MAX_RESULT_CHARS, MIN_RESULT_CHARS
from lore_mcp.errors import (
    InvalidArgumentError,
    InvalidNameError,
    LoreError,
    PageNotFoundError,
    UnsafePathError,
)
from lore_mcp.middleware import REQUEST, Answers, ClientLog
from lore_mcp.prompts import PROMPT_ARGUMENTS_WITH_PAGES, PROMPTS
from lore_mcp.stdio import Verdict, screened_stdio
from lore_mcp.tools import TOOLS
from lore_mcp.vault_ops import AppState
from lore_mcp.vaults import EVERYTHING, Grant, UnknownVaultError, Vaults, grant_of

log = logging.getLogger(__name__)

PAGE_TEMPLATE = "lore://page/{+slug}"  # a page of the default vault
VAULT_PAGE_TEMPLATE = "lore://{vault}/page/{+slug}"
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
    "save_page writes a whole page, or with mode append, prepend, edit (one exact text) or "
    "section (one heading's body) changes part of it without sending the rest; a "
    "[[link]] to a page that does not exist yet becomes a placeholder that save_page can "
    "fill later. rename_page moves a page and fixes every link to it; delete_page keeps "
    "the file's last version in the history, as every write keeps what it replaces: "
    "read_page with version=N reads one, save_page with mode='restore' puts it back. "
    "list_pages browses by folder."
)


# -- the server and its lifespan ----------------------------------------------------------


class LoreServer(MCPServer[Served]):
    """MCPServer, with arguments that fail validation answered in plain sentences and
    input schemas listed lean (`schemas`). `served` is what its tools reach."""

    served: Served | None = None  # set by build_server

    async def list_tools(self) -> list[MCPTool]:
        # With one vault, the vault argument says nothing (the tool still takes it).
        one_vault = self.served is None or len(self.served.vaults.names) == 1
        return [
            tool.model_copy(
                update={
                    "input_schema": schemas.lean(tool.input_schema, drop=("vault",) * one_vault),
                    "output_schema": tool.output_schema and schemas.inlined(tool.output_schema),
                }
            )
            for tool in await super().list_tools()
        ]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Served, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(_plainly(name, exc.__cause__)) from exc.__cause__
            raise

    async def get_prompt(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        context: Context[Served, Any] | None = None,
    ) -> GetPromptResult | InputRequiredResult:
        """An unknown prompt is invalid params (-32602), as the spec says, not code 0."""
        if name not in {prompt.name for prompt in await self.list_prompts()}:
            raise MCPError(
                INVALID_PARAMS, f"Unknown prompt: {name!r}; prompts/list says which there are"
            )
        return await super().get_prompt(name, arguments, context)


def _plainly(tool: str, error: ValidationError) -> str:
    """What was wrong with the arguments, and what to send instead."""
    problems = []
    for item in error.errors(include_url=False):
        where = ".".join(str(part) for part in item["loc"]) or "the arguments"
        problems.append(f"{where}: {item['msg'].rstrip('.')}")
    return (
        f"{tool} was called with arguments it cannot take ({'; '.join(problems)}). "
        "Check the tool's input schema and call it again."
    )


def build_server(
    vaults: Vaults | AppState,
    *,
    watch: bool = False,
    max_result_chars: int = DEFAULT_MAX_RESULT_CHARS,
) -> LoreServer:
    """An MCP server over `vaults` (or one vault), which it owns from now on: while it
    serves, each vault is indexed in the background once opened and, with `watch`,
    watched; at exit each is closed.

    Tool results keep to `max_result_chars` characters. When every vault is read-only
    there are no write tools at all. Pages are also resources, `lore://VAULT/page/{slug}`
    (and `lore://page/{slug}` in the default vault)."""
    if isinstance(vaults, AppState):
        vaults = Vaults.of(vaults, watch=watch)
    vaults.watch = watch
    if max_result_chars < MIN_RESULT_CHARS:
        vaults.close()
        raise InvalidArgumentError(
            f"The result size limit must be at least {MIN_RESULT_CHARS} characters; "
            f"{max_result_chars} was asked for."
        )
    served = Served(vaults, max_result_chars)
    client_log = ClientLog()
    server = LoreServer(
        "lore-mcp",
        title="lore-mcp",
        version=__version__,
        instructions=instructions(vaults),
        lifespan=_lifespan(served, client_log),
    )
    server.served = served
    server.middleware.append(
        Answers(
            lambda ctx: instructions(ctx.lifespan_context.vaults, grant_of(ctx.request)),
            _page_resources,
            client_log,
        )
    )
    writable = any(not spec.read_only for spec in vaults.specs())
    for tool in TOOLS:
        if tool.hints.read_only_hint or writable:
            description = inspect.cleandoc(tool.fn.__doc__ or "")  # no docstring indentation
            server.add_tool(
                tool.fn, title=tool.title, description=description, annotations=tool.hints
            )
    server.resource(
        PAGE_TEMPLATE,
        name="page",
        title="A vault page",
        description="A page's Markdown as it is on disk. The slug may hold folders "
        "(lore://page/concepts/slugs); a title or a bare name works too.",
        mime_type="text/markdown",
    )(_page_reader(None))
    server.resource(
        VAULT_PAGE_TEMPLATE,
        name="vault-page",
        title="A page of a named vault",
        description="A page of the vault named, as lore://page/{slug} reads the default's.",
        mime_type="text/markdown",
    )(_page_reader(VAULT_PAGE_TEMPLATE))
    for prompt, title, writes in PROMPTS:
        if not (writes and not writable):
            server.prompt(title=title)(prompt)
    server.completion()(_completer(vaults))  # type: ignore[no-untyped-call]  # the SDK types it not
    return server


MAX_COMPLETIONS = 100  # what completion/complete may answer at once


def _completer(vaults: Vaults) -> Callable[..., Any]:
    """`completion/complete` for the page templates and the prompt arguments that name a
    page: a template's `vault` completes to the vaults' names; a `slug` or a page to the
    pages whose name starts with, or holds, what was typed (as search_titles finds them),
    or the first pages when nothing was typed yet, in the vault the template's `vault`
    names (else the default). Only vaults the caller may reach: the SDK does not hand
    the handler its request, so the middleware keeps it (`middleware.REQUEST`)."""

    async def complete(
        ref: PromptReference | ResourceTemplateReference,
        argument: CompletionArgument,
        context: Any,
    ) -> Completion | None:
        named = None
        grant = grant_of(REQUEST.get())
        if isinstance(ref, ResourceTemplateReference):
            if ref.uri == VAULT_PAGE_TEMPLATE and argument.name == "vault":
                typed = argument.value.strip().lower()
                reachable = vaults.reachable(grant)
                return Completion(values=[n for n in reachable if n.lower().startswith(typed)])
            if ref.uri not in (PAGE_TEMPLATE, VAULT_PAGE_TEMPLATE) or argument.name != "slug":
                return None
            if ref.uri == VAULT_PAGE_TEMPLATE:
                named = (getattr(context, "arguments", None) or {}).get("vault")
        elif (ref.name, argument.name) not in PROMPT_ARGUMENTS_WITH_PAGES:
            return None
        typed = argument.value.strip()

        def names() -> tuple[list[str], int]:
            vault = vaults.get(vaults.spec(named, grant).name)
            if not typed:
                listed = engine.list_pages(vault, limit=MAX_COMPLETIONS)
                return [page.slug for page in listed.pages], listed.total
            found = engine.search_titles(vault, typed, limit=MAX_COMPLETIONS)
            return [m.slug for m in found.matches if not m.is_placeholder], found.total

        try:
            values, total = await anyio.to_thread.run_sync(names)
        except LoreError:  # a vault unknown to the caller, or one that fails to open
            return Completion(values=[])

        return Completion(values=values, total=total, has_more=total > len(values))

    return complete


RESOURCES_PER_PAGE = 200  # pages in one resources/list answer; the cursor reads on


async def _page_resources(
    ctx: ServerRequestContext[Served, Any], cursor: str | None
) -> tuple[list[dict[str, Any]], str | None]:
    """The default vault's pages as resources (`lore://page/...`, by slug), a page of
    them from `cursor` (where the last answer stopped), and the cursor that reads on, if
    any. The default vault is the caller's: the first its token reaches, over HTTP."""
    try:
        offset = int(cursor or 0)
    except ValueError:
        offset = -1
    if offset < 0 or (cursor is not None and str(offset) != cursor):
        raise MCPError(INVALID_PARAMS, f"Invalid cursor {cursor!r}: pass a nextCursor back")
    vaults = ctx.lifespan_context.vaults
    try:
        name = vaults.spec(None, grant_of(ctx.request)).name
        vault = await anyio.to_thread.run_sync(vaults.get, name)
    except LoreError as exc:
        raise MCPError(INTERNAL_ERROR, str(exc)) from exc
    await anyio.to_thread.run_sync(vault.ready.wait, abandon_on_cancel=True)
    try:
        listed = await anyio.to_thread.run_sync(
            lambda: engine.list_pages(vault, offset=offset, limit=RESOURCES_PER_PAGE)
        )
    except LoreError as exc:
        raise MCPError(INTERNAL_ERROR, str(exc)) from exc
    resources = [
        {
            "uri": page_uri(page.slug),
            "name": page.slug,
            "title": page.title,
            "mimeType": "text/markdown",
        }
        for page in listed.pages
    ]
    return resources, None if listed.next_offset is None else str(listed.next_offset)


def page_uri(slug: str) -> str:
    """The resource URI of the page `slug` names (`PAGE_TEMPLATE`)."""
    return PAGE_TEMPLATE.replace("{+slug}", quote(slug, safe="/"))


def _page_reader(template: str | None) -> Callable[..., Any]:
    """The reader of a page template: of the default vault (`template` None), or of
    the one its `vault` argument names; either only as far as the caller's grant
    reaches (a vault it does not reach is not found)."""

    def read(ctx: Context[Served, Any], name: str | None, slug: str) -> str:
        vaults = ctx.request_context.lifespan_context.vaults
        try:
            spec = vaults.spec(name, grant_of(ctx.request_context.request))
            view = engine.read_page(vaults.get(spec.name), slug)
        except (PageNotFoundError, InvalidNameError, UnsafePathError, UnknownVaultError) as exc:
            raise ResourceNotFoundError(str(exc)) from exc
        except LoreError as exc:
            raise ResourceError(str(exc)) from exc
        if view.is_placeholder:
            raise ResourceNotFoundError(
                f"{view.slug!r} is a placeholder: pages link to it, but it has no file yet."
            )
        return view.content

    if template is None:

        async def page(slug: str, ctx: Context[Served, Any]) -> str:
            return await anyio.to_thread.run_sync(read, ctx, None, slug)

        return page

    async def vault_page(vault: str, slug: str, ctx: Context[Served, Any]) -> str:
        return await anyio.to_thread.run_sync(read, ctx, vault, slug)

    return vault_page


def instructions(vaults: Vaults | AppState, grant: Grant = EVERYTHING) -> str:
    """Which vault, how many pages (as far as the index already knows), and the tools;
    with several vaults, each by name with its size (those `grant` reaches), and which
    is the default. A damaged index leaves the count out: the first index pass rebuilds
    it, and start-up must not wait for that or fail on it."""
    if isinstance(vaults, AppState):
        return _one_vault(vaults)
    reached = [spec for spec in vaults.specs() if grant.reaches(spec.name)]
    if len(vaults.names) == 1:  # opened now, as a server of one vault always did
        return _one_vault(vaults.get())
    if not reached:
        return "This server holds no memory vault this token may reach."
    default = vaults.spec(None, grant).name
    sizes = vaults.page_counts()
    listed = "; ".join(
        f"{spec.name!r} ({sizes[spec.name]}"
        + (", default" if spec.name == default else "")
        + (", read-only" if spec.read_only else "")
        + ")"
        for spec in reached
    )
    read_only = grant.role != "writer" or all(spec.read_only for spec in reached)
    guide = READ_ONLY_GUIDE if read_only else GUIDE
    return (
        f"This server holds {len(reached)} memory vault{'s' * (len(reached) > 1)}: {listed}. "
        "Every tool takes "
        f"vault=NAME; without it a call goes to {default!r}. Results say which "
        f"vault they came from. {guide}"
    )


def _one_vault(vault: AppState) -> str:
    # Counted from the index file on a connection of its own: the vault's own may be
    # rebuilt this moment by a heal in the index thread (a session can start any time).
    pages = 0 if vault.ready.is_set() else engine.last_index_count(vault.root) or 0

    if vault.ready.is_set():
        size = f"{len(vault.pages)} pages"
    elif pages:
        size = f"{pages} pages at its last index; a refresh is running"
    else:
        size = "being indexed now; the first calls wait for it"
    guide = READ_ONLY_GUIDE if vault.read_only else GUIDE
    return f"This is the memory vault {vault.root.name!r} ({size}). {guide}"


def _lifespan(
    served: Served, client_log: ClientLog
) -> Callable[[MCPServer[Served]], AbstractAsyncContextManager[Served]]:
    @asynccontextmanager
    async def lifespan(_: MCPServer[Served]) -> AsyncIterator[Served]:
        logging.getLogger("lore_mcp").addHandler(client_log)
        await anyio.to_thread.run_sync(served.vaults.start)
        try:
            yield served
        finally:
            logging.getLogger("lore_mcp").removeHandler(client_log)
            client_log.close()
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(_shut_down, served.vaults)

    return lifespan


def run_stdio(server: MCPServer[Served], vault: Vaults | AppState) -> None:
    """Serve `vault` (the vaults `server` was built on) on this process's stdin and stdout,
    with the SDK's transport, until stdin closes or SIGTERM or SIGINT asks for a stop.
    Lines the SDK cannot read are answered in front of it (`stdio.screened_stdio`)."""
    try:
        with screened_stdio(_screen_line):
            anyio.run(_serve_stdio, server, vault)
    except* BrokenPipeError:  # its lifespan has closed the vault
        log.info("the client closed its end of stdout; stopped serving")


def _screen_line(line: str) -> Verdict:
    """Whether the SDK's stdio transport can read `line` (the very parse its reader
    makes, which drops whatever fails it), and which request it is or cancels. A request
    it reads as something else (a notification when its id is of no valid type) it
    never answers, so that is refused too."""
    try:
        message = jsonrpc_message_adapter.validate_json(line, by_name=False)
    except Exception as exc:
        return Verdict(refused=str(exc))
    if isinstance(message, JSONRPCRequest):
        return Verdict(request=message.id)
    if jsonrpc.is_request(line):
        return Verdict(refused="it has an id and a method but is no valid request")
    if isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled":
        return Verdict(cancels=(message.params or {}).get("requestId"))
    return Verdict()


async def _serve_stdio(server: MCPServer[Served], vault: Vaults | AppState) -> None:
    async with anyio.create_task_group() as tasks:
        if sys.platform != "win32":  # no signal receiver there; Ctrl-C still stops it
            tasks.start_soon(_stop_on_signal, tasks.cancel_scope, vault)
        await server.run_stdio_async()
        tasks.cancel_scope.cancel()


async def _stop_on_signal(scope: anyio.CancelScope, vault: Vaults | AppState) -> None:
    """Stop the server on SIGTERM or SIGINT: its lifespan closes the vault as when
    stdin closes. The SDK reads stdin in a thread that nothing can wake but input, so
    once the vault is closed the process exits rather than wait for the client."""
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for number in signals:
            log.info("stopping on %s", signal.Signals(number).name)
            threading.Thread(target=_exit_when_closed, args=(vault,), daemon=True).start()
            scope.cancel()
            return


def _exit_when_closed(vault: Vaults | AppState) -> None:
    vault.closed.wait()
    sys.stderr.flush()
    os._exit(0)


def _shut_down(vaults: Vaults) -> None:
    vaults.close()
    # Output a tool left in stdout's buffer goes out now, while the stdio transport
    # still points fd 1 at stderr; at exit it would reach the client's end.
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
