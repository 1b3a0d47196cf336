"""Pages as MCP resources, and completion of the names a template or a prompt takes.

`page_reader` reads a page template: `lore://page/{+slug}` in the default vault,
`lore://{vault}/page/{+slug}` in the vault named. `page_resources` lists the default
vault's pages for resources/list, a page of them at a time. `completer` answers
completion/complete with vault names and page names. Each reaches only the vaults the
caller's grant reaches. `server.build_server` registers them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import anyio
import anyio.to_thread
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    Completion,
    CompletionArgument,
    PromptReference,
    ResourceTemplateReference,
)

from lore_mcp import vault_ops as engine
from lore_mcp.calls import Served
from lore_mcp.errors import InvalidNameError, LoreError, PageNotFoundError, UnsafePathError
from lore_mcp.middleware import REQUEST
from lore_mcp.prompts import PROMPT_ARGUMENTS_WITH_PAGES
from lore_mcp.vaults import UnknownVaultError, Vaults, grant_of

PAGE_TEMPLATE = "lore://page/{+slug}"  # a page of the default vault
VAULT_PAGE_TEMPLATE = "lore://{vault}/page/{+slug}"
MAX_COMPLETIONS = 100  # what completion/complete may answer at once


def completer(vaults: Vaults) -> Callable[..., Any]:
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


async def page_resources(
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


def page_reader(template: str | None) -> Callable[..., Any]:
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
