"""The server's prompts: ready-made first messages a person can pick in their client.

- `start_session` starts a session from the memory: the vault's home page, the pages
  changed lately and, for a topic, the pages about it; then how to use the memory.
- `record` asks the agent to put what was decided or learned into the right pages
  (only on a vault that can be written).

Each reads the vault through the engine when it is asked for, so it shows the vault as
it is at that moment.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import anyio.to_thread
from mcp.server.mcpserver import Context
from pydantic import Field

from lore_mcp import vault_ops as engine
from lore_mcp.errors import LoreError
from lore_mcp.models import PageView
from lore_mcp.vault_ops import AppState

HOME_NAMES = ("Home", "Index", "README", "Start Here")  # a top-level page of one of these
MAX_HOME_CHARS = 8_000  # of the home page shown in full; the rest is read with read_page
RECENT = 10  # pages changed lately that start_session lists
ON_TOPIC = 5  # search hits that start_session lists for a topic

Topic = Annotated[
    str | None, Field(max_length=500, description="What the session is about (optional)")
]
Summary = Annotated[
    str, Field(min_length=1, max_length=20_000, description="What was decided or learned")
]
Page = Annotated[str | None, Field(max_length=1000, description="The page it belongs on, if known")]
PROMPT_ARGUMENTS_WITH_PAGES = {("record", "page")}  # completed with page names


def _vault(ctx: Context[Any, Any]) -> AppState:
    vault: AppState = ctx.request_context.lifespan_context.vault
    return vault


async def start_session(ctx: Context[Any, Any], topic: Topic = None) -> str:
    """Start a session from the memory vault: its home page, what changed lately and
    (for a topic) the pages about it, with how to use the memory from here."""
    vault = _vault(ctx)
    await anyio.to_thread.run_sync(vault.ready.wait, abandon_on_cancel=True)
    return await anyio.to_thread.run_sync(_start_session, vault, topic, abandon_on_cancel=True)


def _start_session(vault: AppState, topic: str | None) -> str:
    parts = [
        f"You have a persistent memory: the vault {vault.root.name!r} "
        f"({len(vault.pages)} pages), served by this MCP server. Your context resets "
        "between sessions; the vault does not."
    ]
    home = _home(vault)
    if home is not None:
        content = home.content
        if len(content) > MAX_HOME_CHARS:
            content = content[:MAX_HOME_CHARS] + "\n\n[... read_page reads on]"
        parts.append(f"Its home page, {home.title!r} ({home.slug}):\n\n{content.strip()}")
    recent = engine.list_pages(vault, limit=RECENT, sort="modified").pages
    if recent:
        rows = "\n".join(f"- {page.title} ({page.slug}), {page.modified}" for page in recent)
        parts.append(f"Changed lately, the latest first:\n{rows}")
    if topic and topic.strip():
        try:
            hits = engine.search(vault, topic, ON_TOPIC).hits
        except LoreError:
            hits = []
        listed = "\n".join(f"- {hit.title} ({hit.slug})" for hit in hits) or "- none yet"
        parts.append(f"Pages about {topic.strip()!r}:\n{listed}")
    parts.append(
        "Before you start, read what bears on the task (search, then read_page). As you "
        "work, keep what is worth remembering: decisions and why, facts learned, open "
        "questions, in the page each belongs on (save_page with mode section or append "
        "changes part of a page), linked with [[wiki links]] to the pages it relates to."
        if not vault.read_only
        else "Before you start, read what bears on the task (search, then read_page). "
        "This vault is read-only here: nothing can be saved to it."
    )
    return "\n\n".join(parts)


def _home(vault: AppState) -> PageView | None:
    """The vault's home page: the first top-level page named as `HOME_NAMES`, else the
    most linked page; None in an empty vault."""
    for name in HOME_NAMES:
        try:
            view = engine.read_page(vault, f"{name}.md")
        except LoreError:
            continue

        if not view.is_placeholder:
            return view
    shape = engine.get_graph(vault).shape
    for linked in shape.most_linked if shape else []:
        try:
            view = engine.read_page(vault, linked.slug)
        except LoreError:
            continue
        if not view.is_placeholder:
            return view
    return None


async def record(ctx: Context[Any, Any], summary: Summary, page: Page = None) -> str:
    """Record what was decided or learned into the right pages of the memory vault."""
    vault = _vault(ctx)
    where = ""
    if page and page.strip():
        try:
            view = await anyio.to_thread.run_sync(engine.read_page, vault, page)
            where = f" It belongs on {view.title!r} ({view.slug}) first."
        except LoreError:
            where = f" It belongs on a page named {page.strip()!r}, which does not exist yet."
    return (
        f"Record this in the memory vault {vault.root.name!r}:\n\n{summary.strip()}\n\n"
        f"Find where it belongs first: search and search_titles for its subject.{where} "
        "Change an existing page in place (save_page with mode section or append; edit "
        "for one passage) rather than rewriting it, and keep what it said unless this "
        "replaces it; say why a decision was taken. Where no page fits, create one named "
        "after its subject and link it from a related page. Link every page you touch to "
        "the pages it mentions with [[wiki links]]. Then say which pages you changed."
    )


PROMPTS: list[tuple[Callable[..., Any], str, bool]] = [  # function, title, writes
    (start_session, "Start a session from memory", False),
    (record, "Record a decision", True),
]
