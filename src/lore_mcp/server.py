"""The MCP server: the nine tools (see `tools`), pages as resources (`resources`), and a lifespan.

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

import anyio
import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    CallToolResult,
    GetPromptResult,
    InputRequiredResult,
    JSONRPCNotification,
    JSONRPCRequest,
    jsonrpc_message_adapter,
)
from mcp.types import Tool as MCPTool
from pydantic import ValidationError

from lore_mcp import __version__, jsonrpc, schemas
from lore_mcp.calls import Served
from lore_mcp.config import DEFAULT_MAX_RESULT_CHARS, MIN_RESULT_CHARS
from lore_mcp.errors import InvalidArgumentError
from lore_mcp.instructions import instructions
from lore_mcp.middleware import Answers, ClientLog
from lore_mcp.prompts import PROMPTS
from lore_mcp.resources import (
    PAGE_TEMPLATE,
    VAULT_PAGE_TEMPLATE,
    completer,
    page_reader,
    page_resources,
)
from lore_mcp.stdio import Verdict, screened_stdio
from lore_mcp.tools import TOOLS
from lore_mcp.vault_ops import AppState
from lore_mcp.vaults import Vaults, grant_of

log = logging.getLogger(__name__)


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
            page_resources,
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
    )(page_reader(None))
    server.resource(
        VAULT_PAGE_TEMPLATE,
        name="vault-page",
        title="A page of a named vault",
        description="A page of the vault named, as lore://page/{slug} reads the default's.",
        mime_type="text/markdown",
    )(page_reader(VAULT_PAGE_TEMPLATE))
    for prompt, title, writes in PROMPTS:
        if not (writes and not writable):
            server.prompt(title=title)(prompt)
    server.completion()(completer(vaults))  # type: ignore[no-untyped-call]  # the SDK types it not
    return server


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
