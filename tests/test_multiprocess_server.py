"""Two real `lore-mcp` processes on one vault, the normal shape (one per client session),
watchers on: each saves hundreds of pages while reading the other's. No write is lost,
each sees the other's pages at once (a page the other server has confirmed is there on
the first read), no error (above all no "database is locked") reaches a tool result,
and the shared index equals a fresh one."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from helpers import assert_matches_fresh, placeholder_slugs, text
from lore_mcp import vault_ops
from rawpipe import server_env
from test_tool_concurrency import race_append_and_rename

pytestmark = pytest.mark.anyio

PAGES = 200


class Session:
    """One client session on its own server process, with what it saw."""

    def __init__(self, client: Client, me: str) -> None:
        self.client = client
        self.me = me
        self.saved = -1  # the last page this session's server has confirmed
        self.seen = 0  # pages of the other session read

    async def ok(self, tool: str, **arguments: Any) -> dict[str, Any]:
        with anyio.fail_after(30):
            result = await self.client.call_tool(tool, arguments)
        assert result.is_error is False, f"{self.me} {tool}: {text(result)}"
        assert isinstance(result.structured_content, dict)
        return result.structured_content

    async def sees(self, slug: str) -> None:
        """Read `slug`, which the other process has confirmed writing: it is there."""
        page = await self.ok("read_page", slug=slug)
        assert page["is_placeholder"] is False, f"{self.me} read {slug} as a placeholder"
        self.seen += 1

    async def run(self, other: Session) -> None:
        me, them = self.me, other.me
        for i in range(PAGES):
            content = f"{me} page {i}: see [[{them}/page {i}]] and [[{me} hub]].\n"
            saved = await self.ok("save_page", slug=f"{me}/page {i}", content=content)
            assert saved["slug"] == f"{me}/page-{i}"
            self.saved = i
            if other.saved >= 0:
                await self.sees(f"{them}/page {other.saved}")
            if i % 20 == 0:
                hits = await self.ok("search", query=f"{them} page", limit=5)
                assert hits["hits"] or other.saved < 0
                await self.ok("list_pages", folder=them, limit=5)


def params(vault: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "lore_mcp", "--vault", str(vault), "--log-level", "WARNING"],
        env=server_env(),
    )


@pytest.mark.slow
async def test_two_servers_on_one_vault_lose_nothing(vault_dir: Path) -> None:
    with anyio.fail_after(120):
        async with (
            Client(params(vault_dir), mode="legacy") as first,
            Client(params(vault_dir)) as second,
        ):
            a, b = Session(first, "a"), Session(second, "b")
            async with anyio.create_task_group() as group:
                group.start_soon(a.run, b)
                group.start_soon(b.run, a)
            # Each reads the other's last page, and both agree on the vault's shape.
            await a.sees(f"b/page {PAGES - 1}")
            await b.sees(f"a/page {PAGES - 1}")
            shapes = [(await s.ok("get_graph"))["shape"] for s in (a, b)]
            assert shapes[0] == shapes[1]
            assert shapes[0]["pages"] == 2 * PAGES
            assert shapes[0]["placeholders"] == 2  # a-hub and b-hub
    assert a.seen > PAGES // 2 and b.seen > PAGES // 2
    state = vault_ops.open_vault(vault_dir)
    try:
        assert len(state.pages) == 2 * PAGES
        assert sorted(placeholder_slugs(state)) == ["a-hub", "b-hub"]
        page = vault_ops.read_page(state, "a/page 7")
        assert [link.slug for link in page.links] == ["b/page-7", "a-hub"]
        assert [ref.slug for ref in page.backlinks] == ["b/page-7"]
        assert_matches_fresh(state)
    finally:
        state.close()


@pytest.mark.slow
async def test_an_append_racing_a_rename_in_another_process(vault_dir: Path) -> None:
    """One server appends to `Draft i` while another renames it to `Final i`: the append
    lands in the renamed page or is refused naming it, never makes `Draft i.md` again."""
    with anyio.fail_after(240):
        async with (
            Client(params(vault_dir), mode="legacy") as first,
            Client(params(vault_dir), mode="legacy") as second,
        ):
            seen = await race_append_and_rename(first, second, vault_dir, rounds=40)
    assert seen == {"appended", "refused"}
    state = vault_ops.open_vault(vault_dir)
    try:
        assert_matches_fresh(state)
    finally:
        state.close()
