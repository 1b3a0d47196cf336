"""Concurrent writers on one vault: overlapping saves to one page (through the tools and
through two states), and the watcher applying outside edits while tools save and read.
The last write wins, and the index agrees with the files."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from conftest import write
from helpers import (
    assert_matches_fresh,
    fresh_snapshot,
    ok,
    placeholder_slugs,
    snapshot,
)
from lore_mcp import vault_ops as engine
from lore_mcp.server import build_server
from lore_mcp.vault_ops import AppState

pytestmark = pytest.mark.anyio


async def test_overlapping_saves_to_one_page(vault_dir: Path) -> None:
    versions = [f"Version {i}: token{i}x and [[Link {i}]].\n" for i in range(12)]
    results: list[dict[str, Any]] = []
    state = engine.open_vault(vault_dir, scan=False)
    async with Client(build_server(state), mode="legacy") as client:

        async def save(content: str) -> None:
            results.append(await ok(client, "save_page", slug="Contested", content=content))

        async with anyio.create_task_group() as group:
            for content in versions:
                group.start_soon(save, content)
        assert sum(r["created"] for r in results) == 1
        on_disk = (vault_dir / "Contested.md").read_text(encoding="utf-8")
        winner = versions.index(on_disk)
        page = await ok(client, "read_page", slug="contested")
        assert page["content"] == on_disk
        assert [link["slug"] for link in page["links"]] == [f"link-{winner}"]
        for i in range(len(versions)):
            hits = (await ok(client, "search", query=f"token{i}x"))["hits"]
            assert [h["slug"] for h in hits] == (["contested"] if i == winner else [])
        assert sorted(placeholder_slugs(state)) == [f"link-{winner}"]
        assert_matches_fresh(state)


def test_two_states_racing_on_one_page(vault_dir: Path) -> None:
    """Two states stand for two processes: their saves to one page interleave."""
    a, b = engine.open_vault(vault_dir), engine.open_vault(vault_dir)
    sent: set[str] = set()
    errors: list[BaseException] = []

    def racer(state: AppState, who: str) -> None:
        try:
            for i in range(40):
                content = f"{who} {i} links [[{who} {i}]]\n"
                sent.add(content)
                engine.save_page(state, "Contested", content)
                seen = engine.read_page(state, "Contested").content
                assert seen in sent, "a read saw content no save sent"
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=racer, args=(s, w)) for s, w in ((a, "a"), (b, "b"))]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert errors == []
        on_disk = (vault_dir / "Contested.md").read_text(encoding="utf-8")
        for state in (a, b):
            page = engine.read_page(state, "Contested")
            assert page.content == on_disk
            assert [link.target for link in page.links] == [on_disk.split("[[")[1][:-3]]
        assert snapshot(a) == snapshot(b)
        assert_matches_fresh(a)
    finally:
        a.close()
        b.close()


def _outside_editor(root: Path, rounds: int, done: threading.Event) -> None:
    """Another program editing the vault: new pages, rewrites of one page, deletions."""
    try:
        for i in range(rounds):
            write(root, f"ext/Ext {i}.md", f"Outside {i} links [[Tool {i}]] and [[Shared]].\n")
            write(root, "Shared.md", f"Shared, rewritten outside ({i}), see [[Ext {i}]].\n")
            if i % 10 == 9:
                (root / f"ext/Ext {i - 5}.md").unlink()
            time.sleep(0.005)
    finally:
        done.set()


async def test_watcher_and_tools_at_once(vault_dir: Path) -> None:
    rounds = 60
    state = engine.open_vault(vault_dir, scan=False)
    async with Client(build_server(state, watch=True), mode="legacy") as client:
        await ok(client, "list_pages")
        done = threading.Event()
        editor = threading.Thread(target=_outside_editor, args=(vault_dir, rounds, done))
        editor.start()
        i = 0
        while not done.is_set() or i < rounds:
            await ok(client, "save_page", slug=f"tools/Tool {i}", content=f"[[Ext {i}]] [[Shared]]")
            await ok(client, "read_page", slug="Shared")
            await ok(client, "search", query="outside")
            if i % 7 == 0:
                await ok(client, "save_page", slug="Shared", content=f"Shared, by a tool ({i}).\n")
            i += 1
        editor.join(30)
        # The watcher applies the last edits within about a second, then all agree.
        with anyio.fail_after(15):
            while snapshot(state) != fresh_snapshot(vault_dir):
                await anyio.sleep(0.2)
        assert_matches_fresh(state)
        page = await ok(client, "read_page", slug="Shared")
        assert page["content"] == (vault_dir / "Shared.md").read_text(encoding="utf-8")
        assert len(state.pages) == i + rounds - rounds // 10 + 1


async def test_a_read_that_must_wait_leaves_the_server_answering(vault_dir: Path) -> None:
    """A read that finds the vault busy (here a thread holding the lock, as the watcher
    does while it applies an edit) waits in its worker thread, so the server keeps
    answering, and it reads the page once the vault is free."""
    write(vault_dir, "Page.md", "Before.\n")
    state = engine.open_vault(vault_dir, scan=False)
    async with Client(build_server(state), mode="legacy") as client:
        assert (await ok(client, "read_page", slug="page"))["content"] == "Before.\n"
        busy, release = threading.Event(), threading.Event()

        def edit_while_holding_the_lock() -> None:
            with state.lock:
                busy.set()
                release.wait(10)
                engine.save_page(state, "Page", "After.\n")

        editor = threading.Thread(target=edit_while_holding_the_lock)
        editor.start()
        busy.wait(10)
        read: dict[str, Any] = {}

        async def read_page() -> None:
            read.update(await ok(client, "read_page", slug="page"))

        with anyio.fail_after(10):
            async with anyio.create_task_group() as group:
                group.start_soon(read_page)
                tools = await client.list_tools(cache_mode="bypass")  # sent, not cached
                assert "read_page" in {tool.name for tool in tools.tools}
                assert not read  # still waiting for the lock
                release.set()
        editor.join(10)
        assert read["content"] == "After.\n"
