"""Concurrent writers on one vault: overlapping saves to one page (through the tools and
through two states), the watcher applying outside edits while tools save and read, and
an append racing a rename. The last write wins, and the index agrees with the files."""

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
    fails,
    fresh_snapshot,
    ok,
    placeholder_slugs,
    snapshot,
    text,
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


@pytest.mark.slow  # seconds of a watcher and tools at once
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


async def test_reads_take_in_what_another_process_wrote(vault_dir: Path) -> None:
    """Reads through the tools (which run on the event loop when nothing waits to be
    taken in) see what another process committed since."""
    write(vault_dir, "Page.md", "Before.\n")
    state, other = engine.open_vault(vault_dir), engine.open_vault(vault_dir)
    try:
        async with Client(build_server(state), mode="legacy") as client:
            assert (await ok(client, "search", query="zanzibar"))["hits"] == []
            engine.save_page(other, "Island", "# Island\n\nZanzibar, and [[Page]].\n")
            hits = (await ok(client, "search", query="zanzibar"))["hits"]
            assert [hit["slug"] for hit in hits] == ["island"]
            assert (await ok(client, "search_titles", query="Isla"))["matches"][0]["slug"] == (
                "island"
            )
            page = await ok(client, "read_page", slug="page")
            assert [link["slug"] for link in page["backlinks"]] == ["island"]
    finally:
        other.close()


# -- an append racing a rename ------------------------------------------------------------


def _outcome(root: Path, i: int, error: str | None) -> str:
    """What one round of an append racing a rename left: the append landed in the renamed
    page, or it was refused as one to a renamed page. Never the old name made again."""
    assert not (root / f"Draft {i}.md").exists(), f"round {i}: the append recreated Draft {i}"
    final = (root / f"Final {i}.md").read_text(encoding="utf-8")
    if error is None:
        assert final == f"Draft {i} links [[Hub]].\nmore {i}\n", f"round {i}"
        return "appended"
    assert "was renamed" in error and f"send 'final-{i}'" in error, error
    assert final == f"Draft {i} links [[Hub]].\n", f"round {i}"
    return "refused"


async def race_append_and_rename(
    appender: Client, renamer: Client, root: Path, rounds: int
) -> set[str]:
    """`rounds` rounds of an append racing a rename, each started first in turn, between
    two clients; the outcomes seen. Every round leaves the one page at its new name."""
    seen: set[str] = set()
    for i in range(rounds):
        await ok(appender, "save_page", slug=f"Draft {i}", content=f"Draft {i} links [[Hub]].\n")
        errors: list[str | None] = []

        async def append(i: int = i, errors: list[str | None] = errors) -> None:
            arguments = {"slug": f"Draft {i}", "content": f"more {i}\n", "mode": "append"}
            result = await appender.call_tool("save_page", arguments)
            errors.append(text(result) if result.is_error else None)

        async def rename(i: int = i) -> None:
            await ok(renamer, "rename_page", slug=f"Draft {i}", new_name=f"Final {i}")

        with anyio.fail_after(30):
            async with anyio.create_task_group() as group:
                for racer in (append, rename) if i % 2 else (rename, append):
                    group.start_soon(racer)
        seen.add(_outcome(root, i, errors[0]))
    assert sorted(p.name for p in root.glob("*.md")) == sorted(
        f"Final {i}.md" for i in range(rounds)
    )
    return seen


async def _race_append_and_rename(root: Path, rounds: int, *, processes: int) -> set[str]:
    """The race between two clients on one state (threads through one engine) or on two
    (as two processes); both states agree with a fresh index after."""
    states = [engine.open_vault(root) for _ in range(processes)]
    async with (
        Client(build_server(states[0]), mode="legacy") as appender,
        Client(build_server(states[-1]), mode="legacy") as renamer,
    ):
        seen = await race_append_and_rename(appender, renamer, root, rounds)
        for client in (appender, renamer):  # each takes in what the other wrote
            await ok(client, "list_pages")
        assert snapshot(states[0]) == snapshot(states[-1])
        assert_matches_fresh(states[0])
    return seen


async def test_an_append_racing_a_rename_never_recreates_the_old_name(vault_dir: Path) -> None:
    """Two clients on two states (as two processes): one appends to `Draft i` while the
    other renames it to `Final i`. Whichever comes first, the vault holds one page, at
    the new name: the append is in it, or was refused naming it. (The append that came
    second used to make a new `Draft i.md` holding only the appended line.)"""
    await _race_append_and_rename(vault_dir, 12, processes=2)


@pytest.mark.slow
@pytest.mark.parametrize("processes", [1, 2])
async def test_many_appends_racing_renames(vault_dir: Path, processes: int) -> None:
    """The race above many more times, through one engine and through two: both
    outcomes come up, and never a third."""
    assert await _race_append_and_rename(vault_dir, 80, processes=processes) == {
        "appended",
        "refused",
    }


async def test_a_part_by_a_renamed_pages_old_name_is_refused(vault_dir: Path) -> None:
    """What a late append meets, and what it may do instead: the refusal names the page
    (through renames in a row), changes nothing, and lets expected_hash='' or a whole
    page (mode replace) make a new page at the old name, after which the name is its."""
    state = engine.open_vault(vault_dir)
    async with Client(build_server(state), mode="legacy") as client:
        await ok(client, "save_page", slug="Draft", content="Draft.\n")
        await ok(client, "save_page", slug="Hub", content="See [[Draft]].\n")
        await ok(client, "rename_page", slug="Draft", new_name="Final")
        await ok(client, "rename_page", slug="Final", new_name="done/Done")
        before = fresh_snapshot(vault_dir)
        for mode, extra in [
            ("append", {}),
            ("prepend", {}),
            ("edit", {"old_text": "Draft."}),
            ("section", {"heading": "Notes"}),
        ]:
            message = await fails(
                client, "save_page", slug="Draft", content="x", mode=mode, **extra
            )
            assert "'Draft' was renamed: the page 'Draft.md' is now 'done/Done.md'" in message
            assert "send 'done/done'" in message and "expected_hash=''" in message
        assert fresh_snapshot(vault_dir) == before
        created = await ok(
            client, "save_page", slug="Draft", content="New.\n", mode="append", expected_hash=""
        )
        assert created["created"] is True and created["path"] == "Draft.md"
        await ok(client, "save_page", slug="Draft", content="more\n", mode="append")
        assert (vault_dir / "Draft.md").read_text(encoding="utf-8") == "New.\nmore\n"
        # Deleted again, the name is free: a page was there since the rename.
        await ok(client, "delete_page", slug="Draft")
        again = await ok(client, "save_page", slug="Draft", content="Third.\n", mode="append")
        assert again["created"] is True
        await ok(client, "rename_page", slug="Draft", new_name="Elsewhere")
        replaced = await ok(client, "save_page", slug="Draft", content="Whole.\n")
        assert replaced["created"] is True  # a whole page by the old name is a new page
        pages = (p.relative_to(vault_dir).as_posix() for p in vault_dir.rglob("*.md"))
        assert sorted(p for p in pages if not p.startswith(".lore/")) == [
            "Draft.md",
            "Elsewhere.md",
            "Hub.md",
            "done/Done.md",
        ]
        assert_matches_fresh(state)
