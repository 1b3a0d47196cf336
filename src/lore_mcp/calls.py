"""The boundary every MCP tool call crosses (the tools are in `tools`).

`call` runs one vault operation in a worker thread (a quick read that can run at once,
on the event loop): it is the one place where a
`LoreError` becomes an `isError` result, and where a call's `vault` argument becomes the
vault it reaches (as far as the caller's `Grant` lets it: see `vaults`). `tool_result`
returns the result twice: as structured content (the tool's output schema) and as a few
readable lines for the model (see `render`).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio.to_thread
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent

from lore_mcp import audit, budget, render
from lore_mcp.errors import LoreError
from lore_mcp.models import Budgeted
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


async def call(
    ctx: Ctx,
    name: str | None,
    operation: Callable[[AppState], R],
    *,
    writes: bool = False,
    quick: bool = False,
) -> R:
    """Run a vault operation on the vault `name` (None: the default) in a worker thread
    (a `quick` one on the event loop when it can run at once: see `_at_once`); its
    failures become isError results, and its result names the vault. A cancelled
    call lets go of the thread at once (the operation still finishes, under the
    vault's lock)."""
    vaults = ctx.request_context.lifespan_context.vaults
    try:
        spec = _reached(vaults, caller_grant(ctx), name, writes)
        vault = vaults.opened(spec.name)
        if vault is None:  # opening it reads the disk: not on the event loop
            vault = await anyio.to_thread.run_sync(vaults.get, spec.name)
    except LoreError as exc:
        raise ToolError(str(exc)) from exc
    await _wait_for_index(ctx, vault)
    try:
        result = _at_once(vault, operation) if quick else None
        if result is None:
            result = await anyio.to_thread.run_sync(operation, vault, abandon_on_cancel=True)
    except LoreError as exc:
        raise ToolError(str(exc)) from exc
    except Exception as exc:
        log.exception("unexpected failure in a vault operation")
        raise ToolError(INTERNAL_ERROR) from exc
    result.vault = spec.name
    return result


def _at_once(vault: AppState, operation: Callable[[AppState], R]) -> R | None:
    """A quick read's result, made here on the event loop when it can be at once: the
    first index pass is done, no other call holds the vault, and nothing another
    process committed waits to be taken in. Else None, and the call takes a worker
    thread: the hop to one costs more than such a read does (about 0.15 ms of the
    1.7 ms a search of 10,000 pages takes over the SDK's own cost). Such a read that
    finds the index damaged rebuilds it here as it would in a thread: the call waits
    for that either way."""
    if not vault.ready.is_set() or not vault.lock.acquire(blocking=False):
        return None
    try:
        return operation(vault) if vault.in_step() else None
    finally:
        vault.lock.release()


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


def caller_grant(ctx: Ctx) -> Grant:
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


def caller_door(ctx: Ctx) -> audit.Door:
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
        token=caller_grant(ctx).label,
    )


def tool_result(ctx: Ctx, model: R, draw: Callable[[R], str]) -> CallToolResult:
    """Readable text for the model, the model's fields as structured content; both
    within the result size limit (an oversized result is shrunk by `budget`)."""
    limit = ctx.request_context.lifespan_context.max_result_chars
    fitted, drawn = budget.fit(model, lambda result: render.noted(draw(result), result), limit)
    return CallToolResult(
        content=[TextContent(type="text", text=drawn)],
        structured_content=fitted.model_dump(mode="json"),
    )
